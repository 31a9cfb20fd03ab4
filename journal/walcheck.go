package journal

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// checkWALs refuses a WAL in dir that Pebble's reader would end early
// without an error. Pebble checks a chunk's log number before its checksum
// and takes a record's first chunk numbered one past its WAL for the
// trailer it writes when it closes the WAL (an empty chunk), so a flipped
// bit there would drop every record after it in silence (doc.go,
// "Corruption and torn writes"). A real trailer has no payload; a chunk
// that claims the next number and carries one is corrupt. Like Pebble,
// the check reads up to the first chunk of another number (after it come
// stale chunks of older WALs, in a recycled file or a spare, or zeros).
func checkWALs(dir string) error {
	logs, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil {
		return err
	}
	buf := make([]byte, walBlockSize)
	for _, name := range logs {
		num, err := strconv.ParseUint(strings.TrimSuffix(filepath.Base(name), ".log"), 10, 64)
		if err != nil {
			continue // not a WAL Pebble named
		}
		if err := checkWAL(name, uint32(num), buf); err != nil {
			return err
		}
	}
	return nil
}

// checkWAL reads the WAL name (number num) a block at a time into buf, up
// to the first chunk of another number (where Pebble stops reading) or the
// end of what was written: a WAL on a spare goes on in zeros.
func checkWAL(name string, num uint32, buf []byte) error {
	f, err := os.Open(name)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	defer f.Close()
	bad := -1
	check := func(off, hdr, length int, first bool, logNum uint32) bool {
		if hdr < 11 || logNum == num {
			return true
		}
		if first && logNum == num+1 && length > 0 {
			bad = off
		}
		return false
	}
	for off := 0; ; off += walBlockSize {
		n, err := io.ReadFull(f, buf)
		if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
			return fmt.Errorf("journal: %s: %w", name, err)
		}
		if n == 0 || !walBlock(buf[:n], off, check) || err != nil { // err: a short last block, checked
			break
		}
	}
	if bad >= 0 {
		return fmt.Errorf("%w: %s: the chunk at offset %d is numbered as the next WAL's end, with a payload", ErrCorrupt, name, bad)
	}
	return nil
}

// walBlockSize is the size of a Pebble WAL's blocks: no chunk crosses one.
const walBlockSize = 32 << 10

// walChunks calls f with each chunk of the Pebble WAL b, in order, until f
// returns false or the written part ends (walBlock).
func walChunks(b []byte, f func(off, hdr, length int, first bool, logNum uint32) bool) {
	for blk := 0; blk < len(b); blk += walBlockSize {
		if !walBlock(b[blk:min(blk+walBlockSize, len(b))], blk, f) {
			return
		}
	}
}

// walBlock calls f with each chunk of b, one block of a Pebble WAL at
// offset base: the chunk's offset in the file, its header size, its
// payload length, whether it starts a record, and (headers of 11 bytes or
// more) its log number. A chunk is a header (checksum 4, length 2, type 1;
// the recyclable types add a log number 4, the sync-offset types that and
// a sync offset 8) and its payload; a block's tail too short for a header
// is zeros. It reports whether to read on: not once f returns false, nor
// when the block starts with no chunk (what was written has ended).
func walBlock(b []byte, base int, f func(off, hdr, length int, first bool, logNum uint32) bool) bool {
	for p := 0; p+7 <= len(b); {
		typ := b[p+6]
		var hdr int
		switch {
		case typ >= 1 && typ <= 4:
			hdr = 7
		case typ >= 5 && typ <= 8:
			hdr = 11
		case typ >= 9 && typ <= 12:
			hdr = 19
		}
		if hdr == 0 || p+hdr > len(b) {
			return p > 0 // zeros (or garbage): the rest of the block holds no chunk
		}
		var logNum uint32
		if hdr >= 11 {
			logNum = le.Uint32(b[p+7:])
		}
		length := int(le.Uint16(b[p+4:]))
		// Types 1, 5 and 9 are a whole record, 2, 6 and 10 a first chunk.
		if !f(base+p, hdr, length, (typ-1)%4 <= 1, logNum) {
			return false
		}
		p += hdr + length
	}
	return true
}
