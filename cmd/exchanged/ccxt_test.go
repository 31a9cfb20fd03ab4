package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestCCXT runs the real ccxt weex client (npm ccxt, pinned in the
// Makefile, installed into .ccxt/) against the server: loadMarkets,
// fetchTime, fetchBalance, createOrder (limit, market), fetchOrder,
// fetchOpenOrders, cancelOrder, fetchOrders, fetchOrderBook and more.
func TestCCXT(t *testing.T) {
	dir, _ := filepath.Abs("../../.ccxt")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "ccxt", "package.json")); err != nil {
		if os.Getenv("CCXT_REQUIRED") != "" {
			t.Fatalf("ccxt is not installed in .ccxt/ (run make ccxt): %v", err)
		}
		t.Skip("ccxt not installed in .ccxt/; `make ccxt` installs it (make test does)")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node not found: %v", err)
	}
	s := startServer(t, "")
	// the counterparty the ccxt user's market buy fills against.
	s.post(&userA, "/api/v3/order", placeBody("BTCUSDT", "SELL", "LIMIT", "1", "31000", ""), nil)
	cmd := exec.Command(node, "testdata/ccxt_conformance.cjs", dir, s.rest, userCCXT.key, userCCXT.secret, userCCXT.passph)
	out, err := cmd.CombinedOutput()
	t.Logf("ccxt:\n%s", out)
	if err != nil {
		t.Fatalf("ccxt conformance failed: %v", err)
	}
}

// TestCCXTSwap runs ccxt's swap (perpetual) methods against the server:
// loadMarkets, fetchBalance swap, setLeverage, setMarginMode, market and
// limit orders, fetchOrder, fetchOpenOrders, cancelOrder, cancelAllOrders,
// fetchPositions, fetchMyTrades, closePosition, fetchTicker,
// fetchOrderBook, fetchOHLCV, fetchLedger (swap) and fetchTransfers, with
// a second ccxt client as the counterparty.
func TestCCXTSwap(t *testing.T) {
	dir, _ := filepath.Abs("../../.ccxt")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "ccxt", "package.json")); err != nil {
		if os.Getenv("CCXT_REQUIRED") != "" {
			t.Fatalf("ccxt is not installed in .ccxt/ (run make ccxt): %v", err)
		}
		t.Skip("ccxt not installed in .ccxt/; `make ccxt` installs it (make test does)")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node not found: %v", err)
	}
	s := startServer(t, "")
	cmd := exec.Command(node, "testdata/ccxt_swap.cjs", dir, s.rest, s.admin, "test-admin",
		userCCXT.key, userCCXT.secret, userCCXT.passph, userA.key, userA.secret, userA.passph)
	out, err := cmd.CombinedOutput()
	t.Logf("ccxt swap:\n%s", out)
	if err != nil {
		t.Fatalf("ccxt swap conformance failed: %v", err)
	}
}
