package edge

import (
	"bytes"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/valyala/fasthttp"

	"github.com/weexcore/exchange/config"
	"github.com/weexcore/exchange/core"
	"github.com/weexcore/exchange/engine"
)

// The admin API (docs/API.md, "Admin API") is not a hot path: it decodes with goccy/go-json
// through config.Decode.

// adminEndpoints is the admin API and the operators' endpoints.
func adminEndpoints(devClock bool) []*endpoint {
	a := func(method, path string, h handler) *endpoint { return &endpoint{method: method, path: path, h: h} }
	metrics := &endpoint{method: "GET", path: "/metrics", h: handleMetrics, beforeStart: true,
		contentType: string(expfmt.FmtText)}
	healthz := &endpoint{method: "GET", path: "/healthz", h: handleHealthz, noToken: true, beforeStart: true}
	readyz := &endpoint{method: "GET", path: "/readyz", h: handleReadyz, noToken: true, beforeStart: true}
	eps := []*endpoint{
		a("POST", "/admin/v1/users", handleAdminUser),
		a("POST", "/admin/v1/deposit", handleAdminDeposit),
		a("POST", "/admin/v1/withdraw", handleAdminWithdraw),
		a("GET", "/admin/v1/balances", handleAdminBalances),
		a("POST", "/admin/v1/transfer", handleAdminTransfer),
		a("GET", "/admin/v1/positions", handleAdminPositions),
		a("GET", "/admin/v1/state", handleAdminState),
		a("POST", "/admin/v1/rebate/settle", handleAdminSettle),
		metrics, healthz, readyz,
	}
	if devClock { // else the path is unknown: 404
		eps = append(eps, a("POST", "/admin/v1/clock", handleAdminClock))
	}
	return eps
}

// serveAdmin serves one admin request: the router calls serveAdminEndpoint.
func (s *Server) serveAdmin(ctx *fasthttp.RequestCtx) {
	if e := ambiguous(&ctx.Request.Header); e != nil {
		refuse(ctx, e)
		return
	}
	s.adminRouter.Handler(ctx)
}

func (s *Server) serveAdminEndpoint(ctx *fasthttp.RequestCtx, ep *endpoint) {
	st := statePool.Get().(*reqState)
	st.nowMs = time.Now().UnixMilli()
	defer s.end(ctx, st)
	e := func() *apiError {
		if !ep.noToken && !s.adminAuth(&ctx.Request.Header) {
			return errAdminToken
		}
		if len(ctx.Request.Body()) > MaxBodyBytes {
			return errBodyTooLarge
		}
		if ep.fail != nil {
			return ep.fail
		}
		if !ep.beforeStart && !s.ready.Load() {
			return errNotReady
		}
		if ctx.IsPost() && !isJSON(ctx.Request.Header.ContentType()) {
			return errContentType
		}
		st.buf = st.buf[:0]
		return ep.h(s, ctx, st, nil)
	}()
	if e != nil {
		if e == errNotLeader {
			s.leaderHeader(ctx)
		}
		st.buf = writeError(ctx, st.buf, e)
		return
	}
	if ep.contentType != "" {
		ctx.Response.Header.SetContentType(ep.contentType)
	} else {
		ctx.Response.Header.SetContentType("application/json")
	}
	ctx.SetBody(st.buf)
}

// adminAuth reports whether h carries the admin token, as X-Admin-Token
// or as Authorization: Bearer (what a Prometheus scrape sends); compared
// in constant time.
func (s *Server) adminAuth(h *fasthttp.RequestHeader) bool {
	if subtle.ConstantTimeCompare(h.Peek("X-Admin-Token"), s.adminToken) == 1 {
		return true
	}
	tok, ok := bytes.CutPrefix(h.Peek(fasthttp.HeaderAuthorization), []byte("Bearer "))
	return ok && subtle.ConstantTimeCompare(tok, s.adminToken) == 1
}

// decodeStrict decodes an admin body as the config is decoded
// (config.Decode): unknown fields are refused by the decoder, and the
// answer names the field.
func decodeStrict(body []byte, v any) *apiError {
	if err := config.Decode(body, v); err != nil {
		return newErr(400, codeJSON, "invalid request body: "+err.Error())
	}
	return nil
}

func handleAdminUser(s *Server, ctx *fasthttp.RequestCtx, st *reqState, _ *cred) *apiError {
	var in struct {
		UID         *int64 `json:"uid"`
		Broker      bool   `json:"broker"`
		ReferrerUID int64  `json:"referrerUid"`
		RebateRate  string `json:"rebateRate"`
	}
	body := ctx.Request.Body()
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	}
	if e := decodeStrict(body, &in); e != nil {
		return e
	}
	if in.UID != nil && *in.UID <= 0 {
		return newErr(400, codeParam, "uid must be positive")
	}
	if in.ReferrerUID < 0 {
		return newErr(400, codeParam, "referrerUid must not be negative")
	}
	rate, err := config.ParseRebateRate(in.RebateRate)
	if err != nil {
		return newErr(400, codeParam, "rebateRate: "+err.Error())
	}
	if rate != 0 && !in.Broker {
		return newErr(400, codeParam, "rebateRate: only a broker has one")
	}
	for attempt := 0; attempt < 16; attempt++ {
		var uid int64
		if in.UID == nil {
			// taken, not read: concurrent registrations each get their own
			// (one that is then rejected leaves a gap in the uids)
			uid = s.maxUID.Add(1)
		} else {
			uid = *in.UID
		}
		var seed [seedLen]byte
		rand.Read(seed[:])
		r := core.AcquireRequest()
		r.Cmd = engine.Cmd{Kind: engine.CmdAddUser, UID: uid, Broker: in.Broker, Referrer: in.ReferrerUID, Amount: engine.Amount(rate), User: noUser}
		r.Cmd.Text.Set(seed[:])
		if e := s.run(r); e != nil {
			return e
		}
		rej := r.Out.Reject
		core.ReleaseRequest(r)
		if rej == engine.RejectUserExists && in.UID == nil {
			continue // raced with another registration: take the next uid
		}
		if rej != engine.OK {
			return rejectErr(rej)
		}
		key, secret, pass := deriveCreds(seed[:])
		st.buf = fmt.Appendf(st.buf, `{"uid":%d,"apiKey":%q,"secretKey":%q,"passphrase":%q}`, uid, key, secret, pass)
		return nil
	}
	return errBusy
}

// moneyIn is the body of deposit, withdraw and transfer: Wallet (deposit
// and withdraw: "spot", the default, or "futures"), From and To (transfer)
// name wallets.
type moneyIn struct {
	UID    int64  `json:"uid"`
	Coin   string `json:"coin"`
	Amount string `json:"amount"`
	Wallet string `json:"wallet"`
	From   string `json:"from"`
	To     string `json:"to"`
}

// wallet maps a wallet name to its CoinID mark: "spot" 0, "futures"
// engine.Futures; def is the answer for "".
func wallet(name, field string, def engine.CoinID) (engine.CoinID, *apiError) {
	switch name {
	case "":
		if def == ^engine.CoinID(0) {
			return 0, newErr(400, codeParamMissing, field+" is required: spot or futures")
		}
		return def, nil
	case "spot":
		return 0, nil
	case "futures":
		return engine.Futures, nil
	}
	return 0, newErr(400, codeParam, field+" must be spot or futures")
}

func (s *Server) moneyCmd(ctx *fasthttp.RequestCtx, kind engine.CmdKind) (*core.Request, *apiError) {
	var in moneyIn
	if e := decodeStrict(ctx.Request.Body(), &in); e != nil {
		return nil, e
	}
	idx, ok := s.node.Accounts().Lookup(in.UID)
	if !ok {
		return nil, newErr(400, codeParam, "unknown uid")
	}
	ci := -1
	for i := range s.coins {
		if s.coins[i].Name == in.Coin {
			ci = i
		}
	}
	if ci < 0 {
		return nil, newErr(400, codeParam, "unknown coin")
	}
	var w engine.CoinID
	if kind == engine.CmdTransfer {
		if in.Wallet != "" {
			return nil, newErr(400, codeParam, "wallet: a transfer names its wallets with from and to")
		}
		from, e := wallet(in.From, "from", ^engine.CoinID(0))
		if e != nil {
			return nil, e
		}
		if w, e = wallet(in.To, "to", ^engine.CoinID(0)); e != nil {
			return nil, e
		}
		if from == w {
			return nil, newErr(400, codeParam, "from and to must be different wallets")
		}
	} else {
		if in.From != "" || in.To != "" {
			return nil, newErr(400, codeParam, "from and to are a transfer's: a deposit or withdrawal takes wallet")
		}
		var e *apiError
		if w, e = wallet(in.Wallet, "wallet", 0); e != nil {
			return nil, e
		}
	}
	v, err := engine.ParseFixed([]byte(in.Amount), s.coins[ci].Scale)
	if err != nil || v <= 0 {
		return nil, newErr(400, codeParam, fmt.Sprintf("amount must be a positive decimal with at most %d decimals", s.coins[ci].Scale))
	}
	r := core.AcquireRequest()
	// a transfer's Coin is the wallet the money goes to
	r.Cmd = engine.Cmd{Kind: kind, User: idx, UID: in.UID, Coin: engine.CoinID(ci) | w, Amount: engine.Amount(v)}
	if e := s.run(r); e != nil {
		return nil, e
	}
	return r, nil
}

func handleAdminMoney(s *Server, ctx *fasthttp.RequestCtx, st *reqState, kind engine.CmdKind) *apiError {
	r, e := s.moneyCmd(ctx, kind)
	if e != nil {
		return e
	}
	defer core.ReleaseRequest(r)
	if r.Out.Reject != engine.OK {
		return rejectErr(r.Out.Reject)
	}
	st.buf = append(st.buf, `{"billId":"`...)
	st.buf = strconv.AppendUint(st.buf, r.Out.BillID, 10)
	st.buf = append(st.buf, `"}`...)
	return nil
}

func handleAdminDeposit(s *Server, ctx *fasthttp.RequestCtx, st *reqState, _ *cred) *apiError {
	return handleAdminMoney(s, ctx, st, engine.CmdDeposit)
}

func handleAdminWithdraw(s *Server, ctx *fasthttp.RequestCtx, st *reqState, _ *cred) *apiError {
	return handleAdminMoney(s, ctx, st, engine.CmdWithdraw)
}

// handleAdminTransfer: POST /admin/v1/transfer {uid, coin, amount, from,
// to}: moves amount between the user's spot and futures wallets of coin,
// refused beyond what is available in from.
func handleAdminTransfer(s *Server, ctx *fasthttp.RequestCtx, st *reqState, _ *cred) *apiError {
	return handleAdminMoney(s, ctx, st, engine.CmdTransfer)
}

// adminUser resolves the uid query parameter.
func (s *Server) adminUser(ctx *fasthttp.RequestCtx) (int64, engine.UserIdx, *apiError) {
	if e := checkArgs(ctx, "uid"); e != nil {
		return 0, 0, e
	}
	uid, ok := parseInt(ctx.QueryArgs().Peek("uid"))
	if !ok {
		return 0, 0, newErr(400, codeParamMissing, "parameter uid is required")
	}
	idx, ok := s.node.Accounts().Lookup(uid)
	if !ok {
		return 0, 0, newErr(400, codeParam, "unknown uid")
	}
	return uid, idx, nil
}

// handleAdminBalances: GET /admin/v1/balances?uid=: every coin's spot
// wallet, then every coin's futures wallet (frozen: order reservations
// plus position margins).
func handleAdminBalances(s *Server, ctx *fasthttp.RequestCtx, st *reqState, _ *cred) *apiError {
	_, idx, e := s.adminUser(ctx)
	if e != nil {
		return e
	}
	bals, err := s.node.Balances(idx, s.deadline(), st.bals[:0])
	if err == nil {
		bals, err = s.node.FuturesBalances(idx, s.deadline(), bals)
	}
	st.bals = bals
	if err != nil {
		return s.queryErr(err)
	}
	b := append(st.buf, '[')
	for i := range bals {
		if i > 0 {
			b = append(b, ',')
		}
		co := &s.coins[bals[i].Coin.Spot()]
		b = append(b, `{"wallet":"`...)
		if bals[i].Coin.IsFutures() {
			b = append(b, `futures","coin":`...)
		} else {
			b = append(b, `spot","coin":`...)
		}
		b = appendStr(b, co.Name)
		b = append(b, `,"available":"`...)
		b = appendAmount(b, co, bals[i].Avail)
		b = append(b, `","frozen":"`...)
		b = appendAmount(b, co, bals[i].Frozen)
		b = append(b, `"}`...)
	}
	st.buf = append(b, ']')
	return nil
}

func handleAdminState(s *Server, ctx *fasthttp.RequestCtx, st *reqState, _ *cred) *apiError {
	h, seqs, err := s.node.State(s.deadline())
	if err != nil {
		return s.queryErr(err)
	}
	b := append(st.buf, `{"hash":"`...)
	b = hex.AppendEncode(b, h[:])
	b = append(b, `","seq":{`...)
	for i, q := range seqs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = appendInt(b, int64(i))
		b = append(b, `":`...)
		b = strconv.AppendUint(b, q, 10)
	}
	st.buf = append(b, "}}"...)
	return nil
}

// handleAdminPositions: GET /admin/v1/positions?uid=: the user's positions
// in every contract, as /capi/v3/account/position/allPosition shows them.
func handleAdminPositions(s *Server, ctx *fasthttp.RequestCtx, st *reqState, _ *cred) *apiError {
	uid, idx, e := s.adminUser(ctx)
	if e != nil {
		return e
	}
	return s.positions(ctx, st, &cred{uid: uid, user: idx}, nil)
}
