//go:build !amd64

package engine

import "unsafe"

// prefetchOrder is a hint; without an implementation for the architecture
// it does nothing.
func prefetchOrder(o, ln unsafe.Pointer) {}

func prefetch1(p unsafe.Pointer) {}
