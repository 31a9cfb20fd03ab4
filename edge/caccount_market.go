package edge

import (
	"github.com/valyala/fasthttp"

	"github.com/weexcore/exchange/core"
	"github.com/weexcore/exchange/engine"
)

// Contract market data (docs/API.md, "Perpetual contracts: market data,
// account and admin"): depth, trades and klines are the spot endpoints'
// code on the contract's market id; the tickers, symbolPrice and
// openInterest read the contract markets in one in-shard query
// (core.Node.Contracts).

// contractArg resolves the required V3 contract symbol (marketArg).
func contractArg(s *Server, ctx *fasthttp.RequestCtx) (*engine.MarketSpec, *apiError) {
	k, e := s.argContract(ctx, true)
	if e != nil {
		return nil, e
	}
	return k.spec, nil
}

// argContract resolves the symbol parameter as a V3 contract name;
// required or optional (nil when absent).
func (s *Server) argContract(ctx *fasthttp.RequestCtx, required bool) (*contract, *apiError) {
	args := ctx.QueryArgs()
	if !args.Has("symbol") {
		if required {
			return nil, errSymbolMissing
		}
		return nil, nil
	}
	k := s.contractV3(args.Peek("symbol"))
	if k == nil {
		return nil, errSymbolInvalid
	}
	return k, nil
}

// markPrice is the mark price of a contract: the median of the best bid,
// the best ask and the last trade price; the last trade price alone when
// the book has an empty side; 0 before the first trade.
func markPrice(c *core.ContractState) engine.Price {
	last := c.Last
	if last == 0 || c.Bid.Qty == 0 || c.Ask.Qty == 0 {
		return last
	}
	a, b := c.Bid.Price, c.Ask.Price // bid < ask
	return max(a, min(b, last))
}

// contractStates reads every contract (k nil) or k, without open interest.
func (s *Server) contractStates(k *contract, openInterest bool) ([]core.ContractState, *apiError) {
	id := engine.AllContracts
	if k != nil {
		id = k.spec.ID
	}
	cs, _, _, err := s.node.Contracts(0, 0, id, openInterest, s.deadline(), nil, nil)
	if err != nil {
		return nil, s.queryErr(err)
	}
	return cs, nil
}

func handleContractDepth(s *Server, ctx *fasthttp.RequestCtx, st *reqState, c *cred) *apiError {
	return s.depth(ctx, st, contractArg)
}

func handleContractTrades(s *Server, ctx *fasthttp.RequestCtx, st *reqState, c *cred) *apiError {
	return s.marketTrades(ctx, st, contractArg)
}

func handleContractKlines(s *Server, ctx *fasthttp.RequestCtx, st *reqState, c *cred) *apiError {
	return s.klines(ctx, st, contractArg)
}

// contractTickers answers a contract ticker endpoint: one object per
// contract, written by one, in an array unless the request named a symbol.
func (s *Server) contractTickers(ctx *fasthttp.RequestCtx, st *reqState,
	one func(b []byte, k *contract, cs *core.ContractState) ([]byte, *apiError)) *apiError {
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
	b := st.buf
	if k == nil {
		b = append(b, '[')
	}
	for i := range cs {
		if i > 0 {
			b = append(b, ',')
		}
		if b, e = one(b, s.contractOf(cs[i].Market), &cs[i]); e != nil {
			return e
		}
	}
	if k == nil {
		b = append(b, ']')
	}
	st.buf = b
	return nil
}

func levels(l *engine.Level) []engine.Level {
	if l.Qty == 0 {
		return nil
	}
	return []engine.Level{*l}
}

// handleContractTicker24h: GET /capi/v3/market/ticker/24hr[?symbol=]: the
// spot ticker's fields plus markPrice.
func handleContractTicker24h(s *Server, ctx *fasthttp.RequestCtx, st *reqState, c *cred) *apiError {
	from := st.nowMs - 24*3600*1000
	return s.contractTickers(ctx, st, func(b []byte, k *contract, cs *core.ContractState) ([]byte, *apiError) {
		sp := k.spec
		w, err := s.store.Window(sp.ID, from, st.nowMs)
		if err != nil {
			return b, s.queryErr(err)
		}
		b = s.appendTicker24h(b, sp, sp.V3Symbol, levels(&cs.Bid), levels(&cs.Ask), cs.Last, &w, st.nowMs)
		b = append(b, `,"markPrice":"`...)
		b = sp.AppendPrice(b, markPrice(cs))
		return append(b, `"}`...), nil
	})
}

// handleContractBookTicker: GET /capi/v3/market/ticker/bookTicker[?symbol=].
func handleContractBookTicker(s *Server, ctx *fasthttp.RequestCtx, st *reqState, c *cred) *apiError {
	return s.contractTickers(ctx, st, func(b []byte, k *contract, cs *core.ContractState) ([]byte, *apiError) {
		b = append(b, `{"symbol":`...)
		b = appendStr(b, k.spec.V3Symbol)
		b = appendBest(b, k.spec, "bid", levels(&cs.Bid))
		b = appendBest(b, k.spec, "ask", levels(&cs.Ask))
		b = append(b, `,"time":`...)
		b = appendInt(b, st.nowMs)
		return append(b, '}'), nil
	})
}

// handleSymbolPrice: GET /capi/v3/market/symbolPrice?symbol=&priceType=
// (LAST, MARK or INDEX, default MARK): {"symbol","price","time"}.
func handleSymbolPrice(s *Server, ctx *fasthttp.RequestCtx, st *reqState, c *cred) *apiError {
	if e := checkArgs(ctx, "symbol", "priceType"); e != nil {
		return e
	}
	k, e := s.argContract(ctx, true)
	if e != nil {
		return e
	}
	kind := "MARK"
	if pt := ctx.QueryArgs(); pt.Has("priceType") {
		switch kind = string(pt.Peek("priceType")); kind {
		case "MARK", "LAST", "INDEX":
		default:
			return newErr(400, codeParam, "priceType must be LAST, MARK or INDEX")
		}
	}
	cs, e := s.contractStates(k, false)
	if e != nil {
		return e
	}
	p := cs[0].Last
	if kind != "LAST" { // the mark the funding timer samples and settles at (engine/funding.go)
		p = markPrice(&cs[0])
	}
	if kind == "INDEX" { // the spot index's mid, as the funding timer samples it
		if p, e = s.indexPrice(k, p); e != nil {
			return e
		}
	}
	b := append(st.buf, `{"symbol":`...)
	b = appendStr(b, k.spec.V3Symbol)
	b = append(b, `,"price":"`...)
	b = k.spec.AppendPrice(b, p)
	b = append(b, `","time":`...)
	b = appendInt(b, st.nowMs)
	st.buf = append(b, '}')
	return nil
}

// handleOpenInterest: GET /capi/v3/market/openInterest?symbol=: the sum of
// the LONG positions' sizes (equal to the SHORT ones'), in the base coin.
func handleOpenInterest(s *Server, ctx *fasthttp.RequestCtx, st *reqState, c *cred) *apiError {
	if e := checkArgs(ctx, "symbol"); e != nil {
		return e
	}
	k, e := s.argContract(ctx, true)
	if e != nil {
		return e
	}
	cs, e := s.contractStates(k, true)
	if e != nil {
		return e
	}
	b := append(st.buf, `{"symbol":`...)
	b = appendStr(b, k.spec.V3Symbol)
	b = append(b, `,"openInterest":"`...)
	b = k.spec.AppendQty(b, cs[0].OpenInterest)
	b = append(b, `","time":`...)
	b = appendInt(b, st.nowMs)
	st.buf = append(b, '}')
	return nil
}
