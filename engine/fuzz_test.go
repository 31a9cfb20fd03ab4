package engine_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/big"
	"regexp"
	"testing"
	"time"

	"github.com/weexcore/exchange/engine"
	"github.com/weexcore/exchange/engine/enginetest"
)

var decimalSyntax = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?$`)

// wantParse is ParseFixed's specification, from math/big: the value of s in
// 10^-scale units, or why s is refused. A string with a character that is
// not a digit or a single inner dot is a syntax error whatever else is wrong
// with it; a well-formed string that is both too precise and too large may
// be refused for either reason (both are true), reported in alt.
func wantParse(s string, scale int) (v int64, err, alt error) {
	if s == "" {
		return 0, engine.ErrDecimalEmpty, nil
	}
	if !decimalSyntax.MatchString(s) {
		return 0, engine.ErrDecimalSyntax, nil
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		panic("big.Rat refused " + s)
	}
	r.Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)))
	exact := r.IsInt()
	// the integer part alone, scaled, tells whether it fits
	fl := new(big.Int).Quo(r.Num(), r.Denom())
	fits := fl.IsInt64()
	switch {
	case !exact && !fits:
		return 0, engine.ErrDecimalPrecision, engine.ErrDecimalRange
	case !exact:
		return 0, engine.ErrDecimalPrecision, nil
	case !fits:
		return 0, engine.ErrDecimalRange, nil
	}
	return fl.Int64(), nil, nil
}

// bigFormat is v*10^-scale with exactly scale decimals, from math/big.
func bigFormat(v int64, scale int) string {
	r := new(big.Rat).SetFrac(big.NewInt(v), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil))
	return r.FloatString(scale)
}

func checkParse(t *testing.T, s string, scale int) {
	got, err := engine.ParseFixed([]byte(s), scale)
	want, werr, alt := wantParse(s, scale)
	if werr != nil {
		if err == nil {
			t.Fatalf("ParseFixed(%q, %d): got %d, want error %v", s, scale, got, werr)
		}
		if !errors.Is(err, werr) && (alt == nil || !errors.Is(err, alt)) {
			t.Fatalf("ParseFixed(%q, %d): got error %v, want %v", s, scale, err, werr)
		}
		return
	}
	if err != nil || got != want {
		t.Fatalf("ParseFixed(%q, %d): got %d, %v; want %d", s, scale, got, err, want)
	}
	// formatting round-trips: exactly scale decimals, equal to math/big's
	f := engine.AppendFixed(nil, got, scale)
	if string(f) != bigFormat(got, scale) {
		t.Fatalf("AppendFixed(%d, %d): got %q, want %q", got, scale, f, bigFormat(got, scale))
	}
	if back, err := engine.ParseFixed(f, scale); err != nil || back != got {
		t.Fatalf("ParseFixed(AppendFixed(%d, %d) = %q): got %d, %v; want %d", got, scale, f, back, err, got)
	}
}

// FuzzParseFixed checks ParseFixed and AppendFixed against
// math/big: every accepted string parses to exactly its value, formatting
// round-trips, and every refused string is refused for the right reason.
func FuzzParseFixed(f *testing.F) {
	for _, s := range []string{"", "0", "1", "12.5", "0.001", "1.50", "1.", ".5", ".", "-1", "+1", "1e3", "1E3",
		"NaN", "Inf", " 1", "1 ", "1,5", "1.2.3", "0x10", "00012.3400", "9223372036854775807",
		"9223372036854775808", "92233720368547758.07", "92233720368547758.08", "0.000000000000000001",
		"0.0000000000000000001", "0.0000000000000000000", "99999999999999999999x", "1.123x", "١",
		"99999999999999999999.5", "1\x00"} {
		for _, sc := range []uint8{0, 2, 8, 18} {
			f.Add(s, sc)
		}
	}
	f.Fuzz(func(t *testing.T, s string, sc uint8) {
		checkParse(t, s, int(sc%(engine.MaxScale+1)))
	})
}

// TestParseFixedScaleBounds: a scale outside [0, MaxScale] is refused.
func TestParseFixedScaleBounds(t *testing.T) {
	for _, sc := range []int{-1, engine.MaxScale + 1} {
		if v, err := engine.ParseFixed([]byte("1"), sc); err == nil {
			t.Errorf("ParseFixed(%q, %d): got %d, want an error", "1", sc, v)
		}
	}
}

// FuzzAppendFixed checks formatting of any int64 (negative included)
// against math/big.
func FuzzAppendFixed(f *testing.F) {
	for _, v := range []int64{0, 1, -1, 10, 1500, math.MaxInt64, math.MinInt64, -1500} {
		f.Add(v, uint8(3))
	}
	f.Fuzz(func(t *testing.T, v int64, sc uint8) {
		scale := int(sc % (engine.MaxScale + 1))
		if got, want := string(engine.AppendFixed(nil, v, scale)), bigFormat(v, scale); got != want {
			t.Fatalf("AppendFixed(%d, %d): got %q, want %q", v, scale, got, want)
		}
	})
}

// decodeCmd turns four fuzz bytes into a command over the standard world,
// with small domains so that orders meet, cancels find their orders and
// client ids collide. It looks at ref to aim cancels at working orders.
func decodeCmd(b []byte, users []int64, ref *enginetest.Ref) engine.Cmd {
	{
		ui := int(b[1]>>4) % len(users)
		c := engine.Cmd{UID: users[ui], User: engine.UserIdx(ui), Market: engine.MarketID(b[1] & 3)}
		m := ref.Market(c.Market)
		base := []int64{10_000, 2_000, 5_000, 10_000}[c.Market]
		if m != nil && m.Last > 0 {
			base = m.Last
		}
		switch op := b[0] % 16; {
		case op < 8: // limit
			c.Kind, c.Type = engine.CmdPlace, engine.Limit
			c.Side = engine.Side(1 + op&1)
			c.TIF = engine.TIF(1 + (b[0]>>4)%4)
			c.Price = engine.Price(base + int64(int8(b[2]))/8)
			c.Qty = engine.Qty(1 + int64(b[3]&63)*int64(1+m.MinQty))
			if b[3]&64 != 0 {
				c.Text.Set([]byte{'c', '0' + b[3]>>7, '0' + b[2]&1})
			}
		case op < 10: // market
			c.Kind, c.Type, c.Side = engine.CmdPlace, engine.Market, engine.Side(1+op&1)
			c.Qty = engine.Qty(1 + int64(b[3]&63)*int64(1+m.MinQty))
		case op < 12: // cancel by id of a working order, or by client id
			c.Kind = engine.CmdCancel
			if len(m.Orders) > 0 && op == 10 {
				c.OrderID = m.Orders[int(b[2])%len(m.Orders)].ID
			} else {
				c.Text.Set([]byte{'c', '0' + b[3]>>7, '0' + b[2]&1})
			}
		case op == 12:
			c.Kind = engine.CmdCancelAll
		case op == 13:
			c.Kind, c.Coin, c.Amount = engine.CmdDeposit, engine.CoinID(b[2]%4), engine.Amount(int64(int8(b[3]))<<30)
		case op == 14:
			c.Kind, c.Coin, c.Amount = engine.CmdWithdraw, engine.CoinID(b[2]%4), engine.Amount(int64(b[3])<<32)
		default: // raw values the edge would never send
			c.Kind, c.Type, c.Side, c.TIF = engine.CmdKind(b[2]%8), engine.OrderType(b[2]>>3%4), engine.Side(b[2]>>5%4), engine.TIF(b[3]%6)
			c.Price, c.Qty = engine.Price(int64(int8(b[3]))<<(b[2]%63)), engine.Qty(int64(int8(b[2]))<<(b[3]%63))
			c.OrderID = int64(b[3]) << 10
		}
		return c
	}
}

// FuzzEngine runs command streams decoded from the fuzz input through the
// engine (two shards) and the reference model, comparing every event and
// checking the whole-state invariants after every command.
func FuzzEngine(f *testing.F) {
	f.Add([]byte("\x00\x10\x00\x05\x01\x20\x00\x05"))
	f.Add([]byte("\x00\x10\x10\x45\x00\x10\x10\x45\x01\x20\xf0\x3f\x0a\x10\x00\x00\x08\x20\x00\x3f\x0c\x10\x00\x00"))
	f.Add([]byte("\x30\x11\x00\x01\x31\x21\x00\x01\x09\x31\x00\x3f\x0f\x00\x3e\x7f\x0e\x10\x01\xff\x0d\x10\x02\x80"))
	f.Fuzz(func(t *testing.T, data []byte) {
		// Go's fuzzer has no per-input time limit: a hang would stall it
		// silently. Crash instead, so the input is saved as a crasher.
		watchdog := time.AfterFunc(20*time.Second, func() {
			panic(fmt.Sprintf("FuzzEngine: one input ran for 20s (a hang?): %x", data))
		})
		defer watchdog.Stop()
		h := newHarness(t, 2)
		users := []int64{enginetest.FeeUID, 10, 11, 12}
		for i, uid := range users {
			h.step(engine.Cmd{Kind: engine.CmdAddUser, UID: uid})
			for c := engine.CoinID(0); c < 3; c++ {
				h.step(engine.Cmd{Kind: engine.CmdDeposit, UID: uid, User: engine.UserIdx(i), Coin: c, Amount: 1 << 40})
			}
		}
		for i := 0; i+4 <= len(data) && i < 4*128; i += 4 {
			c := decodeCmd(data[i:i+4], users, h.ref)
			// Prefetch takes any command: market and id unchecked.
			raw := engine.Cmd{Kind: engine.CmdCancel, Market: engine.MarketID(data[i+1]), OrderID: int64(binary.LittleEndian.Uint32(data[i:]))}
			for _, e := range h.cl.All {
				e.Prefetch(&raw, &raw)
			}
			if !h.step(c) {
				t.FailNow()
			}
			if err := h.checkInvariants(); err != nil {
				t.Fatalf("after command %d %s: %v", i/4, fmtCmd(&c), err)
			}
		}
		if d := h.diffState(); d != "" {
			t.Fatalf("final state differs:\n%s", d)
		}
	})
}
