package journal

import (
	"fmt"
	"hash/crc32"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/weexcore/exchange/internal/walio"
)

// checkWALs verifies every chunk of every WAL in dir before Pebble reads
// them, because Pebble's reader ends a WAL silently at the first chunk it
// cannot read unless a later 32 KiB block proves the chunk was synced: a
// damaged chunk in a WAL's last block (all of a small WAL) would drop
// every acknowledged batch after it without an error. Here a chunk that
// fails its checksum, or zeros where a chunk should be, is:
//
//   - corruption (ErrCorrupt, naming the file and the offsets) when a
//     valid chunk of the WAL, or its EOF trailer, follows it anywhere:
//     records were written after it, so it was whole once;
//   - else the WAL's end: a write cut short by a crash (never
//     acknowledged: answers wait for the sync), or stale bytes of a
//     recycled file. Pebble stops there; this logs how many bytes follow.
//
// A WAL's records also end cleanly at zeros to the end of the file (a
// preallocated or spare file), at the file's end, or at a valid chunk of
// another WAL number (the EOF trailer of a closed WAL, or stale chunks in
// a recycled file). A WAL written onto a spare records the spare's size
// (walio.SizeAttr): shorter than that, it was cut, which no crash does.
func checkWALs(dir string, log *slog.Logger) error {
	names, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil {
		return err
	}
	type wal struct {
		name string
		num  uint64
	}
	var wals []wal
	for _, name := range names {
		num, err := strconv.ParseUint(strings.TrimSuffix(filepath.Base(name), ".log"), 10, 64)
		if err == nil { // else not a WAL Pebble named
			wals = append(wals, wal{name, num})
		}
	}
	sort.Slice(wals, func(i, j int) bool { return wals[i].num < wals[j].num })
	for _, w := range wals {
		b, err := os.ReadFile(w.name)
		if err != nil {
			return fmt.Errorf("journal: %w", err)
		}
		if size, ok := walio.RecordedSize(w.name); ok && int64(len(b)) < size {
			return fmt.Errorf("%w: %s is %d bytes, but it was written onto a spare of %d and no crash shortens one: "+
				"its end was cut off, with whatever acknowledged commands it held; restore the data directory from a backup or a replica",
				ErrCorrupt, w.name, len(b), size)
		}
		if err := checkWAL(w.name, b, uint32(w.num), log); err != nil {
			return err
		}
	}
	return nil
}

// walBlockSize is the size of a Pebble WAL's blocks: no chunk crosses one.
const walBlockSize = 32 << 10

// checkWAL checks the WAL b (file name, number num); see checkWALs.
func checkWAL(name string, b []byte, num uint32, log *slog.Logger) error {
	bad := -1 // offset of the first chunk that cannot be read
	walChunks(b, func(off int, c walChunk) bool {
		switch {
		case c.end: // zeros
			if !c.padding {
				bad = off
			}
			return c.padding
		case !c.valid:
			bad = off
			return false
		case c.logNum != num:
			return false // another WAL's chunk: a clean end
		}
		return true
	})
	if bad < 0 {
		return nil
	}
	end := len(b)
	for end > bad && b[end-1] == 0 {
		end--
	}
	if end <= bad {
		return nil // zeros to the end: the records simply end here
	}
	if next := nextValidChunk(b, bad+1, num); next >= 0 {
		return fmt.Errorf("%w: %s: the chunk at offset %d cannot be read and the WAL's records go on at offset %d, "+
			"so acknowledged commands would be lost: restore the data directory from a backup or a replica "+
			"(starting without this file loses every command it holds)", ErrCorrupt, name, bad, next)
	}
	log.Info("journal: WAL ends before its last bytes: a write cut short by a crash (never acknowledged) or a recycled file's stale data",
		"wal", filepath.Base(name), "offset", bad, "bytes", end-bad)
	return nil
}

// walChunk is one chunk header of a Pebble WAL, as walChunks reads it.
type walChunk struct {
	hdr, length int
	first       bool // starts a record
	logNum      uint32
	syncOffset  uint64 // (sync-chunk formats)
	valid       bool   // its header is whole and its checksum matches
	end         bool   // zeros instead of a header
	padding     bool   // (end) a block's tail too short for a header: skip to the next block
}

// walChunks calls f with each chunk of the Pebble WAL b, in order, until f
// returns false or b ends. A chunk is a header (checksum 4, length 2, type
// 1; the recyclable types add a log number 4, the sync-offset types that
// and a sync offset 8) and its payload, within one block; a block's tail
// too short for a header is zeros.
func walChunks(b []byte, f func(off int, c walChunk) bool) {
	for blk := 0; blk < len(b); blk += walBlockSize {
		block := b[blk:min(blk+walBlockSize, len(b))]
		for p := 0; p+7 <= len(block); {
			c := parseWALChunk(block, p)
			if !f(blk+p, c) || !c.valid {
				if c.padding {
					break // to the next block
				}
				return
			}
			p += c.hdr + c.length
		}
	}
}

// parseWALChunk reads the chunk at block[p:] (p+7 <= len(block)).
func parseWALChunk(block []byte, p int) walChunk {
	var c walChunk
	sum, length, typ := le.Uint32(block[p:]), int(le.Uint16(block[p+4:])), block[p+6]
	if sum == 0 && length == 0 && typ == 0 {
		c.end = true
		c.padding = len(block)-p < 19 && allZero(block[p:])
		return c
	}
	switch {
	case typ >= 1 && typ <= 4:
		c.hdr = 7
	case typ >= 5 && typ <= 8:
		c.hdr = 11
	case typ >= 9 && typ <= 12:
		c.hdr = 19
	default:
		return c
	}
	if p+c.hdr+length > len(block) {
		return c
	}
	c.length = length
	c.first = (typ-1)%4 <= 1 // types 1, 5, 9: a whole record; 2, 6, 10: a first chunk
	if c.hdr >= 11 {
		c.logNum = le.Uint32(block[p+7:])
	}
	if c.hdr >= 19 {
		c.syncOffset = le.Uint64(block[p+11:])
	}
	c.valid = walChecksum(block[p+6:p+c.hdr+length]) == sum
	return c
}

// walChecksum is Pebble's chunk checksum: CRC-32C over the type byte to
// the payload's end, masked.
func walChecksum(b []byte) uint32 {
	c := crc32.Checksum(b, castagnoli)
	return (c>>15 | c<<17) + 0xa282ead8
}

// nextValidChunk returns the offset of the first chunk at or after from
// whose header is whole, whose checksum matches and whose log number is
// num or num+1 (the EOF trailer Pebble writes when it closes the WAL), at
// any byte offset (a damaged chunk's length no longer leads to the next),
// or -1. Stale chunks of a recycled file have older numbers.
func nextValidChunk(b []byte, from int, num uint32) int {
	for p := from; p+11 <= len(b); p++ {
		typ := b[p+6]
		if n := le.Uint32(b[p+7:]); typ < 5 || typ > 12 || n != num && n != num+1 {
			continue
		}
		blk := p / walBlockSize * walBlockSize
		if c := parseWALChunk(b[blk:min(blk+walBlockSize, len(b))], p-blk); c.valid {
			return p
		}
	}
	return -1
}

func allZero(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}
