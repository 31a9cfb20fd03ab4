//go:build !cgo

package journal

import "errors"

// Without cgo there is no thread outside Go's scheduler to give real-time
// priority (rtsync.go): the WAL's syncs go through AIO.
type syncThread struct{ tid int }

const rtSyncPrio = 1

var errNoCgo = errors.New("built without cgo")

func startSyncThread(int) (*syncThread, error) { return nil, errNoCgo }
func (*syncThread) syncData(uintptr) error     { return errNoCgo }
func (*syncThread) stop()                      {}
