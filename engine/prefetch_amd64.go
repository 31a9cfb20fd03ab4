package engine

import "unsafe"

// prefetchOrder hints that the order at o (its three cache lines) and its
// links at ln will be read soon (PREFETCHT0). It never faults, whatever
// the addresses.
//
//go:noescape
func prefetchOrder(o, ln unsafe.Pointer)

// prefetch1 hints that the cache line at p will be read soon.
//
//go:noescape
func prefetch1(p unsafe.Pointer)
