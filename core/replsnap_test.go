package core

import (
	"bytes"
	"testing"
)

func TestReplSnapEncoding(t *testing.T) {
	snap := []byte{1, 3, 'j', 'o', 'u', 'r'}
	rows := [][2][]byte{{[]byte("u\x00\x00\x00\x01"), []byte("cmd-1")}, {[]byte("u\x00\x00\x00\x02"), {}}}
	v := encodeReplSnap(snap, rows)
	s, r, err := decodeReplSnap(v)
	if err != nil || !bytes.Equal(s, snap) || len(r) != 2 || !bytes.Equal(r[0][0], rows[0][0]) ||
		!bytes.Equal(r[0][1], rows[0][1]) || !bytes.Equal(r[1][0], rows[1][0]) || len(r[1][1]) != 0 {
		t.Fatalf("round trip: %q %q %v", s, r, err)
	}
	// An older member's raft snapshot is the journal snapshot alone.
	if s, r, err := decodeReplSnap(snap); err != nil || !bytes.Equal(s, snap) || r != nil {
		t.Fatalf("journal snapshot alone: %q %q %v", s, r, err)
	}
	for i := len(replSnapMagic); i < len(v); i++ {
		if _, _, err := decodeReplSnap(v[:i]); err == nil {
			t.Fatalf("truncated to %d of %d bytes: no error", i, len(v))
		}
	}
	if _, _, err := decodeReplSnap(append(v, 0)); err == nil {
		t.Fatal("a byte after the rows: no error")
	}
}
