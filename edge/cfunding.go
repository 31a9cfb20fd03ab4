package edge

import (
	"github.com/valyala/fasthttp"

	"github.com/weexcore/exchange/engine"
)

// Funding (docs/API.md, "Perpetual contracts: funding"): premiumIndex and
// the fundingRate history. The rates are settled below the edge
// (engine/funding.go, core/funding.go): each settlement is a history row
// (journal FundingRecords), the current interval's premium samples live in
// the runtime (core.Node.Premium). Rates print with 8 decimals (RateOne
// units), prices with the contract's tick.

// fundingRow returns contract k's newest funding settlement at or before
// nowMs (ok false: none yet).
func (s *Server) fundingRow(k *contract, nowMs int64) (rec engine.FundingRecord, ok bool, e *apiError) {
	err := s.store.FundingRecords(k.spec.ID, 0, nowMs, func(r *engine.FundingRecord) bool {
		rec, ok = *r, true
		return false
	})
	if err != nil {
		return rec, false, s.queryErr(err)
	}
	return rec, ok, nil
}

// indexPrice returns contract k's index price now: the mid of its spot
// index market's best bid and ask (its last price with a one-sided book),
// in the contract's ticks, rounded down; mark when there is none (the
// rule the funding timer samples by, core/funding.go).
func (s *Server) indexPrice(k *contract, mark engine.Price) (engine.Price, *apiError) {
	sm := s.bySymbol[k.spec.IndexSymbol]
	if sm == nil {
		return mark, nil
	}
	b, err := s.node.Depth(sm.spec.ID, 1, s.deadline(), nil, nil)
	if err != nil {
		return 0, s.queryErr(err)
	}
	mid := b.Last
	if len(b.Bids) > 0 && len(b.Asks) > 0 {
		mid = (b.Bids[0].Price + b.Asks[0].Price) / 2
	}
	if p := engine.ConvertPrice(mid, sm.spec, k.spec); p > 0 {
		return p, nil
	}
	return mark, nil
}

func appendRate(b []byte, r int64) []byte { return engine.AppendFixed(b, r, engine.RateDecimals) }

// handlePremiumIndex: GET /capi/v3/market/premiumIndex[?symbol=]: always
// an array (ccxt's fetchFundingRates iterates it), one record per contract
// or the one named: markPrice and indexPrice now, lastFundingRate and
// lastFundingTime of the newest settlement, forecastFundingRate (the rate
// the current interval's samples would settle at now), premium and
// premiumSamples (their average and count), interestRate,
// nextFundingTime (the next boundary after the exchange's clock),
// collectCycle (the interval in minutes), time (the exchange's clock).
func handlePremiumIndex(s *Server, ctx *fasthttp.RequestCtx, st *reqState, c *cred) *apiError {
	if e := checkArgs(ctx, "symbol"); e != nil {
		return e
	}
	k, e := s.argContract(ctx, false)
	if e != nil {
		return e
	}
	cs, e := s.contractStates(k, false)
	if e != nil {
		return e
	}
	now := s.node.Now()
	b := append(st.buf, '[')
	for i := range cs {
		k := s.contractOf(cs[i].Market)
		sp := k.spec
		mark := markPrice(&cs[i])
		index, e := s.indexPrice(k, mark)
		if e != nil {
			return e
		}
		last, _, e := s.fundingRow(k, now)
		if e != nil {
			return e
		}
		avg, samples, _, _, _ := s.node.Premium(sp.ID)
		interval := int64(sp.FundingHours) * 3_600_000
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"symbol":`...)
		b = appendStr(b, sp.V3Symbol)
		b = append(b, `,"markPrice":"`...)
		b = sp.AppendPrice(b, mark)
		b = append(b, `","indexPrice":"`...)
		b = sp.AppendPrice(b, index)
		b = append(b, `","estimatedSettlePrice":"`...)
		b = sp.AppendPrice(b, mark)
		b = append(b, `","premium":"`...)
		b = appendRate(b, avg)
		b = append(b, `","premiumSamples":`...)
		b = appendInt(b, samples)
		b = append(b, `,"forecastFundingRate":"`...)
		b = appendRate(b, engine.FundingRate(sp, avg))
		b = append(b, `","lastFundingRate":"`...)
		b = appendRate(b, last.Rate)
		b = append(b, `","lastFundingTime":`...)
		b = appendInt(b, last.TimeMs)
		b = append(b, `,"interestRate":"`...)
		b = appendRate(b, sp.InterestRate)
		b = append(b, `","maxFundingRate":"`...)
		b = appendRate(b, sp.MaxFundingRate)
		b = append(b, `","nextFundingTime":`...)
		b = appendInt(b, (now/interval+1)*interval)
		b = append(b, `,"time":`...)
		b = appendInt(b, now)
		b = append(b, `,"collectCycle":`...)
		b = appendInt(b, interval/60_000)
		b = append(b, '}')
	}
	st.buf = append(b, ']')
	return nil
}

// handleFundingRate: GET /capi/v3/market/fundingRate?symbol=&startTime=
// &endTime=&limit=: the contract's settlements with fundingTime in
// [startTime, endTime] (default: all), newest first, at most limit (1 to
// 1000, default 100): symbol, fundingRate, fundingTime, markPrice (the
// price the payments were valued at), indexPrice (the last index sampled).
func handleFundingRate(s *Server, ctx *fasthttp.RequestCtx, st *reqState, c *cred) *apiError {
	if e := checkArgs(ctx, "symbol", "startTime", "endTime", "limit"); e != nil {
		return e
	}
	k, e := s.argContract(ctx, true)
	if e != nil {
		return e
	}
	from, to, e := timeRange(ctx)
	if e != nil {
		return e
	}
	limit, e := argIntIn(ctx, "limit", 100, 1, 1000)
	if e != nil {
		return e
	}
	sp := k.spec
	b := append(st.buf, '[')
	n := int64(0)
	err := s.store.FundingRecords(sp.ID, from, min(to, maxTimeMs), func(r *engine.FundingRecord) bool {
		if n > 0 {
			b = append(b, ',')
		}
		n++
		b = append(b, `{"symbol":`...)
		b = appendStr(b, sp.V3Symbol)
		b = append(b, `,"fundingRate":"`...)
		b = appendRate(b, r.Rate)
		b = append(b, `","fundingTime":`...)
		b = appendInt(b, r.TimeMs)
		b = append(b, `,"markPrice":"`...)
		b = sp.AppendPrice(b, r.Mark)
		b = append(b, `","indexPrice":"`...)
		b = sp.AppendPrice(b, r.Index)
		b = append(b, `"}`...)
		return n < limit
	})
	if err != nil {
		return s.queryErr(err)
	}
	st.buf = append(b, ']')
	return nil
}
