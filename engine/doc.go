// Package engine is the exchange's deterministic matching core.
//
// An Engine owns the books and working orders of some markets (one shard)
// and applies commands one at a time: Apply(cmd, seq, timeMs, out). It has
// no goroutines, no clock, no randomness and no floats; everything it
// decides follows from its state and the command, so replaying a journal
// rebuilds the same state. Balances live in an Accounts table shared by all
// engines, changed only by atomic add and CAS; the one decision an engine
// takes from that shared state (did a reservation or withdrawal succeed) is
// recorded in the command (Cmd.Dec) and replayed, not re-decided.
//
// Units: prices are int64 ticks (Price), quantities int64 steps (Qty), coin
// amounts int64 units of the coin's scale (Amount). A market's config is
// refused unless tick*step is a whole number of quote units, so notionals
// are exact; products use 128-bit intermediates and overflow is a reject.
// Fees round down.
//
// Rules (docs/API.md, "Spot trading" and "Decisions SPEC left to us"):
// tick/step multiples, min/max quantity, price band around the last trade,
// market orders bounded by a protection price and a size cap,
// GTC/IOC/FOK/post-only, price-time priority, trades at the resting price,
// self-trade prevention by expiring the resting order, reservations on
// place released on fill/expiry/cancel, maker/taker fees in the asset
// received credited to the fee account, client order ids unique among a
// user's working orders in a market, order ids n<<10|market (unique,
// increasing per market, below 2^53).
//
// Events: every Apply fills an Out with the reject reason (OK when
// accepted), one OrderView per order it changed, one Trade per fill and one
// Bill (finance record) per change of a balance's total: per fill, the
// buyer's trade_out (quote) and trade_in (base, less fee), the seller's
// trade_out (base) and trade_in (quote, less fee); then, once per command
// after its last fill, the fee account's fee_income in base and in quote
// (when non-zero), each the sum over the command's fills, with FillQty and
// FillQuote the command's total traded quantity and value. The fee account
// is in every fill, so billing it per command saves two atomic adds and two
// bills per fill; its total still changes only with a bill.
//
// A fill's four bills are carried by its Trade (the users, coins, base
// amount and the four totals after; Trade.AppendBills writes them), not
// written out in Out.Bills, which holds the other bills; Out.AppendBills
// gives all of a command's bills in order. Writing four 80-byte records
// per fill cost ~6 ns of a ~110 ns command.
//
// The book does not know what a fill does to accounts beyond Engine.fill,
// so contract markets can reuse books, pool and matching with their own
// settlement.
package engine
