package journal

import (
	"fmt"
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
	for _, name := range logs {
		num, err := strconv.ParseUint(strings.TrimSuffix(filepath.Base(name), ".log"), 10, 64)
		if err != nil {
			continue // not a WAL Pebble named
		}
		b, err := os.ReadFile(name)
		if err != nil {
			return fmt.Errorf("journal: %v", err)
		}
		bad := -1
		walChunks(b, func(off, hdr, length int, first bool, logNum uint32) bool {
			if hdr < 11 || logNum == uint32(num) {
				return true
			}
			// The first chunk of another number: where Pebble stops reading.
			if first && logNum == uint32(num)+1 && length > 0 {
				bad = off
			}
			return false
		})
		if bad >= 0 {
			return fmt.Errorf("journal: %s is corrupt: the chunk at offset %d is numbered as the next WAL's end, with a payload", name, bad)
		}
	}
	return nil
}

// walChunks calls f with each chunk of the Pebble WAL b, in order, until
// f returns false: its offset, header size, payload length, whether it
// starts a record, and (headers of 11 bytes or more) its log number. A
// WAL is read in 32 KiB blocks of chunks, each a header (checksum 4,
// length 2, type 1; the recyclable types add a log number 4, the
// sync-offset types that and a sync offset 8) and its payload; a block's
// tail too short for a header, and what follows the last chunk, are zeros.
func walChunks(b []byte, f func(off, hdr, length int, first bool, logNum uint32) bool) {
	const block = 32 << 10
	for blk := 0; blk < len(b); blk += block {
		lim := min(blk+block, len(b))
		for p := blk; p+7 <= lim; {
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
			if hdr == 0 || p+hdr > lim {
				break // zeros (or garbage): the rest of the block holds no chunk
			}
			var logNum uint32
			if hdr >= 11 {
				logNum = le.Uint32(b[p+7:])
			}
			length := int(le.Uint16(b[p+4:]))
			// Types 1, 5 and 9 are a whole record, 2, 6 and 10 a first chunk.
			if !f(p, hdr, length, (typ-1)%4 <= 1, logNum) {
				return
			}
			p += hdr + length
		}
	}
}
