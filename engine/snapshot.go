package engine

// AppendSnapshot appends the accounts table (users, cells, net per coin).
// Call it only while no shard is applying (at a barrier) and after Flush.
func (a *Accounts) AppendSnapshot(dst []byte) []byte { panic("engine: TODO") }

// LoadSnapshot restores a table written by AppendSnapshot into an empty one.
func (a *Accounts) LoadSnapshot(b []byte) error { panic("engine: TODO") }

// AppendSnapshot appends the state of every market e owns.
func (e *Engine) AppendSnapshot(dst []byte) []byte { panic("engine: TODO") }

// LoadSnapshot restores markets written by AppendSnapshot into a new engine.
func (e *Engine) LoadSnapshot(b []byte) error { panic("engine: TODO") }

// StateHash is a deterministic hash of the whole state: every market's book,
// orders and counters in market id order, then the accounts. It does not
// depend on how markets are spread over engines.
func StateHash(acc *Accounts, engines []*Engine) [32]byte { panic("engine: TODO") }

// CheckInvariants checks the whole state (after Flush): books not crossed,
// level aggregates, reservations equal to frozen balances, no negative
// cell, money conserved per coin.
func CheckInvariants(acc *Accounts, engines []*Engine) error { panic("engine: TODO") }
