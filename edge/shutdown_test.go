package edge

import (
	"testing"
	"time"

	"github.com/weexcore/exchange/config"
)

// TestShutdownRightAfterServe stops the server as a signal right after
// "ready" does: Serve's goroutines may not have reached fasthttp's Serve
// yet, so fasthttp's Shutdown has no listener to close, and a Serve that
// starts after it would accept forever: Shutdown closes the listeners
// itself.
func TestShutdownRightAfterServe(t *testing.T) {
	cfg, err := config.ParseConfig(config.Default)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for i := 0; i < 20; i++ {
		s, closeNode := openServer(t, cfg, dir)
		if err := s.Listen("127.0.0.1:0", "127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
		s.Serve()
		done := make(chan error, 1)
		go func() { done <- s.Shutdown(5 * time.Second) }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("round %d: shutdown: %v", i, err)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("round %d: Shutdown right after Serve did not return in 20 s", i)
		}
		closeNode()
	}
}
