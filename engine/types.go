package engine

// Units. Every quantity the engine handles is an integer in a unit named by
// its type; nothing in this package is a float.
type (
	// Price is a limit price in ticks of its market (price = Price * tickSize).
	Price int64
	// Qty is a base quantity in steps of its market (qty = Qty * stepSize).
	Qty int64
	// Amount is a coin amount in units of the coin's scale (10^-scale).
	Amount int64
)

// MarketID is a market's dense index, stable across restarts (config order;
// new markets are appended). It is part of every order id, so it is < 1024.
type MarketID uint16

// CoinID is a coin's dense index (config order). It is not the coinId shown
// to clients (Coin.ExternalID).
type CoinID uint16

// UserIdx is a user's dense index in the accounts table, assigned in the
// order users are registered (a journaled command), so it is the same on
// every replay.
type UserIdx uint32

// MaxMarkets bounds market ids: an order id is n<<10 | market.
const MaxMarkets = 1 << 10

// MaxFillsPerOrder bounds the matching loop: an incoming order trades with
// at most this many resting orders; what is left after that expires.
const MaxFillsPerOrder = 10000

// Side of an order.
type Side uint8

const (
	Buy  Side = 1
	Sell Side = 2
)

// OrderType of an order.
type OrderType uint8

const (
	Limit  OrderType = 1
	Market OrderType = 2
)

// TIF is a limit order's time in force.
type TIF uint8

const (
	GTC      TIF = 1
	IOC      TIF = 2
	FOK      TIF = 3
	PostOnly TIF = 4 // refused if it would take; for contract markets (docs/DESIGN.md, "Next")
)

// Status of an order. An order is working exactly when NEW or PARTIALLY_FILLED.
type Status uint8

const (
	StatusNew             Status = 1
	StatusPartiallyFilled Status = 2
	StatusFilled          Status = 3
	StatusCanceled        Status = 4
	StatusExpired         Status = 5
)

// Working reports whether an order with this status rests in the book.
func (s Status) Working() bool { return s == StatusNew || s == StatusPartiallyFilled }

// ClientIDMax is the longest client order id the engine stores (contract V2
// allows 40; spot's 36-character bound is checked by the edge).
const ClientIDMax = 40

// ClientID is a client order id stored inline (no allocation).
type ClientID struct {
	N uint8
	B [ClientIDMax]byte
}

// Bytes returns the id's bytes (aliasing c).
func (c *ClientID) Bytes() []byte { return c.B[:c.N] }

// Set copies b into c; it reports false if b is too long.
func (c *ClientID) Set(b []byte) bool {
	if len(b) > ClientIDMax {
		return false
	}
	c.N = uint8(copy(c.B[:], b))
	clear(c.B[c.N:])
	return true
}

// String returns the id as a string (allocates; not for hot paths).
func (c *ClientID) String() string { return string(c.B[:c.N]) }
