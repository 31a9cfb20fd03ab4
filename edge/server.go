package edge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fasthttp/router"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"github.com/weexcore/exchange/config"
	"github.com/weexcore/exchange/core"
	"github.com/weexcore/exchange/engine"
	"github.com/weexcore/exchange/journal"
)

// Options configures New.
type Options struct {
	Config      *config.Config
	AdminToken  string        // "": the config's admin_token
	RecvWindow  time.Duration // accepted |now - ACCESS-TIMESTAMP|; 0: 30 s
	WaitTimeout time.Duration // longest wait for a command to be durable; 0: 5 s
	Logger      *slog.Logger  // nil: discard
	// MaxConns bounds each listener's open connections (0: 16,384), and
	// always stays below the process's file limit; MaxConnsPerIP bounds
	// those from one address (0: 1,024).
	MaxConns, MaxConnsPerIP int
	// DevClock, when set, is the exchange's clock (the node's
	// core.Options.Clock too): POST /admin/v1/clock moves it forward.
	DevClock *core.DevClock
	// LeaderREST maps each member of a replicated node's raft group to its
	// REST address, for X-LEADER (replicated.go); nil: a single node.
	LeaderREST map[uint64]string
}

// MaxBodyBytes bounds request bodies (docs/API.md, "Errors": larger ones get 413).
const MaxBodyBytes = 64 << 10

// readBodyBytes is the most fasthttp reads of a body; see newHTTPServer.
const readBodyBytes = 1 << 20

const (
	defaultMaxConns      = 16 << 10
	defaultMaxConnsPerIP = 1024
	// filesKept are the file descriptors kept for the store and the
	// process when bounding connections by the file limit.
	filesKept = 1024
)

// connBounds returns the bounds of o: MaxConns below the file limit.
func connBounds(o *Options) (total, perIP int) {
	total, perIP = o.MaxConns, o.MaxConnsPerIP
	if total <= 0 {
		total = defaultMaxConns
	}
	if perIP <= 0 {
		perIP = defaultMaxConnsPerIP
	}
	var rl syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl) == nil && rl.Cur < uint64(2*total+filesKept) {
		// two listeners share the limit
		total = max(1, (int(rl.Cur)-filesKept)/2)
	}
	return total, min(perIP, total)
}

// maxBatch bounds POST /api/v3/order/batch (docs/API.md).
const maxBatch = 10

// noUser marks a CmdAddUser whose registration did not happen (the engine
// overwrites Cmd.User only on success).
const noUser = ^engine.UserIdx(0)

// Server is the REST edge: routing, authentication, rate limits, request
// decoding and response encoding around a core.Node.
type Server struct {
	maxConns      int // per listener (connBounds)
	maxConnsPerIP int
	cfg           *config.Config
	node          *core.Node
	store         *journal.Store // node's: history reads
	keys          *keyTable
	coins         []engine.Coin
	specs         []*engine.MarketSpec
	markets       []*market // spot markets, by engine.MarketID
	bySymbol      map[string]*market
	contracts     []*contract // by engine.MarketID - engine.ContractBase
	byV3, byV2    map[string]*contract
	spotCancel    cancelFamily // the batch cancels (cancelbatch.go)
	ctCancel      cancelFamily
	ipLim         *limiter
	uidLim        *limiter
	recvWindowMs  int64
	waitTimeout   time.Duration
	adminToken    []byte
	restRouter    *router.Router
	adminRouter   *router.Router
	coinsBody     []byte
	accountHead   []byte         // the account answer up to its time (query.go)
	maxUID        atomic.Int64   // highest uid registered or taken by an admin registration
	clock         *core.DevClock // nil: the system clock, no /admin/v1/clock
	registry      *prometheus.Registry
	ready         atomic.Bool // Start is done and Shutdown not begun (GET /readyz)
	repl          *replEdge   // nil: a single node (replicated.go)
	log           *slog.Logger

	rest, admin *fasthttp.Server
	restLn      net.Listener
	adminLn     net.Listener
	serveWG     sync.WaitGroup
}

type market struct {
	spec *engine.MarketSpec
	cfg  *config.SpotConfig
	info []byte // the exchangeInfo record, precomputed
}

// New returns the edge for o.Config. Its OnAddUser must be given to the
// journal's Load and the core's Open (users registered before and after
// the node starts get their credentials); then Start serves the node.
func New(o Options) (*Server, error) {
	if o.Config == nil {
		return nil, errors.New("edge: no config")
	}
	if o.RecvWindow <= 0 {
		o.RecvWindow = 30 * time.Second
	}
	if o.WaitTimeout <= 0 {
		o.WaitTimeout = 5 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.AdminToken == "" {
		o.AdminToken = o.Config.AdminToken
	}
	coins, specs, err := o.Config.EngineSpecs()
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: o.Config, keys: newKeyTable(), coins: coins, specs: specs,
		bySymbol: map[string]*market{}, byV3: map[string]*contract{}, byV2: map[string]*contract{}, ipLim: newLimiter(), uidLim: newLimiter(),
		recvWindowMs: o.RecvWindow.Milliseconds(), waitTimeout: o.WaitTimeout,
		adminToken: []byte(o.AdminToken), log: o.Logger, clock: o.DevClock}
	s.maxConns, s.maxConnsPerIP = connBounds(&o)
	if o.LeaderREST != nil {
		s.repl = &replEdge{leaderREST: o.LeaderREST}
	}
	for i := range o.Config.Spot {
		sp := specs[i]
		m := &market{spec: sp, cfg: &o.Config.Spot[i]}
		m.info = s.appendSymbolInfo(nil, m)
		s.markets = append(s.markets, m)
		s.bySymbol[sp.Symbol] = m
	}
	for i := range o.Config.Contracts {
		k := &contract{spec: specs[engine.ContractBase+engine.MarketID(i)], cfg: &o.Config.Contracts[i]}
		k.info = s.appendContractInfo(nil, k)
		s.contracts = append(s.contracts, k)
		s.byV3[k.spec.V3Symbol], s.byV2[k.spec.Symbol] = k, k
	}
	s.cancelFamilies()
	s.coinsBody = s.appendCoins(nil)
	s.accountHead = appendAccountHead(nil, specs[:len(o.Config.Spot)])
	reg, durations := newRegistry()
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "exchanged_api_keys",
		Help: "API keys this node authenticates: every registered user's (a replicated member should hold the leader's count)."},
		func() float64 { return float64(s.keys.count()) }))
	s.registry = reg
	s.restRouter = newRouter(restEndpoints(), s.serveEndpoint, durations)
	s.adminRouter = newRouter(adminEndpoints(s.clock != nil), s.serveAdminEndpoint, nil)
	return s, nil
}

// OnAddUser registers the credentials of an admin-created user; see New.
func (s *Server) OnAddUser(c *engine.Cmd) { s.onAddUser(c) }

// Start takes the running node: it registers the config's users and, on a
// new data directory, credits their deposits; then the node's metrics are
// exported and GET /readyz answers 200. The node must have been opened
// with s.OnAddUser.
func (s *Server) Start(node *core.Node) error {
	s.node, s.store = node, node.Store()
	if s.repl != nil {
		return s.startReplicated(node)
	}
	if err := s.bootstrap(s.store.Seeding()); err != nil {
		return err
	}
	if err := registerAll(s.registry, node.Collectors()); err != nil {
		return fmt.Errorf("edge: node metrics: %w", err)
	}
	s.ready.Store(true)
	return nil
}

func registerAll(reg *prometheus.Registry, cs []prometheus.Collector) error {
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// onAddUser runs on the ledger goroutine for every applied CmdAddUser, live
// and on replay, and for the users a loaded snapshot holds: admin-created
// users get their credentials, derived from the journaled seed.
func (s *Server) onAddUser(c *engine.Cmd) {
	for m := s.maxUID.Load(); c.UID > m && !s.maxUID.CompareAndSwap(m, c.UID); m = s.maxUID.Load() {
	}
	if c.User == noUser || c.Text.N != seedLen {
		return
	}
	key, secret, pass := deriveCreds(c.Text.Bytes())
	s.keys.add(newCred(c.UID, c.User, key, secret, pass, 0))
}

const seedLen = 32

// bootstrap registers the fee account and the config's users (those not
// yet registered) and, while the directory is seeding (new, or its first
// start was cut short), credits the config's deposits not yet credited,
// then marks seeding done.
func (s *Server) bootstrap(seeding bool) error {
	acc := s.node.Accounts()
	add := func(uid int64, broker bool, ref, rate int64) error {
		if _, ok := acc.Lookup(uid); ok {
			return nil
		}
		r := core.AcquireRequest()
		r.Cmd = engine.Cmd{Kind: engine.CmdAddUser, UID: uid, Broker: broker, Referrer: ref, Amount: engine.Amount(rate), User: noUser}
		if err := s.run(r); err != nil {
			return fmt.Errorf("edge: registering uid %d: %v", uid, err.msg)
		}
		rej := r.Out.Reject
		core.ReleaseRequest(r)
		if rej != engine.OK && rej != engine.RejectUserExists {
			return fmt.Errorf("edge: registering uid %d: %v", uid, rej)
		}
		return nil
	}
	if s.cfg.InsuranceUID != 0 {
		if err := add(s.cfg.InsuranceUID, false, 0, 0); err != nil {
			return err
		}
	}
	// Brokers first: a user's referral counts only if its broker is
	// registered before it.
	for _, brokers := range []bool{true, false} {
		for _, u := range s.cfg.Users {
			if u.Broker != brokers {
				continue
			}
			if err := add(u.UID, u.Broker, u.ReferrerUID, u.Rate); err != nil {
				return err
			}
		}
	}
	for _, u := range s.cfg.Users {
		idx, ok := acc.Lookup(u.UID)
		if !ok {
			return fmt.Errorf("edge: uid %d not registered", u.UID)
		}
		s.keys.add(newCred(u.UID, idx, u.APIKey, u.SecretKey, u.Passphrase, u.UIDWeight))
		if !seeding {
			continue
		}
		for k := 0; k < 2*len(s.cfg.Coins); k++ { // config order, spot then futures: deterministic
			co, coin, deps := s.cfg.Coins[k%len(s.cfg.Coins)], engine.CoinID(k%len(s.cfg.Coins)), u.Deposits
			if k >= len(s.cfg.Coins) {
				coin, deps = coin|engine.Futures, u.FuturesDeposits
			}
			amt, ok := deps[co.Coin]
			if !ok {
				continue
			}
			// Before seeding is done nothing but these deposits moves
			// money (nothing is served yet), so a balance means that an
			// earlier start credited it before it was cut short.
			if avail, frozen := acc.Balance(idx, coin); avail+frozen != 0 {
				continue
			}
			v, _ := engine.ParseFixed([]byte(amt), co.Scale)
			r := core.AcquireRequest()
			r.Cmd = engine.Cmd{Kind: engine.CmdDeposit, User: idx, UID: u.UID, Coin: coin, Amount: engine.Amount(v)}
			if err := s.run(r); err != nil {
				return fmt.Errorf("edge: deposit for uid %d: %v", u.UID, err.msg)
			}
			rej := r.Out.Reject
			core.ReleaseRequest(r)
			if rej != engine.OK {
				return fmt.Errorf("edge: deposit for uid %d: %v", u.UID, rej)
			}
		}
	}
	// The fee account last: a replicated group's next leader takes it
	// being registered for seeding being done (edge/replicated.go).
	if err := add(s.cfg.FeeUID, false, 0, 0); err != nil {
		return err
	}
	if seeding {
		return s.store.Seeded()
	}
	return nil
}

// run submits r and waits for it. On error r is not to be used again
// (after a timeout the journal may still write to it, so it is not
// released).
func (s *Server) run(r *core.Request) *apiError {
	if e := s.submit(r); e != nil {
		core.ReleaseRequest(r)
		return e
	}
	return s.wait(r)
}

func (s *Server) submit(r *core.Request) *apiError {
	switch err := s.node.Submit(r); {
	case err == nil:
		return nil
	case errors.Is(err, core.ErrBusy):
		return errBusy
	case errors.Is(err, core.ErrClosed):
		return errClosing
	case errors.Is(err, core.ErrUnavailable):
		return errUnavailable
	case errors.Is(err, core.ErrNotLeader):
		return errNotLeader
	default:
		return errInternal
	}
}

// wait waits for a submitted r. On a timeout r is abandoned (not
// released); on other errors it is released.
func (s *Server) wait(r *core.Request) *apiError {
	switch err := r.Wait(time.Now().Add(s.waitTimeout)); {
	case err == nil:
		return nil
	case errors.Is(err, core.ErrTimeout):
		return errTimeout
	case errors.Is(err, core.ErrClosed):
		core.ReleaseRequest(r)
		return errClosing
	case errors.Is(err, core.ErrUnavailable):
		core.ReleaseRequest(r)
		return errUnavailable
	case errors.Is(err, core.ErrNotLeader):
		core.ReleaseRequest(r)
		return errNotLeader
	default:
		core.ReleaseRequest(r)
		return errInternal
	}
}

func (s *Server) deadline() time.Time { return time.Now().Add(s.waitTimeout) }

// Node returns the running core.
func (s *Server) Node() *core.Node { return s.node }

func (s *Server) newHTTPServer(h fasthttp.RequestHandler, name string) *fasthttp.Server {
	return &fasthttp.Server{
		Handler:      h,
		Name:         name,
		ReadTimeout:  10 * time.Second,
		WriteTimeout: 10 * time.Second,
		IdleTimeout:  60 * time.Second,
		// Bodies up to readBodyBytes are read whole so that the 413 for
		// more than MaxBodyBytes reaches the client (dispatch checks);
		// larger ones are cut off by fasthttp (httpError answers 413).
		MaxRequestBodySize:    readBodyBytes,
		ReadBufferSize:        8 << 10,           // bounds the request line and headers
		Concurrency:           s.maxConns + 1024, // above the listener's bound: fasthttp's own refusal is plain text
		CloseOnShutdown:       true,
		NoDefaultServerHeader: true,
		ErrorHandler:          s.httpError,
	}
}

// httpError answers requests fasthttp could not parse.
func (s *Server) httpError(ctx *fasthttp.RequestCtx, err error) {
	var buf [160]byte
	switch {
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		writeError(ctx, buf[:0], errBodyTooLarge)
	default:
		var se *fasthttp.ErrSmallBuffer
		if errors.As(err, &se) {
			writeError(ctx, buf[:0], newErr(431, codeParam, "request headers too large"))
			return
		}
		writeError(ctx, buf[:0], newErr(400, codeParam, "malformed HTTP request"))
	}
}

// Listen binds the REST and admin addresses (":0" picks a free port).
func (s *Server) Listen(restAddr, adminAddr string) error {
	var err error
	if s.restLn, err = net.Listen("tcp", restAddr); err != nil {
		return err
	}
	if s.adminLn, err = net.Listen("tcp", adminAddr); err != nil {
		s.restLn.Close()
		return err
	}
	return nil
}

// Addrs returns the bound REST and admin addresses.
func (s *Server) Addrs() (rest, admin string) {
	return s.restLn.Addr().String(), s.adminLn.Addr().String()
}

// ServeAdmin serves the admin listener until Shutdown, before Start if
// need be: health, readiness and metrics answer during start-up, the
// admin API 503 until Start is done.
func (s *Server) ServeAdmin() {
	if s.admin != nil {
		return
	}
	s.admin = s.newHTTPServer(s.serveAdmin, "exchanged-admin")
	s.serveWG.Add(1)
	go func() {
		defer s.serveWG.Done()
		s.admin.Serve(newLimitListener(s.adminLn, s.maxConnsPerIP, s.maxConns))
	}()
}

// Serve serves the REST listener, and the admin one unless ServeAdmin
// did, until Shutdown.
func (s *Server) Serve() {
	s.ServeAdmin()
	s.rest = s.newHTTPServer(s.serveREST, "exchanged")
	s.serveWG.Add(1)
	go func() { defer s.serveWG.Done(); s.rest.Serve(newLimitListener(s.restLn, s.maxConnsPerIP, s.maxConns)) }()
}

// Shutdown stops accepting and lets in-flight requests finish; the caller
// then closes the node (drain, sync, snapshot).
func (s *Server) Shutdown(timeout time.Duration) error {
	s.ready.Store(false)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	// A Serve goroutine that had not reached fasthttp's Serve yet (a
	// signal right after ready) registered no listener for fasthttp's
	// Shutdown to close, and would accept forever: closing the listeners
	// here makes it return (a second close is harmless).
	for _, srv := range []struct {
		h  *fasthttp.Server
		ln net.Listener
	}{{s.rest, s.restLn}, {s.admin, s.adminLn}} {
		if srv.h != nil {
			srv.h.ShutdownWithContext(ctx)
			srv.ln.Close()
		}
	}
	s.serveWG.Wait()
	return nil
}

func appendInt(dst []byte, v int64) []byte { return strconv.AppendInt(dst, v, 10) }
