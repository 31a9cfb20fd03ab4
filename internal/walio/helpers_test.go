package walio

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// newTestFS returns an FS with every tuning on in a new directory, with 1
// MiB spares, closed when the test ends.
func newTestFS(t *testing.T) (*FS, string) {
	t.Helper()
	dir := t.TempDir()
	w, err := New(vfs.Default, dir, 1<<20, All(), testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	return w, dir
}

// testLogger logs into the test's log.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(logWriter{t}, nil))
}

type logWriter struct{ t *testing.T }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// walEnd returns where the bytes written to a file on a spare end: the
// spare's zeros go on past them.
func walEnd(b []byte) int {
	n := len(b)
	for n > 0 && b[n-1] == 0 {
		n--
	}
	return n
}
