package edge

import (
	"errors"
	"fmt"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/weexcore/exchange/core"
	"github.com/weexcore/exchange/engine"
	"github.com/weexcore/exchange/journal"
)

// Broker rebates (docs/API.md, "Broker rebates"): the brokers' records,
// their settlement by an operator, and the demo clock that lets a demo
// end a day.

var (
	errNotBroker      = newErr(403, codeNoPermission, "no permission: only broker accounts may query rebate records")
	errRebateRange    = newErr(400, codeRangeTooLarge, "the queried range is at most 90 days")
	errRebateStartEnd = newErr(400, codeStartAfterEnd, "startTime must be earlier than or equal to endTime")
)

const (
	maxRebateDays   = 90
	maxRebatePage   = 100
	dateLayout      = "2006-01-02"
	dateTimeLayout  = "2006-01-02 15:04:05"
	productSpotName = "SPOT"
	productFutName  = "FUTURES"
)

// argDate reads an optional yyyy-MM-dd query parameter as a UTC day.
func argDate(ctx *fasthttp.RequestCtx, name string) (day int32, ok bool, e *apiError) {
	args := ctx.QueryArgs()
	if !args.Has(name) {
		return 0, false, nil
	}
	d, err := parseDay(args.Peek(name))
	if err != nil {
		return 0, false, newErr(400, codeParam, "parameter "+name+" must be a date yyyy-MM-dd")
	}
	return d, true, nil
}

// parseDay parses yyyy-MM-dd (exactly) into days since 1970-01-01.
func parseDay(b []byte) (int32, error) {
	t, err := time.Parse(dateLayout, string(b))
	if err != nil || len(b) != len(dateLayout) || t.Unix() < 0 {
		return 0, errors.New("not a date")
	}
	return journal.DayOf(t.UnixMilli()), nil
}

func dayTime(day int32) time.Time { return time.UnixMilli(int64(day) * 86_400_000).UTC() }

// handleRebateRecords: GET /api/v3/apiReferral/rebate/recentRecord
// ?symbol=&productType=&coin=&page=&pageSize=&startTime=&endTime=.
func handleRebateRecords(s *Server, ctx *fasthttp.RequestCtx, st *reqState, c *cred) *apiError {
	if e := checkArgs(ctx, "symbol", "productType", "coin", "page", "pageSize", "startTime", "endTime"); e != nil {
		return e
	}
	if broker, _ := s.node.Accounts().Broker(c.user); !broker {
		return errNotBroker
	}
	product := journal.ProductSpot
	if args := ctx.QueryArgs(); args.Has("productType") {
		switch string(args.Peek("productType")) {
		case productSpotName:
		case productFutName:
			product = journal.ProductFutures
		default:
			return newErr(400, codeParam, "productType must be SPOT or FUTURES")
		}
	}
	// the symbol names a spot market, or with productType FUTURES a
	// contract (its V3 name)
	var symbolID engine.MarketID
	hasSymbol := false
	if product == journal.ProductFutures {
		if sym := ctx.QueryArgs().Peek("symbol"); len(sym) > 0 {
			k := s.contractV3(sym)
			if k == nil {
				return errSymbolInvalid
			}
			symbolID, hasSymbol = k.spec.ID, true
		}
	} else {
		m, e := s.argSymbol(ctx, false)
		if e != nil {
			return e
		}
		if m != nil {
			symbolID, hasSymbol = m.spec.ID, true
		}
	}
	coin := -1
	if args := ctx.QueryArgs(); args.Has("coin") {
		name := args.Peek("coin")
		for i := range s.coins {
			if s.coins[i].Name == string(name) {
				coin = i
			}
		}
		if coin < 0 {
			return newErr(400, codeParam, "unknown coin")
		}
	}
	page, e := argIntIn(ctx, "page", 1, 1, 1_000_000)
	if e != nil {
		return e
	}
	size, e := argIntIn(ctx, "pageSize", maxRebatePage, 1, maxRebatePage)
	if e != nil {
		return e
	}
	end, hasEnd, e := argDate(ctx, "endTime")
	if e != nil {
		return e
	}
	if !hasEnd {
		end = journal.DayOf(s.node.Now())
	}
	start, hasStart, e := argDate(ctx, "startTime")
	if e != nil {
		return e
	}
	if !hasStart { // one month back, the end day included
		start = journal.DayOf(dayTime(end).AddDate(0, -1, 1).UnixMilli())
	}
	if start > end {
		return errRebateStartEnd
	}
	if end-start+1 > maxRebateDays {
		return errRebateRange
	}

	var total int64
	skip := (page - 1) * size
	b := st.buf
	var body []byte
	err := s.store.RebateRecords(c.uid, start, end, func(r *journal.RebateRecord) bool {
		if r.Product != product || hasSymbol && r.Market != symbolID || coin >= 0 && int(r.Coin) != coin {
			return true
		}
		total++
		if total > skip && total <= skip+size {
			if len(body) > 0 {
				body = append(body, ',')
			}
			body = s.appendRebate(body, r)
		}
		return true
	})
	if err != nil {
		return s.queryErr(err)
	}
	b = append(b, `{"current":`...)
	b = appendInt(b, page)
	b = append(b, `,"pages":`...)
	b = appendInt(b, (total+size-1)/size)
	b = append(b, `,"size":`...)
	b = appendInt(b, size)
	b = append(b, `,"total":`...)
	b = appendInt(b, total)
	b = append(b, `,"records":[`...)
	b = append(b, body...)
	st.buf = append(b, "]}"...)
	return nil
}

// appendRebate appends r as the seed's rebate record (2.12).
func (s *Server) appendRebate(b []byte, r *journal.RebateRecord) []byte {
	symbol := fmt.Sprintf("market%d", r.Market)
	if int(r.Market) < len(s.markets) {
		symbol = s.markets[r.Market].spec.Symbol
	} else if k := s.contractOf(r.Market); k != nil {
		symbol = k.spec.V3Symbol
	}
	co := &s.coins[r.Coin]
	b = append(b, `{"symbol":`...)
	b = appendStr(b, symbol)
	b = append(b, `,"dealAmount":"`...)
	b = appendAmount(b, co, r.Deal)
	b = append(b, `","fee":"`...)
	b = appendAmount(b, co, r.Fee)
	b = append(b, `","feeDeduction":"0","rebateRate":"`...)
	b = engine.AppendFixed(b, r.Rate, engine.RateDecimals)
	b = append(b, `","commissionAsset":`...)
	b = appendStr(b, co.Name)
	b = append(b, `,"commission":"`...)
	b = appendAmount(b, co, r.Commission)
	b = append(b, `","totalRebateUsdtAmount":"`...)
	if u := s.usdt(); u != nil {
		b = appendAmount(b, u, r.USDT)
	} else {
		b = append(b, '0')
	}
	d := dayTime(r.Day)
	b = append(b, `","settleStartTime":"`...)
	b = d.AppendFormat(b, dateTimeLayout)
	b = append(b, `","settleEndTime":"`...)
	b = d.Add(24*time.Hour-time.Second).AppendFormat(b, dateTimeLayout)
	b = append(b, `","updateTime":"`...)
	b = time.UnixMilli(r.SettledMs).UTC().AppendFormat(b, dateTimeLayout)
	return append(b, `"}`...)
}

// usdt returns the USDT coin, nil when the exchange has none.
func (s *Server) usdt() *engine.Coin {
	for i := range s.coins {
		if s.coins[i].Name == "USDT" {
			return &s.coins[i]
		}
	}
	return nil
}

// handleAdminSettle: POST /admin/v1/rebate/settle {"date":"yyyy-MM-dd"}
// settles the day's rebates (again: nothing more is paid).
func handleAdminSettle(s *Server, ctx *fasthttp.RequestCtx, st *reqState, _ *cred) *apiError {
	var in struct {
		Date string `json:"date"`
	}
	if e := decodeStrict(ctx.Request.Body(), &in); e != nil {
		return e
	}
	day, err := parseDay([]byte(in.Date))
	if err != nil {
		return newErr(400, codeParam, "date must be yyyy-MM-dd")
	}
	res, err := s.node.SettleRebates(day, day, time.Now().Add(30*time.Second))
	if errors.Is(err, core.ErrDayNotEnded) {
		return newErr(400, codeParam, "the day has not ended on the exchange's clock: it cannot be settled yet")
	}
	if err != nil && res.Refused == 0 {
		return s.queryErr(err)
	}
	b := append(st.buf, `{"date":`...)
	b = appendStr(b, in.Date)
	b = append(b, `,"paid":`...)
	b = appendInt(b, int64(res.Paid))
	b = append(b, `,"settledBefore":`...)
	b = appendInt(b, int64(res.Before))
	b = append(b, `,"refused":`...)
	b = appendInt(b, int64(res.Refused))
	if err != nil {
		b = append(b, `,"error":`...)
		b = appendStr(b, err.Error())
	}
	st.buf = append(b, '}')
	return nil
}

// handleAdminClock: POST /admin/v1/clock {"nowMs": N} (with -dev-clock
// only) moves the exchange's clock forward to N.
func handleAdminClock(s *Server, ctx *fasthttp.RequestCtx, st *reqState, _ *cred) *apiError {
	var in struct {
		NowMs *int64 `json:"nowMs"`
	}
	if e := decodeStrict(ctx.Request.Body(), &in); e != nil {
		return e
	}
	if in.NowMs == nil {
		return newErr(400, codeParamMissing, "nowMs is required")
	}
	if *in.NowMs < s.node.Now() || s.clock.Set(*in.NowMs) != nil {
		return newErr(400, codeParam, "nowMs is before the exchange's clock: it only moves forward")
	}
	b := append(st.buf, `{"nowMs":`...)
	b = appendInt(b, s.node.Now())
	st.buf = append(b, '}')
	return nil
}
