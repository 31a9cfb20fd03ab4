package engine

import "fmt"

// CoinConfig is a coin as the config file gives it (docs/API.md,
// "Configuration"). Fields the engine does not use (networks) are kept by
// the edge.
type CoinConfig struct {
	Coin   string `json:"coin"`
	CoinID int64  `json:"coinId"`
	Scale  int    `json:"scale"`
}

// SpotConfig is a spot market as the config file gives it (docs/API.md,
// "Configuration").
type SpotConfig struct {
	Symbol                   string `json:"symbol"`
	BaseAsset                string `json:"baseAsset"`
	QuoteAsset               string `json:"quoteAsset"`
	TickSize                 string `json:"tickSize"`
	StepSize                 string `json:"stepSize"`
	MinTradeAmount           string `json:"minTradeAmount"`
	MaxTradeAmount           string `json:"maxTradeAmount"`
	TakerFeeRate             string `json:"takerFeeRate"`
	MakerFeeRate             string `json:"makerFeeRate"`
	BuyLimitPriceRatio       string `json:"buyLimitPriceRatio"`
	SellLimitPriceRatio      string `json:"sellLimitPriceRatio"`
	MarketBuyLimitSize       string `json:"marketBuyLimitSize"`
	MarketSellLimitSize      string `json:"marketSellLimitSize"`
	MarketFallbackPriceRatio string `json:"marketFallbackPriceRatio"`
	EnableTrade              bool   `json:"enableTrade"`
}

// Coin is a coin as the engine uses it.
type Coin struct {
	ID         CoinID
	Name       string
	ExternalID int64 // coinId shown to clients
	Scale      int   // amounts are in 10^-Scale units
}

// MarketSpec is a spot market's parsed, checked rules. All fields are
// integers in the units the engine computes with.
type MarketSpec struct {
	ID     MarketID
	Symbol string
	Base   CoinID
	Quote  CoinID

	PriceDecimals int   // decimals of tickSize: prices print with these
	TickUnits     int64 // tickSize in 10^-PriceDecimals units
	QtyDecimals   int   // decimals of stepSize: quantities print with these
	StepUnits     int64 // stepSize in 10^-QtyDecimals units

	// BasePerStep is one step in base coin units; QuotePerTickStep is one
	// tick times one step in quote coin units. Both are whole numbers (the
	// config is refused otherwise), so every notional is exact.
	BasePerStep      Amount
	QuotePerTickStep Amount
	QuoteScale       int

	MinQty, MaxQty              Qty
	MarketBuyMax, MarketSellMax Qty
	TakerRate, MakerRate        int64 // RateOne = 100%
	BuyBand, SellBand           int64 // RateOne = 100%
	FallbackRatio               int64 // RateOne = 100%
	EnableTrade                 bool

	// Contract markets only (NewContractSpec): Symbol is the V2 name.
	Contract                     bool
	V3Symbol                     string
	ContractID                   int64
	Margin                       CoinID // the futures wallet margin, PnL and fees are in
	MaxPosQty                    Qty    // per position side
	MaintRate                    int64  // RateOne = 100%
	MinLev, MaxLev, DefLev       int32
	IndexSymbol                  string
	FundingHours                 int32
	InterestRate, MaxFundingRate int64 // RateOne = 100%
}

// NewMarketSpec checks c against the coins and converts it. The error names
// the field that is wrong.
func NewMarketSpec(id MarketID, c SpotConfig, base, quote Coin) (*MarketSpec, error) {
	if id >= MaxMarkets {
		return nil, fmt.Errorf("engine: market %s: more than %d markets", c.Symbol, MaxMarkets)
	}
	m := &MarketSpec{ID: id, Symbol: c.Symbol, Base: base.ID, Quote: quote.ID,
		QuoteScale: quote.Scale, EnableTrade: c.EnableTrade}
	var err error
	field := func(name, s string) (int, int64) {
		if err != nil {
			return 0, 0
		}
		sc, u, e := Decimals(s)
		if e != nil || u <= 0 {
			err = fmt.Errorf("engine: market %s: %s %q must be a positive decimal", c.Symbol, name, s)
		}
		return sc, u
	}
	m.PriceDecimals, m.TickUnits = field("tickSize", c.TickSize)
	m.QtyDecimals, m.StepUnits = field("stepSize", c.StepSize)
	if err != nil {
		return nil, err
	}
	if m.QtyDecimals > base.Scale {
		return nil, fmt.Errorf("engine: market %s: stepSize %s is finer than %s's scale %d", c.Symbol, c.StepSize, base.Name, base.Scale)
	}
	m.BasePerStep = Amount(m.StepUnits * pow10[base.Scale-m.QtyDecimals])
	if m.PriceDecimals+m.QtyDecimals > quote.Scale {
		return nil, fmt.Errorf("engine: market %s: tickSize*stepSize is finer than %s's scale %d", c.Symbol, quote.Name, quote.Scale)
	}
	q, ok := mul(m.TickUnits, m.StepUnits)
	if ok {
		q, ok = mul(q, pow10[quote.Scale-m.PriceDecimals-m.QtyDecimals])
	}
	if !ok {
		return nil, fmt.Errorf("engine: market %s: tickSize*stepSize overflows", c.Symbol)
	}
	m.QuotePerTickStep = Amount(q)

	qty := func(name, s string, up bool) Qty {
		if err != nil {
			return 0
		}
		u, e := ParseFixed([]byte(s), m.QtyDecimals)
		if e != nil {
			// a bound finer than the step: round it to steps inward
			u, e = ParseFixed([]byte(s), MaxScale)
			if e != nil || MaxScale < m.QtyDecimals {
				err = fmt.Errorf("engine: market %s: %s %q: %v", c.Symbol, name, s, e)
				return 0
			}
			step := m.StepUnits * pow10[MaxScale-m.QtyDecimals]
			n := u / step
			if up && u%step != 0 {
				n++
			}
			return Qty(n)
		}
		n := u / m.StepUnits
		if up && u%m.StepUnits != 0 {
			n++
		}
		return Qty(n)
	}
	m.MinQty = qty("minTradeAmount", c.MinTradeAmount, true)
	m.MaxQty = qty("maxTradeAmount", c.MaxTradeAmount, false)
	m.MarketBuyMax = qty("marketBuyLimitSize", c.MarketBuyLimitSize, false)
	m.MarketSellMax = qty("marketSellLimitSize", c.MarketSellLimitSize, false)
	if err != nil {
		return nil, err
	}
	if m.MinQty < 1 {
		m.MinQty = 1
	}
	if m.MaxQty < m.MinQty {
		return nil, fmt.Errorf("engine: market %s: maxTradeAmount below minTradeAmount", c.Symbol)
	}
	rate := func(name, s string) int64 {
		if err != nil {
			return 0
		}
		r, e := ParseFixed([]byte(s), RateDecimals)
		if e != nil || r > RateOne {
			err = fmt.Errorf("engine: market %s: %s %q must be a decimal in [0, 1] with at most %d decimals", c.Symbol, name, s, RateDecimals)
		}
		return r
	}
	m.TakerRate = rate("takerFeeRate", c.TakerFeeRate)
	m.MakerRate = rate("makerFeeRate", c.MakerFeeRate)
	m.BuyBand = rate("buyLimitPriceRatio", c.BuyLimitPriceRatio)
	m.SellBand = rate("sellLimitPriceRatio", c.SellLimitPriceRatio)
	m.FallbackRatio = rate("marketFallbackPriceRatio", c.MarketFallbackPriceRatio)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// AppendPrice appends p with the market's price precision.
func (m *MarketSpec) AppendPrice(dst []byte, p Price) []byte {
	return AppendFixed(dst, int64(p)*m.TickUnits, m.PriceDecimals)
}

// AppendQty appends q with the market's quantity precision.
func (m *MarketSpec) AppendQty(dst []byte, q Qty) []byte {
	return AppendFixed(dst, int64(q)*m.StepUnits, m.QtyDecimals)
}

// ParsePrice parses a price string into ticks.
func (m *MarketSpec) ParsePrice(s []byte) (Price, error) {
	u, err := ParseFixed(s, m.PriceDecimals)
	if err != nil {
		return 0, err
	}
	if u%m.TickUnits != 0 {
		return 0, ErrDecimalPrecision
	}
	return Price(u / m.TickUnits), nil
}

// ParseQty parses a quantity string into steps.
func (m *MarketSpec) ParseQty(s []byte) (Qty, error) {
	u, err := ParseFixed(s, m.QtyDecimals)
	if err != nil {
		return 0, err
	}
	if u%m.StepUnits != 0 {
		return 0, ErrDecimalPrecision
	}
	return Qty(u / m.StepUnits), nil
}

// Notional returns p*q in quote units, false on overflow.
func (m *MarketSpec) Notional(p Price, q Qty) (Amount, bool) {
	a, ok := mul(int64(p), int64(q))
	if !ok {
		return 0, false
	}
	a, ok = mul(a, int64(m.QuotePerTickStep))
	return Amount(a), ok
}

// BaseValue returns x base coin units valued at price p in quote coin
// units, rounded down (x * p * QuotePerTickStep / BasePerStep), false on
// overflow.
func (m *MarketSpec) BaseValue(x Amount, p Price) (Amount, bool) {
	pq, ok := mul(int64(p), int64(m.QuotePerTickStep))
	if !ok || x < 0 || m.BasePerStep <= 0 {
		return 0, false
	}
	v, ok := mulDiv(int64(x), pq, int64(m.BasePerStep))
	return Amount(v), ok
}

// BaseAmount returns q in base coin units, false on overflow.
func (m *MarketSpec) BaseAmount(q Qty) (Amount, bool) {
	a, ok := mul(int64(q), int64(m.BasePerStep))
	return Amount(a), ok
}

// Fee returns floor(amount*rate): fees round down, never above the rate.
func Fee(amount Amount, rate int64) Amount {
	f, _ := mulRate(int64(amount), rate) // cannot overflow: rate <= RateOne
	return Amount(f)
}

// ConvertPrice converts p, in ticks of market from, to ticks of market to
// (the index of a contract from its spot market's price), rounded down; 0
// when it does not fit.
func ConvertPrice(p Price, from, to *MarketSpec) Price {
	// p × from.tick / to.tick, ticks being TickUnits at PriceDecimals
	d := from.PriceDecimals - to.PriceDecimals
	num, den := int64(p), to.TickUnits
	var ok bool
	if num, ok = mul(num, from.TickUnits); !ok {
		return 0
	}
	if d < 0 {
		if num, ok = mul(num, pow10[-d]); !ok {
			return 0
		}
	} else if den, ok = mul(den, pow10[d]); !ok {
		return 0
	}
	return Price(num / den)
}
