package edge

import (
	"fmt"

	"github.com/valyala/fasthttp"

	"github.com/weexcore/exchange/engine"
	"github.com/weexcore/exchange/journal"
)

// Finance records: POST /api/v3/tax/income (query.go), and ccxt's
// fetchLedger endpoints POST /api/v3/account/bills and
// /api/v3/account/fundingBills, which read the same records with WEEX's
// other parameters.

// bodyField is one optional field of a small JSON body: a string, or an
// integer given as a number or a numeric string.
type bodyField struct {
	name  string
	isInt bool
}

const maxBodyFields = 8

// bodyArgs are the fields of a body as decode found them, by their index
// in the field list.
type bodyArgs struct {
	has [maxBodyFields]bool
	str [maxBodyFields][]byte
	num [maxBodyFields]int64
}

func (a *bodyArgs) intOr(i int, def int64) int64 {
	if a.has[i] {
		return a.num[i]
	}
	return def
}

// decode reads body (empty: {}) with d: every key must be one of fields
// (a null value counts as absent); the first problem is the answer.
func (a *bodyArgs) decode(d *scanner, body []byte, fields []bodyField) *apiError {
	if len(body) == 0 {
		body = []byte("{}")
	}
	d.reset(body)
	var bad *apiError
	if d.objectStart() {
		for d.nextKey() {
			key := d.key
			if d.kind() == 'z' {
				d.literal()
				continue
			}
			i := -1
			for j := range fields {
				if fields[j].name == string(key) {
					i = j
				}
			}
			switch {
			case i < 0:
				if bad == nil {
					bad = newErr(400, codeParam, fmt.Sprintf("unknown parameter %q", key))
				}
				d.skip()
			case !fields[i].isInt:
				if d.kind() != 's' {
					if bad == nil {
						bad = newErr(400, codeParam, fmt.Sprintf("parameter %s must be a string", key))
					}
					d.skip()
					continue
				}
				a.str[i], _ = d.str()
				a.has[i] = true
			default:
				var raw []byte
				switch d.kind() {
				case 'n':
					raw, _ = d.number()
				case 's':
					raw, _ = d.str()
				default:
					d.skip()
				}
				v, ok := parseInt(raw)
				if !ok && bad == nil {
					bad = newErr(400, codeParam, fmt.Sprintf("parameter %s must be a non-negative integer", key))
				}
				a.num[i], a.has[i] = v, true
			}
		}
	}
	if !d.end() {
		return errJSON
	}
	return bad
}

var (
	incomeFields = []bodyField{{"coin", false}, {"bizType", false}, {"month", false}, {"limit", true}, {"page", true}}
	billsFields  = []bodyField{{"coinId", true}, {"bizType", false}, {"after", true}, {"before", true}, {"limit", true}}
	fundFields   = []bodyField{{"coinId", true}, {"bizType", false}, {"startTime", true}, {"endTime", true},
		{"pageIndex", true}, {"pageSize", true}}
)

// fundingBiz are the bill types of the funding records: money in and out
// of the exchange and between wallets, no trades.
var fundingBiz = journal.Biz(engine.BizDeposit, engine.BizWithdraw, engine.BizTransferIn, engine.BizTransferOut)

const maxFundingRangeMs = 90 * 86_400_000

// coinByID resolves a coinId filter (the coin's public id) to its index;
// absent: every coin.
func (s *Server) coinByID(a *bodyArgs, i int) (int, *apiError) {
	if !a.has[i] {
		return journal.CoinAll, nil
	}
	for j := range s.coins {
		if s.coins[j].ExternalID == a.num[i] {
			return j, nil
		}
	}
	return 0, newErr(400, codeParam, "unknown coinId")
}

// handleBills: POST /api/v3/account/bills {coinId, bizType, after, before,
// limit}: after and before are Unix ms, both included; newest first.
func handleBills(s *Server, ctx *fasthttp.RequestCtx, st *reqState, c *cred) *apiError {
	var a bodyArgs
	if e := a.decode(&st.sc, ctx.Request.Body(), billsFields); e != nil {
		return e
	}
	coin, e := s.coinByID(&a, 0)
	if e != nil {
		return e
	}
	var biz engine.BizType
	if a.has[1] {
		if biz = engine.ParseBizType(a.str[1]); biz == 0 {
			return newErr(400, codeParam, "unknown bizType")
		}
	}
	from, to := a.intOr(2, 0), a.intOr(3, maxTimeMs)
	if from > to {
		return newErr(400, codeStartAfterEnd, "after cannot be greater than before")
	}
	limit := a.intOr(4, 10)
	if limit < 1 || limit > 100 {
		return limitErr("limit", 1, 100)
	}
	bills, err := s.store.Bills(c.uid, coin, journal.Biz(biz), from, min(to, maxTimeMs-1)+1, 0, int(limit), st.bills[:0])
	st.bills = bills
	if err != nil {
		return s.queryErr(err)
	}
	st.buf = append(s.appendBills(append(st.buf, '['), bills), ']')
	return nil
}

// handleFundingBills: POST /api/v3/account/fundingBills {coinId, bizType,
// startTime, endTime, pageIndex, pageSize}: deposits, withdrawals and
// transfers, at most 90 days (default: the last 90), newest first, paged.
func handleFundingBills(s *Server, ctx *fasthttp.RequestCtx, st *reqState, c *cred) *apiError {
	var a bodyArgs
	if e := a.decode(&st.sc, ctx.Request.Body(), fundFields); e != nil {
		return e
	}
	coin, e := s.coinByID(&a, 0)
	if e != nil {
		return e
	}
	biz := fundingBiz
	if a.has[1] {
		b := engine.ParseBizType(a.str[1])
		if journal.Biz(b)&fundingBiz == 0 {
			return newErr(400, codeParam, "bizType must be deposit, withdraw, transfer_in or transfer_out")
		}
		biz = journal.Biz(b)
	}
	to := min(a.intOr(3, st.nowMs), maxTimeMs-1)
	from := a.intOr(2, max(0, to-maxFundingRangeMs))
	if from > to {
		return errStartAfterEnd
	}
	if to-from > maxFundingRangeMs {
		return newErr(400, codeRangeTooLarge, "the range from startTime to endTime is at most 90 days")
	}
	page, size := a.intOr(4, 1), a.intOr(5, 10)
	if page < 1 || page > 1_000_000 {
		return limitErr("pageIndex", 1, 1_000_000)
	}
	if size < 1 || size > 100 {
		return limitErr("pageSize", 1, 100)
	}
	// Every record of the range, for the total: funding records are few.
	bills, err := s.store.Bills(c.uid, coin, biz, from, to+1, 0, 1<<30, st.bills[:0])
	st.bills = bills
	if err != nil {
		return s.queryErr(err)
	}
	total := int64(len(bills))
	lo, hi := min((page-1)*size, total), min(page*size, total)
	b := append(st.buf, `{"total":`...)
	b = appendInt(b, total)
	b = append(b, `,"pageSize":`...)
	b = appendInt(b, size)
	b = append(b, `,"pages":`...)
	b = appendInt(b, (total+size-1)/size)
	b = append(b, `,"page":`...)
	b = appendInt(b, page)
	b = append(b, `,"hasNextPage":`...)
	b = appendBool(b, hi < total)
	b = append(b, `,"items":[`...)
	b = s.appendBills(b, bills[lo:hi])
	st.buf = append(b, "]}"...)
	return nil
}

// maxTimeMs bounds the times of a query (year 9999).
const maxTimeMs = 253_402_300_799_999

// appendBills appends bills as finance records, comma-separated.
func (s *Server) appendBills(b []byte, bills []engine.Bill) []byte {
	for i := range bills {
		bl := &bills[i]
		if i > 0 {
			b = append(b, ',')
		}
		co := &s.coins[bl.Coin.Spot()]
		b = append(b, `{"billId":"`...)
		b = appendInt(b, int64(bl.BillID))
		b = append(b, `","coinId":`...)
		b = appendInt(b, co.ExternalID)
		b = append(b, `,"coinName":`...)
		b = appendStr(b, co.Name)
		b = append(b, `,"bizType":`...)
		b = appendStr(b, bl.Biz.String())
		b = append(b, `,"fillSize":"`...)
		if bl.FillQty != 0 && int(bl.Market) < len(s.markets) {
			mk := s.markets[bl.Market].spec
			b = mk.AppendQty(b, bl.FillQty)
			b = append(b, `","fillValue":"`...)
			b = appendAmount(b, &s.coins[mk.Quote], bl.FillQuote)
		} else {
			b = append(b, `0","fillValue":"0`...)
		}
		b = append(b, `","deltaAmount":"`...)
		b = appendAmount(b, co, bl.Delta)
		b = append(b, `","afterAmount":"`...)
		b = appendAmount(b, co, bl.After)
		b = append(b, `","fees":"`...)
		b = appendAmount(b, co, bl.Fee)
		b = append(b, `","cTime":"`...)
		b = appendInt(b, bl.TimeMs)
		b = append(b, `"}`...)
	}
	return b
}
