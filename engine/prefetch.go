package engine

import "unsafe"

// Prefetch asks the CPU to start loading what Apply(c) will read first
// when c cancels an order by id: the order and its links. Applying a
// batch, a shard calls it for the next command before applying the
// current one, so that the cache miss of a cancel (a random resting
// order: reading it was BenchmarkMixed's largest single cost) overlaps
// with the work before it instead of stalling the cancel. then, if not
// nil, is the command after c: for it only the order index's slot is
// asked for, so that at the next call the slot is cached and finding
// the order does not stall the prefetch itself. It only reads the engine
// and never faults, so any command is safe; when the command before
// changes the book, the guess goes stale and costs a wasted prefetch.
func (e *Engine) Prefetch(c, then *Cmd) {
	if then != nil {
		if slot := e.indexSlot(then); slot != nil {
			prefetch1(unsafe.Pointer(slot))
		}
	}
	if slot := e.indexSlot(c); slot != nil && *slot != 0 {
		prefetchOrder(unsafe.Pointer(e.pool.get(*slot)), unsafe.Pointer(e.pool.ln(*slot)))
	}
}

// PrefetchAhead is Prefetch for cmds[i+1] and cmds[i+2], those of them
// that exist: what a loop applying cmds calls before applying cmds[i].
func (e *Engine) PrefetchAhead(cmds []Cmd, i int) {
	if i+1 >= len(cmds) {
		return
	}
	var then *Cmd
	if i+2 < len(cmds) {
		then = &cmds[i+2]
	}
	e.Prefetch(&cmds[i+1], then)
}

// indexSlot returns the order index slot where c, if it cancels by order
// id, would find its order, or nil.
func (e *Engine) indexSlot(c *Cmd) *handle {
	if c.Kind != CmdCancel || c.OrderID <= 0 {
		return nil
	}
	m := e.market(c.Market)
	if m == nil || len(m.ids.win) == 0 {
		return nil
	}
	return &m.ids.win[m.ids.slot(c.OrderID)]
}

// prefetchOrder asks for three cache lines from the order's start: the
// whole order (a cancel's view copies all of it) while it is at most 192
// bytes, which this checks at compile time. An order is 96 bytes, two
// lines, but asking for exactly two was not faster (bench/LOG.md,
// "Engine"), and three keep the prefetch whole if the order grows.
const _ = uint(192 - unsafe.Sizeof(order{}))
