package engine_test

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/weexcore/exchange/engine"
	"github.com/weexcore/exchange/engine/enginetest"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of engine/testdata/match/* scenarios")

// TestScenarios runs the matching scenarios in testdata/match. Each file is
// a sequence of blocks: one or more command lines, a line "----", and the
// expected output up to a blank line. Lines starting with # between blocks
// are comments. The world is enginetest's standard one (see
// enginetest.MarketConfigs), empty: files register their users. Commands:
//
//	adduser uid=N
//	deposit uid=N coin=C amount=D          withdraw uid=N coin=C amount=D
//	                                       (or units=N: raw coin units, any sign)
//	place uid=N market=M side=buy|sell [type=limit|market] [tif=gtc|ioc|fok|post_only]
//	      [price=D] qty=D [cid=S]
//	cancel uid=N market=M id=N | cid=S     cancelall uid=N market=M
//	balances uid=N...                      (available and frozen of every coin)
//	depth market=M                         orders uid=N market=M
//	kind n=K uid=N                         a command of kind number K
//
// D is a decimal string, parsed like the edge does (MarketSpec.ParsePrice and
// ParseQty, ParseFixed at the coin's scale); a string they refuse is
// reported as the edge's rejection and nothing is applied. side, type and
// tif also take raw numbers, to send what the edge would never send; user=N
// overrides the user index looked up from uid. Every applied command takes
// the next seq, and its time in ms is the seq.
//
// Besides comparing the output, every command is also applied to the
// reference model (enginetest.Ref) and must give the same events, and the
// whole-state invariants are checked after every command.
//
// go test ./engine -run TestScenarios -rewrite regenerates the expected
// output; review the diff by hand against docs/API.md ("Spot trading",
// "Decisions SPEC left to us", "POST /api/v3/tax/income") before
// committing.
func TestScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/match/*")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no scenario files in testdata/match")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) { runScenarioFile(t, f) })
	}
}

type block struct {
	pre  []string // comments and blank lines before the block
	cmds []string
	want string
	line int
}

func parseScenario(t *testing.T, path string) ([]block, []string) {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []block
	var cur block
	state := 0 // 0: between blocks, 1: commands, 2: output
	var out strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(data))
	n := 0
	for sc.Scan() {
		n++
		l := sc.Text()
		switch state {
		case 0:
			if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#") {
				cur.pre = append(cur.pre, l)
				continue
			}
			cur.line = n
			cur.cmds = append(cur.cmds, l)
			state = 1
		case 1:
			if l == "----" {
				state = 2
				out.Reset()
				continue
			}
			cur.cmds = append(cur.cmds, l)
		case 2:
			if strings.TrimSpace(l) == "" {
				cur.want = out.String()
				blocks = append(blocks, cur)
				cur = block{}
				state = 0
				continue
			}
			out.WriteString(l)
			out.WriteByte('\n')
		}
	}
	switch state {
	case 1:
		t.Fatalf("%s:%d: block without ----", path, cur.line)
	case 2:
		cur.want = out.String()
		blocks = append(blocks, cur)
		cur = block{}
	}
	return blocks, cur.pre
}

// scenario is the state of one file's run.
type scenario struct {
	t     *testing.T
	h     *harness
	specs []*engine.MarketSpec
	coins []engine.Coin
}

func runScenarioFile(t *testing.T, path string) {
	blocks, tail := parseScenario(t, path)
	s := &scenario{t: t, h: newHarness(t, 1), coins: enginetest.Coins()}
	s.specs = s.h.specs
	s.h.timeIsSeq = true
	var file strings.Builder
	for _, b := range blocks {
		var got []byte
		for _, c := range b.cmds {
			got = s.run(got, c, path, b.line)
		}
		if *rewrite {
			for _, l := range b.pre {
				file.WriteString(l + "\n")
			}
			for _, c := range b.cmds {
				file.WriteString(c + "\n")
			}
			file.WriteString("----\n")
			file.Write(got)
			file.WriteString("\n")
			continue
		}
		if string(got) != b.want {
			t.Errorf("%s:%d: %s\ngot:\n%swant:\n%s", path, b.line, strings.Join(b.cmds, "\n"), got, b.want)
		}
	}
	if *rewrite {
		for _, l := range tail {
			file.WriteString(l + "\n")
		}
		// blocks end with a blank line; drop the last one
		out := strings.TrimSuffix(file.String(), "\n")
		if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func (s *scenario) market(name string) (engine.MarketID, *engine.MarketSpec) {
	for _, m := range s.specs {
		if m.Symbol == name {
			return m.ID, m
		}
	}
	if n, err := strconv.Atoi(name); err == nil {
		return engine.MarketID(n), nil
	}
	return 999, nil // a market nobody owns
}

func (s *scenario) coin(name string) engine.CoinID {
	for _, c := range s.coins {
		if c.Name == name {
			return c.ID
		}
	}
	if n, err := strconv.Atoi(name); err == nil {
		return engine.CoinID(n)
	}
	s.t.Fatalf("unknown coin %q", name)
	return 0
}

func enumArg(v string, names map[string]int) int {
	if n, ok := names[strings.ToLower(v)]; ok {
		return n
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		panic(fmt.Sprintf("bad value %q", v))
	}
	return n
}

// run executes one command line and appends its output to out.
func (s *scenario) run(out []byte, line, path string, lineNo int) []byte {
	t := s.t
	f := strings.Fields(line)
	args := map[string][]string{}
	for _, a := range f[1:] {
		k, v, _ := strings.Cut(a, "=")
		args[k] = append(args[k], v)
	}
	arg := func(k string) string {
		if v := args[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	acc := s.h.cl.Acc
	c := engine.Cmd{}
	user := func() {
		uid, err := strconv.ParseInt(arg("uid"), 10, 64)
		if err != nil {
			t.Fatalf("%s:%d: bad uid in %q", path, lineNo, line)
		}
		c.UID = uid
		u, ok := acc.Lookup(uid)
		if !ok {
			u = 999_999 // not registered
		}
		if v := arg("user"); v != "" {
			n, _ := strconv.Atoi(v)
			u = engine.UserIdx(n)
		}
		c.User = u
	}
	// parse errors are what the edge answers; nothing reaches the engine
	edge := func(what, v string, err error) []byte {
		return fmt.Appendf(out, "edge rejects %s %q: %v\n", what, v, err)
	}
	switch f[0] {
	case "adduser":
		user()
		c.Kind = engine.CmdAddUser
	case "deposit", "withdraw":
		user()
		c.Kind = engine.CmdDeposit
		if f[0] == "withdraw" {
			c.Kind = engine.CmdWithdraw
		}
		c.Coin = s.coin(arg("coin"))
		scale := 0
		if int(c.Coin) < len(s.coins) {
			scale = s.coins[c.Coin].Scale
		}
		if v := arg("units"); v != "" {
			n, _ := strconv.ParseInt(v, 10, 64)
			c.Amount = engine.Amount(n)
		} else {
			a, err := engine.ParseFixed([]byte(arg("amount")), scale)
			if err != nil {
				return edge("amount", arg("amount"), err)
			}
			c.Amount = engine.Amount(a)
		}
	case "place":
		user()
		c.Kind = engine.CmdPlace
		var spec *engine.MarketSpec
		c.Market, spec = s.market(arg("market"))
		c.Side = engine.Side(enumArg(arg("side"), map[string]int{"buy": 1, "sell": 2}))
		c.Type = engine.Limit
		if v := arg("type"); v != "" {
			c.Type = engine.OrderType(enumArg(v, map[string]int{"limit": 1, "market": 2}))
		}
		if c.Type == engine.Limit {
			c.TIF = engine.GTC // the single-order endpoint's default
		}
		if v := arg("tif"); v != "" {
			c.TIF = engine.TIF(enumArg(v, map[string]int{"gtc": 1, "ioc": 2, "fok": 3, "post_only": 4}))
		}
		if spec == nil { // a market nobody owns: raw ticks and steps
			spec = &engine.MarketSpec{TickUnits: 1, StepUnits: 1}
		}
		if v := arg("price"); v != "" {
			p, err := spec.ParsePrice([]byte(v))
			if err != nil {
				return edge("price", v, err)
			}
			c.Price = p
		}
		if v := arg("qty"); v != "" {
			q, err := spec.ParseQty([]byte(v))
			if err != nil {
				return edge("quantity", v, err)
			}
			c.Qty = q
		}
		if len(args["cid"]) > 0 && !c.Text.Set([]byte(arg("cid"))) {
			return edge("client id", arg("cid"), fmt.Errorf("too long"))
		}
	case "cancel", "cancelall":
		user()
		c.Kind = engine.CmdCancel
		if f[0] == "cancelall" {
			c.Kind = engine.CmdCancelAll
		}
		c.Market, _ = s.market(arg("market"))
		if v := arg("id"); v != "" {
			c.OrderID, _ = strconv.ParseInt(v, 10, 64)
		}
		c.Text.Set([]byte(arg("cid")))
	case "kind":
		// a command of any kind number, e.g. one that does not exist
		user()
		n, _ := strconv.Atoi(arg("n"))
		c.Kind = engine.CmdKind(n)
	case "balances":
		for _, v := range args["uid"] {
			uid, _ := strconv.ParseInt(v, 10, 64)
			u, ok := acc.Lookup(uid)
			if !ok {
				out = fmt.Appendf(out, "uid=%d unknown\n", uid)
				continue
			}
			out = fmt.Appendf(out, "uid=%d", uid)
			for _, k := range s.coins {
				a, fz := acc.Balance(u, k.ID)
				out = fmt.Appendf(out, " %s=%s/%s", k.Name, engine.AppendFixed(nil, int64(a), k.Scale),
					engine.AppendFixed(nil, int64(fz), k.Scale))
			}
			out = append(out, '\n')
		}
		return out
	case "depth":
		id, spec := s.market(arg("market"))
		bids, asks := s.h.cl.Engines[0].Depth(id, 100, nil, nil)
		for i := len(asks) - 1; i >= 0; i-- {
			out = fmt.Appendf(out, "ask %s %s (%d)\n", spec.AppendPrice(nil, asks[i].Price), spec.AppendQty(nil, asks[i].Qty), asks[i].Count)
		}
		for _, l := range bids {
			out = fmt.Appendf(out, "bid %s %s (%d)\n", spec.AppendPrice(nil, l.Price), spec.AppendQty(nil, l.Qty), l.Count)
		}
		if lp := s.h.cl.Engines[0].LastPrice(id); lp != 0 {
			out = fmt.Appendf(out, "last %s\n", spec.AppendPrice(nil, lp))
		}
		if len(bids)+len(asks) == 0 {
			out = append(out, "empty\n"...)
		}
		return out
	case "orders":
		uid, _ := strconv.ParseInt(arg("uid"), 10, 64)
		u, _ := acc.Lookup(uid)
		id, _ := s.market(arg("market"))
		vs := s.h.cl.Engines[0].OpenOrders(u, id, nil)
		for i := range vs {
			out = append(s.h.pr.View(append(out, "open "...), &vs[i]), '\n')
		}
		if len(vs) == 0 {
			out = append(out, "none\n"...)
		}
		return out
	default:
		t.Fatalf("%s:%d: unknown command %q", path, lineNo, f[0])
	}

	s.h.step(c) // reports a disagreement with the reference model

	eo := &s.h.eo
	if eo.OrderAt != 0 && eo.OrderAt != len(eo.Updates) {
		t.Errorf("%s:%d: Out.Order %+v is not the last update", path, lineNo, eo.Order())
	}
	for _, tr := range eo.Trades {
		if tr.TimeMs != s.h.ts {
			t.Errorf("%s:%d: trade time %d, want %d", path, lineNo, tr.TimeMs, s.h.ts)
		}
	}
	for _, b := range eo.AppendBills(nil) {
		if b.TimeMs != s.h.ts {
			t.Errorf("%s:%d: bill time %d, want %d", path, lineNo, b.TimeMs, s.h.ts)
		}
	}
	if err := s.h.checkInvariants(); err != nil {
		t.Errorf("%s:%d: after %q: %v", path, lineNo, line, err)
	}
	return s.h.pr.Out(out, eo)
}
