package engine

// Rules changes. A market's fees, limits, bands and trading switch may
// change while it has orders and trades; its tick and step sizes and its
// coins may not, because its stored prices and quantities are integers of
// those units. A change is a command (CmdSetRules) so that it happens at
// one sequence number of the market's shard, live and on replay alike;
// the spec itself travels beside the command (StageRules), since a Cmd is
// a plain value.

// StageRules gives the next CmdSetRules the spec to install. The shard
// runtime stages it from the request, replay from the journal.
func (e *Engine) StageRules(s *MarketSpec) { e.staged = s }

// SameScale reports whether b keeps a's stored units: tick and step sizes,
// coins and their scales (every integer a market stores means the same).
func SameScale(a, b *MarketSpec) bool {
	return a.ID == b.ID && a.Symbol == b.Symbol && a.Base == b.Base && a.Quote == b.Quote &&
		a.PriceDecimals == b.PriceDecimals && a.TickUnits == b.TickUnits &&
		a.QtyDecimals == b.QtyDecimals && a.StepUnits == b.StepUnits &&
		a.BasePerStep == b.BasePerStep && a.QuotePerTickStep == b.QuotePerTickStep && a.QuoteScale == b.QuoteScale
}

// setRules installs the staged spec for c.Market.
func (e *Engine) setRules(c *Cmd) Reject {
	s := e.staged
	e.staged = nil
	if e.market(c.Market) == nil {
		return RejectUnknownMarket
	}
	if s == nil || s.ID != c.Market || !e.InstallRules(s) {
		return RejectInvalidRules
	}
	e.out.Rules = s
	return OK
}

// InstallRules installs s as the rules of its market, outside the command
// stream: the rules a loaded snapshot was taken under. It reports false
// (and changes nothing) for a market of another shard or a change of a
// stored scale.
func (e *Engine) InstallRules(s *MarketSpec) bool {
	m := e.market(s.ID)
	if m == nil || !SameScale(m.spec, s) {
		return false
	}
	m.spec = s
	m.bandAt = -1 // the band is worked out anew with the new ratios
	if m.ct != nil {
		e.risk.rebuild = true // the maintenance rate may have changed
	}
	return true
}

// Spec returns the rules market id runs under now (nil: not this shard's).
func (e *Engine) Spec(id MarketID) *MarketSpec {
	if m := e.market(id); m != nil {
		return m.spec
	}
	return nil
}
