package journal

import (
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// Scrub reads every key and value of the store, so that Pebble verifies
// the checksum of every block of every table and blob file (it does so on
// every read), and returns the first damage found (ErrCorrupt). Reads of
// live data meet damage only where they look; a scrub finds it before a
// client does. bytesPerSec > 0 paces it (the server scrubs in the
// background); 0 reads at full speed (the audit tool). stop, when
// closed, ends it early with nil.
func (s *Store) Scrub(bytesPerSec int64, stop <-chan struct{}) error {
	var from []byte
	for {
		next, n, err := s.scrubSome(from, 4096)
		if err != nil || next == nil {
			return err
		}
		from = next
		if bytesPerSec > 0 {
			select {
			case <-stop:
				return nil
			case <-time.After(time.Duration(n) * time.Second / time.Duration(bytesPerSec)):
			}
		}
	}
}

// scrubSome reads up to max keys from from on; it returns where to go on
// (nil at the end) and how many bytes it read.
func (s *Store) scrubSome(from []byte, max int) (next []byte, n int64, err error) {
	err = s.viewIter(from, nil, func(it *pebble.Iterator) error {
		k := 0
		for valid := it.First(); valid; valid = it.Next() {
			if k == max {
				next = append([]byte(nil), it.Key()...)
				return nil
			}
			v, err := it.ValueAndErr()
			if err != nil {
				return wrapPebble(fmt.Sprintf("scrub at key %x", it.Key()), err)
			}
			n += int64(len(it.Key()) + len(v))
			k++
		}
		return nil
	})
	return next, n, err
}

// Corruptions returns how many damaged blocks Pebble has met since Open.
func (s *Store) Corruptions() int64 { return s.corruptions.Load() }
