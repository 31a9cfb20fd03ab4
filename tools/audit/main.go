// Command audit replays an exchange data directory read-only and checks it.
//
//	audit -dir DATA [-full] [-trades FILE] [-bills FILE] [-format jsonl|csv]
//
// It opens the directory read-only (journal.Options.ReadOnly: coins and
// markets come from the directory's meta, so no config is needed), loads
// it (the newest snapshot and the journal after it, or the whole journal
// with -full), prints the state hash, each shard's sequence and per-coin
// totals (and a note when -full had to go on from a snapshot the member
// installed from its replicated group, whose records it never wrote), runs engine.CheckInvariants, reads every table and value back
// (journal.Store.Scrub: damage the replay did not read), and optionally
// exports every public trade and every finance record. It exits 1 on any
// violation or damage (the server refuses the same directories: journal
// errors that match journal.ErrCorrupt), 2 on usage errors.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/weexcore/exchange/engine"
	"github.com/weexcore/exchange/journal"
)

func main() {
	dir := flag.String("data", "", "data directory (required; the server's -data)")
	flag.StringVar(dir, "dir", "", "same as -data")
	full := flag.Bool("full", false, "ignore snapshots: replay every journal from the start (but across a snapshot installed from the group)")
	compare := flag.Bool("compare", false, "also replay the other way (full vs snapshot+tail) and require the same state hash")
	trades := flag.String("trades", "", "export public trades to this file (- for stdout)")
	bills := flag.String("bills", "", "export finance records to this file (- for stdout)")
	format := flag.String("format", "jsonl", "export format: jsonl or csv")
	verbose := flag.Bool("v", false, "log replay progress to stderr")
	flag.Parse()
	if *dir == "" || *format != "jsonl" && *format != "csv" {
		flag.Usage()
		os.Exit(2)
	}
	err := run(*dir, *full, *trades, *bills, *format == "csv", *verbose)
	if err == nil && *compare {
		err = compareReplays(*dir, *full)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "audit:", err)
		os.Exit(1)
	}
}

// load opens dir read-only and loads its state.
func load(dir string, full bool, log *slog.Logger) (*journal.Store, *journal.State, error) {
	s, err := journal.Open(journal.Options{Dir: dir, ReadOnly: true, Logger: log})
	if err != nil {
		return nil, nil, err
	}
	st, err := s.Load(journal.LoadOptions{FullReplay: full})
	if err != nil {
		s.Close()
		return nil, nil, err
	}
	return s, st, nil
}

func run(dir string, full bool, tradesPath, billsPath string, csv, verbose bool) (err error) {
	defer func() {
		if p := recover(); p != nil { // a damaged store must get a verdict, not a crash
			err = fmt.Errorf("internal error reading %s: %v", dir, p)
		}
	}()
	var log *slog.Logger
	if verbose {
		log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	t0 := time.Now()
	store, st, err := load(dir, full, log)
	if err != nil {
		return err
	}
	defer store.Close()
	replay := time.Since(t0)
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	fmt.Fprintf(w, "dir\t%s\nreplay\t%v\nstate_hash\t%x\nseqs\t%v\n", dir, replay.Round(time.Millisecond), st.Hash(), st.Seqs)
	if st.FromInstalled != 0 {
		fmt.Fprintf(w, "note\tthe journal records snapshot %d covers were not written on this member: it installed the group leader's snapshot; "+
			"the other members hold them (the full replay checked the records before it that this member has, then went on from it)\n", st.FromInstalled)
	}
	acc := st.Accounts
	coins := acc.Coins()
	fmt.Fprintf(w, "users\t%d\n", acc.NumUsers())
	fmt.Fprintf(w, "coin\tavailable\tfrozen\ttotal\tnet_deposits\n")
	for _, c := range coins {
		var avail, frozen int64
		for u := 0; u < acc.NumUsers(); u++ {
			a, f := acc.Balance(engine.UserIdx(u), c.ID)
			avail += int64(a)
			frozen += int64(f)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", c.Name,
			engine.AppendFixed(nil, avail, c.Scale), engine.AppendFixed(nil, frozen, c.Scale),
			engine.AppendFixed(nil, avail+frozen, c.Scale), engine.AppendFixed(nil, int64(acc.Net(c.ID)), c.Scale))
	}
	violation := engine.CheckInvariants(st.Accounts, st.Engines)
	if violation != nil {
		fmt.Fprintf(w, "invariants\tVIOLATED: %v\n", violation)
	} else {
		fmt.Fprintf(w, "invariants\tok\n")
	}
	// Every table and value read back: damage the replay did not read
	// (history rows, older records) is found here.
	damage := store.Scrub(0, nil)
	if damage != nil {
		fmt.Fprintf(w, "storage\tDAMAGED: %v\n", damage)
	} else {
		fmt.Fprintf(w, "storage\tok\n")
	}
	if err := export(store, st, tradesPath, billsPath, csv); err != nil {
		return err
	}
	if violation != nil {
		return fmt.Errorf("invariant violated: %w", violation)
	}
	return damage
}

// compareReplays replays dir the other way (from the snapshot if full, or
// in full) and checks the state hash matches.
func compareReplays(dir string, full bool) error {
	hash := func(full bool) ([32]byte, error) {
		s, st, err := load(dir, full, nil)
		if err != nil {
			return [32]byte{}, err
		}
		defer s.Close()
		return st.Hash(), nil
	}
	a, err := hash(full)
	if err != nil {
		return err
	}
	b, err := hash(!full)
	if err != nil {
		return err
	}
	fmt.Printf("compare\tfull=%v %x\tfull=%v %x\n", full, a, !full, b)
	if a != b {
		return fmt.Errorf("state hash differs between full replay and snapshot+tail replay")
	}
	return nil
}

func create(path string) (*os.File, error) {
	if path == "-" {
		return os.Stdout, nil
	}
	return os.Create(path)
}

func export(s *journal.Store, st *journal.State, tradesPath, billsPath string, csv bool) error {
	mk := st.Markets
	coins := st.Accounts.Coins()
	var tw, bw *bufio.Writer
	var files []*os.File
	defer func() {
		for _, f := range files {
			if f != os.Stdout {
				f.Close()
			}
		}
	}()
	open := func(p string, header string) (*bufio.Writer, error) {
		f, err := create(p)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
		w := bufio.NewWriterSize(f, 1<<16)
		if csv {
			w.WriteString(header)
		}
		return w, nil
	}
	var err error
	if tradesPath != "" {
		if tw, err = open(tradesPath, "tradeId,symbol,timeMs,price,qty,quote,takerSide,makerOrderId,takerOrderId,makerUid,takerUid,makerFee,takerFee,kind\n"); err != nil {
			return err
		}
	}
	if billsPath != "" {
		if bw, err = open(billsPath, "billId,uid,coin,bizType,symbol,fillQty,fillQuote,delta,after,fee,timeMs\n"); err != nil {
			return err
		}
	}
	if tw == nil && bw == nil {
		return nil
	}
	var buf []byte
	symbol := func(id engine.MarketID) string {
		if int(id) < len(mk) && mk[id] != nil {
			return mk[id].Symbol
		}
		return ""
	}
	var onTrade func(*engine.Trade) error
	if tw != nil {
		onTrade = func(t *engine.Trade) error {
			s := mk[t.Market]
			base, quote := coins[s.Base], coins[s.Quote]
			takerFeeCoin, makerFeeCoin := base, quote // taker bought: fee in base; maker sold: fee in quote
			switch {
			case s.Contract: // fees in the margin coin, the quote
				takerFeeCoin, makerFeeCoin = quote, quote
			case t.TakerSide == engine.Sell:
				takerFeeCoin, makerFeeCoin = quote, base
			}
			side := "BUY"
			if t.TakerSide == engine.Sell {
				side = "SELL"
			}
			kind := "market" // a liquidation's takeover or ADL fill is not a market trade
			if t.Off {
				kind = "liquidation"
			}
			f := []field{
				{"tradeId", num(t.TradeID)}, {"symbol", str(s.Symbol)}, {"timeMs", num(t.TimeMs)},
				{"price", str(string(s.AppendPrice(nil, t.Price)))}, {"qty", str(string(s.AppendQty(nil, t.Qty)))},
				{"quote", str(string(engine.AppendFixed(nil, int64(t.Quote), quote.Scale)))}, {"takerSide", str(side)},
				{"makerOrderId", num(t.MakerOrder)}, {"takerOrderId", num(t.TakerOrder)},
				{"makerUid", num(t.MakerUID)}, {"takerUid", num(t.TakerUID)},
				{"makerFee", str(string(engine.AppendFixed(nil, int64(t.MakerFee), makerFeeCoin.Scale)))},
				{"takerFee", str(string(engine.AppendFixed(nil, int64(t.TakerFee), takerFeeCoin.Scale)))},
				{"kind", str(kind)},
			}
			buf = appendRow(buf[:0], f, csv)
			_, err := tw.Write(buf)
			return err
		}
	}
	var onBill func(*engine.Bill) error
	if bw != nil {
		onBill = func(b *engine.Bill) error {
			c := coins[b.Coin]
			fillQty := ""
			if s := symbol(b.Market); s != "" && (b.Biz == engine.BizTradeIn || b.Biz == engine.BizTradeOut) {
				fillQty = string(mk[b.Market].AppendQty(nil, b.FillQty))
			}
			f := []field{
				{"billId", value{b: strconv.AppendUint(nil, b.BillID, 10)}}, {"uid", num(b.UID)}, {"coin", str(c.Name)},
				{"bizType", str(b.Biz.String())}, {"symbol", str(symbolIf(b, symbol))}, {"fillQty", str(fillQty)},
				{"fillQuote", str(quoteOf(b, mk, coins))},
				{"delta", str(string(engine.AppendFixed(nil, int64(b.Delta), c.Scale)))},
				{"after", str(string(engine.AppendFixed(nil, int64(b.After), c.Scale)))},
				{"fee", str(string(engine.AppendFixed(nil, int64(b.Fee), c.Scale)))}, {"timeMs", num(b.TimeMs)},
			}
			buf = appendRow(buf[:0], f, csv)
			_, err := bw.Write(buf)
			return err
		}
	}
	if err := s.Export(onTrade, onBill); err != nil {
		return err
	}
	for _, w := range []*bufio.Writer{tw, bw} {
		if w != nil {
			if err := w.Flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

func symbolIf(b *engine.Bill, symbol func(engine.MarketID) string) string {
	if b.Biz == engine.BizTradeIn || b.Biz == engine.BizTradeOut || b.Biz == engine.BizFee {
		return symbol(b.Market)
	}
	return ""
}

func quoteOf(b *engine.Bill, mk []*engine.MarketSpec, coins []engine.Coin) string {
	if b.Biz != engine.BizTradeIn && b.Biz != engine.BizTradeOut || int(b.Market) >= len(mk) || mk[b.Market] == nil {
		return ""
	}
	return string(engine.AppendFixed(nil, int64(b.FillQuote), coins[mk[b.Market].Quote].Scale))
}

// field is one exported column: a JSON number (raw) or string (quoted).
type field struct {
	name string
	v    value
}

type value struct {
	b      []byte
	quoted bool
}

func num(x int64) value  { return value{b: strconv.AppendInt(nil, x, 10)} }
func str(s string) value { return value{b: []byte(s), quoted: true} }

func appendRow(dst []byte, f []field, csv bool) []byte {
	if csv {
		for i, x := range f {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, x.v.b...) // symbols, numbers and names: no commas or quotes
		}
		return append(dst, '\n')
	}
	dst = append(dst, '{')
	for i, x := range f {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendQuote(dst, x.name)
		dst = append(dst, ':')
		if x.v.quoted {
			dst = strconv.AppendQuote(dst, string(x.v.b))
		} else {
			dst = append(dst, x.v.b...)
		}
	}
	return append(dst, '}', '\n')
}
