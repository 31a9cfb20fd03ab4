package edge

import (
	"strconv"

	"github.com/valyala/fasthttp"

	"github.com/weexcore/exchange/engine"
	"github.com/weexcore/exchange/journal"
)

// handleTransferRecords: GET /api/v3/account/transferRecords?after=&before=&limit=
// (ccxt's fetchTransfers): the caller's transfers between its spot and
// futures wallets, newest first, one record per transfer (read from its
// transfer_in bill: the wallet it went to). after and before are Unix ms,
// both included; limit 1..100, default 10.
func handleTransferRecords(s *Server, ctx *fasthttp.RequestCtx, st *reqState, c *cred) *apiError {
	if e := checkArgs(ctx, "after", "before", "limit"); e != nil {
		return e
	}
	from, e := argInt(ctx, "after", 0)
	if e != nil {
		return e
	}
	to, e := argInt(ctx, "before", maxTimeMs)
	if e != nil {
		return e
	}
	to = min(to, maxTimeMs-1)
	if from > to {
		return newErr(400, codeStartAfterEnd, "after cannot be greater than before")
	}
	limit, e := argIntIn(ctx, "limit", 10, 1, 100)
	if e != nil {
		return e
	}
	// Both wallets' transfer_in bills, merged newest first.
	in := journal.Biz(engine.BizTransferIn)
	spot, err := s.store.Bills(c.uid, journal.CoinAll, in, from, to+1, 0, int(limit), nil)
	if err != nil {
		return s.queryErr(err)
	}
	fut, err := s.store.Bills(c.uid, journal.CoinAllFutures, in, from, to+1, 0, int(limit), nil)
	if err != nil {
		return s.queryErr(err)
	}
	b := append(st.buf, '[')
	for n := 0; n < int(limit) && len(spot)+len(fut) > 0; n++ {
		var bl *engine.Bill
		if len(fut) == 0 || len(spot) > 0 && (spot[0].TimeMs > fut[0].TimeMs ||
			spot[0].TimeMs == fut[0].TimeMs && spot[0].BillID > fut[0].BillID) {
			bl, spot = &spot[0], spot[1:]
		} else {
			bl, fut = &fut[0], fut[1:]
		}
		if n > 0 {
			b = append(b, ',')
		}
		fromType, toType := "contract", "spot"
		if bl.Coin.IsFutures() {
			fromType, toType = "spot", "contract"
		}
		co := &s.coins[bl.Coin.Spot()]
		b = append(b, `{"billId":"`...)
		b = strconv.AppendUint(b, bl.BillID, 10)
		b = append(b, `","coinName":`...)
		b = appendStr(b, co.Name)
		b = append(b, `,"status":"Successful","fromType":"`...)
		b = append(b, fromType...)
		b = append(b, `","fromSymbol":"","toType":"`...)
		b = append(b, toType...)
		b = append(b, `","toSymbol":"","amount":"`...)
		b = appendAmount(b, co, bl.Delta)
		b = append(b, `","tradeTime":"`...)
		b = appendInt(b, bl.TimeMs)
		b = append(b, `"}`...)
	}
	st.buf = append(b, ']')
	return nil
}
