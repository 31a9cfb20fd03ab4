package edge

import (
	"encoding/json"
	"testing"

	"github.com/weexcore/exchange/config"
	"github.com/weexcore/exchange/engine"
)

func TestScannerOrder(t *testing.T) {
	var d scanner
	var in orderIn
	d.reset([]byte(` {"symbol":"BTC\u0055SDT", "side":"BUY","type":"LIMIT","quantity":"1.5","price":null,"newClientOrderId":"a\/b"} `))
	decodeOrder(&d, &in, true)
	if !d.end() || in.bad != nil {
		t.Fatalf("decode failed: bad=%v", in.bad)
	}
	if string(in.symbol) != "BTCUSDT" || string(in.cid) != "a/b" || in.hasPrice || string(in.qty) != "1.5" {
		t.Errorf("got symbol %q cid %q price %v qty %q", in.symbol, in.cid, in.hasPrice, in.qty)
	}
}

// FuzzDecodeOrder: the request decoder never panics, and accepts only
// documents encoding/json accepts too.
func FuzzDecodeOrder(f *testing.F) {
	for _, s := range []string{`{"symbol":"BTCUSDT","side":"BUY"}`, `{`, `{"a":[1,2,{"b":null}]}`, `"x"`, `{"s":"\ud83d\ude00"}`} {
		f.Add([]byte(s))
	}
	cfg, _ := config.ParseConfig(config.Default)
	_, specs, _ := cfg.EngineSpecs()
	m := &market{spec: specs[0]}
	c := &cred{}
	f.Fuzz(func(t *testing.T, b []byte) {
		var d scanner
		var in orderIn
		d.reset(b)
		decodeOrder(&d, &in, true)
		ok := d.end()
		if ok && !json.Valid(b) {
			t.Errorf("accepted invalid JSON %q", b)
		}
		if ok {
			var cmd engine.Cmd
			buildPlace(m, &in, true, c, &cmd)
		}
	})
}

func TestScannerRejects(t *testing.T) {
	for _, s := range []string{`{"x":01}`, `{"x":1.}`, `{"x":-}`, `{"x":tru}`, `{"x":"a`, `{"x":[1,]}`, `{,}`, `{"x":1 "y":2}`} {
		var d scanner
		var in orderIn
		d.reset([]byte(s))
		decodeOrder(&d, &in, true)
		if d.end() {
			t.Errorf("accepted %s", s)
		}
	}
}

// TestScannerDuplicateKeys: a key given twice in one object is malformed,
// in an order, in a batch's elements and at its top level; the same key in
// different objects is not.
func TestScannerDuplicateKeys(t *testing.T) {
	for _, s := range []string{
		`{"symbol":"BTCUSDT","side":"BUY","quantity":"0.01","quantity":"5"}`,
		`{"side":"BUY","side":"SELL"}`,
		`{"quantity":"1","quan\u0074ity":"5"}`,
	} {
		var d scanner
		var in orderIn
		d.reset([]byte(s))
		decodeOrder(&d, &in, true)
		if d.end() {
			t.Errorf("accepted %s", s)
		}
	}
	var d scanner
	d.reset([]byte(`{"a":{"k":1},"b":{"k":2},"c":[{"k":1},{"k":2}]}`))
	if !d.skip() || !d.end() {
		t.Error("refused the same key in different objects")
	}
	d.reset([]byte(`{"orderList":[],"orderList":[]}`))
	if d.skip() && d.end() {
		t.Error("accepted two orderList keys")
	}
}
