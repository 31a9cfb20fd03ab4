// Package config is the server's configuration file: its types, their
// validation, and the embedded demo configuration (docs/API.md,
// "Configuration"). It knows the engine's types and nothing of the
// runtime, so the edge, the server command and the benchmark share it.
package config

import (
	"bytes"
	_ "embed"
	stdjson "encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	json "github.com/goccy/go-json"

	"github.com/weexcore/exchange/engine"
)

// Default is the embedded demo configuration (`make run`).
//
//go:embed default.json
var Default []byte

// Config is the server configuration file. Unknown keys are an error
// naming the key's path.
type Config struct {
	AdminToken string `json:"admin_token"`
	FeeUID     int64  `json:"fee_uid"`
	// InsuranceUID is the account that pays contract losses beyond a
	// bankrupt position's margin; required when there are contracts.
	InsuranceUID int64            `json:"insurance_uid"`
	RateLimits   RateLimits       `json:"rate_limits"`
	Coins        []CoinConfig     `json:"coins"`
	Spot         []SpotConfig     `json:"spot"`
	Contracts    []ContractConfig `json:"contracts"`
	Users        []UserConfig     `json:"users"`

	coinByName map[string]int // index into Coins
}

// RateLimits are the request weight budgets per 10 s window.
type RateLimits struct {
	IPWeight  int64 `json:"ip_weight_per_10s"`
	UIDWeight int64 `json:"uid_weight_per_10s"`
	Enabled   bool  `json:"enabled"`
}

// CoinConfig is a coin with its networks (GET /api/v3/coins).
type CoinConfig struct {
	Coin              string          `json:"coin"`
	Name              string          `json:"name"`
	CoinID            int64           `json:"coinId"`
	Scale             int             `json:"scale"`
	DepositAllEnable  bool            `json:"depositAllEnable"`
	WithdrawAllEnable bool            `json:"withdrawAllEnable"`
	NetworkList       []NetworkConfig `json:"networkList"`
}

// NetworkConfig is one network of a coin.
type NetworkConfig struct {
	Network                 string  `json:"network"`
	IsDefault               bool    `json:"isDefault"`
	DepositEnable           bool    `json:"depositEnable"`
	WithdrawEnable          bool    `json:"withdrawEnable"`
	WithdrawFee             string  `json:"withdrawFee"`
	WithdrawMin             string  `json:"withdrawMin"`
	WithdrawIntegerMultiple string  `json:"withdrawIntegerMultiple"`
	MinConfirm              int     `json:"minConfirm"`
	WithdrawTag             bool    `json:"withdrawTag"`
	DepositDust             string  `json:"depositDust"`
	ContractAddress         string  `json:"contractAddress"`
	ContractAddressURL      string  `json:"contractAddressUrl"`
	DepositDesc             *string `json:"depositDesc"`
	WithdrawDesc            *string `json:"withdrawDesc"`
	WithdrawInternalMin     *string `json:"withdrawInternalMin"`
}

// SpotConfig is a spot market: the engine's fields plus display settings.
type SpotConfig struct {
	engine.SpotConfig
	EnableDisplay     bool   `json:"enableDisplay"`
	DisplayDigitMerge string `json:"displayDigitMerge"`
	DisplayNew        bool   `json:"displayNew"`
	DisplayHot        bool   `json:"displayHot"`
}

// ContractConfig is a perpetual contract market (docs/API.md,
// "Configuration"): engine.ContractConfig's fields.
type ContractConfig struct {
	engine.ContractConfig
}

// UserConfig is a user created at start-up with fixed credentials.
type UserConfig struct {
	UID         int64             `json:"uid"`
	APIKey      string            `json:"apiKey"`
	SecretKey   string            `json:"secretKey"`
	Passphrase  string            `json:"passphrase"`
	Broker      bool              `json:"broker"`
	ReferrerUID int64             `json:"referrerUid"`
	RebateRate  string            `json:"rebateRate"` // a broker's share of its referred users' fees, "0" to "1"
	Deposits    map[string]string `json:"deposits"`
	// FuturesDeposits are credited like Deposits, into the futures wallets.
	FuturesDeposits map[string]string `json:"futuresDeposits"`
	UIDWeight       int64             `json:"uid_weight_per_10s"`

	Rate int64 `json:"-"` // RebateRate in engine.RateOne units
}

// ParseRebateRate parses a broker's rebate rate, a decimal from 0 to 1
// with at most engine.RateDecimals decimals ("" is 0), into RateOne units.
func ParseRebateRate(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	v, err := engine.ParseFixed([]byte(s), engine.RateDecimals)
	if err != nil || v < 0 || v > engine.RateOne {
		return 0, fmt.Errorf("%q is not a rate from 0 to 1 with at most %d decimals", s, engine.RateDecimals)
	}
	return v, nil
}

// LoadConfig reads a config file; an empty path means the embedded default.
func LoadConfig(path string) (*Config, error) {
	b := Default
	if path != "" {
		var err error
		if b, err = os.ReadFile(path); err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
	}
	return ParseConfig(b)
}

// ParseConfig parses and checks a config document.
func ParseConfig(b []byte) (*Config, error) {
	c := &Config{}
	if err := Decode(b, c); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if err := c.check(); err != nil {
		return nil, err
	}
	return c, nil
}

// Decode decodes doc, one JSON value, into v strictly, as the config and
// the admin API's bodies are decoded: goccy/go-json's decoder refuses keys
// that v's types do not declare (matched as encoding/json matches them,
// case-insensitively), a key given twice in one object is refused (two
// readers could take either value), nothing may follow the value, and an
// error names the path of the key it is at ("spot[0].tickSizee: unknown
// key").
func Decode(doc []byte, v any) error {
	if p := dupKey(doc); p != "" {
		return fmt.Errorf("%s: key given twice", p)
	}
	d := json.NewDecoder(bytes.NewReader(doc))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return decodeError(doc, d.InputOffset(), err)
	}
	if d.More() {
		return errors.New("invalid JSON: data after the top-level value")
	}
	return nil
}

// unknownField is how goccy/go-json words an unknown key. The error has
// no type and no path, and its key is not reliable (a key that is a prefix
// of a declared one is reported as the declared one: "referrer" as
// "referrerUid"); but the decoder stops just past the unknown key's colon,
// so keyPath finds the key and its path at that offset. TestConfigErrors
// pins both.
const unknownField = "json: unknown field "

// decodeError names the path of the key a decoder error is at, when the
// error tells where that is.
func decodeError(doc []byte, off int64, err error) error {
	if key, ok := strings.CutPrefix(err.Error(), unknownField); ok {
		if p := keyPath(doc, off); p != "" {
			return fmt.Errorf("%s: unknown key", p)
		}
		return fmt.Errorf("%s: unknown key", strings.Trim(key, `"`))
	}
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		if p := keyPath(doc, te.Offset); p != "" {
			return fmt.Errorf("%s: %w", p, err)
		}
		return err
	case errors.As(err, &se):
		if p := keyPath(doc, se.Offset); p != "" {
			return fmt.Errorf("invalid JSON at %s: %w", p, err)
		}
	}
	return fmt.Errorf("invalid JSON: %w", err)
}

// keyPath returns the path (spot[0].tickSize) of the last object key that
// ends before off in doc.
func keyPath(doc []byte, off int64) (path string) {
	walkKeys(doc, func(k keyAt) bool {
		if k.end >= off {
			return false
		}
		path = k.path()
		return true
	})
	return path
}

// dupKey returns the path of the first key given twice in one object of
// doc (in any case: the decoder matches keys so), or "".
func dupKey(doc []byte) (path string) {
	walkKeys(doc, func(k keyAt) bool {
		l := &k.stack[len(k.stack)-1]
		for _, seen := range l.seen {
			if strings.EqualFold(seen, l.key) {
				path = k.path()
				return false
			}
		}
		l.seen = append(l.seen, l.key)
		return true
	})
	return path
}

// keyLevel is one open object or array of a document being walked.
type keyLevel struct {
	array   bool
	wantKey bool     // object: the next token is a key or '}'
	key     string   // object: the current key
	seen    []string // object: its keys so far (dupKey)
	index   int      // array: the current element
}

// keyAt is a key walkKeys read: the levels open (the last one holds the
// key) and where the key ends in the document.
type keyAt struct {
	stack []keyLevel
	end   int64
}

func (k keyAt) path() string {
	var b strings.Builder
	for i, l := range k.stack {
		switch {
		case l.array:
			fmt.Fprintf(&b, "[%d]", l.index)
		case i > 0:
			b.WriteString("." + l.key)
		default:
			b.WriteString(l.key)
		}
	}
	return b.String()
}

// walkKeys calls f with every object key of doc in order until f returns
// false or doc ends (or is malformed), reading doc as tokens with the
// standard library's decoder: it knows keys from values by the JSON
// alone, not by the config's types.
func walkKeys(doc []byte, f func(keyAt) bool) {
	var stack []keyLevel
	valueDone := func() {
		if n := len(stack); n > 0 && !stack[n-1].array {
			stack[n-1].wantKey = true
		}
	}
	d := stdjson.NewDecoder(bytes.NewReader(doc))
	for {
		t, err := d.Token()
		if err != nil {
			return
		}
		if c, ok := t.(stdjson.Delim); ok && (c == '}' || c == ']') {
			stack = stack[:len(stack)-1]
			valueDone()
			continue
		}
		if n := len(stack); n > 0 && stack[n-1].wantKey {
			stack[n-1].key, _ = t.(string)
			stack[n-1].wantKey = false
			if !f(keyAt{stack, d.InputOffset()}) {
				return
			}
			continue
		}
		if n := len(stack); n > 0 && stack[n-1].array {
			stack[n-1].index++
		}
		switch t {
		case stdjson.Delim('{'):
			stack = append(stack, keyLevel{wantKey: true})
		case stdjson.Delim('['):
			stack = append(stack, keyLevel{array: true, index: -1})
		default:
			valueDone()
		}
	}
}

func (c *Config) check() error {
	if c.FeeUID <= 0 {
		return fmt.Errorf("config: fee_uid: must be a positive uid")
	}
	if len(c.Contracts) > 0 && (c.InsuranceUID <= 0 || c.InsuranceUID == c.FeeUID) {
		return fmt.Errorf("config: insurance_uid: contracts need a positive insurance account uid other than fee_uid")
	}
	if c.RateLimits.Enabled && (c.RateLimits.IPWeight <= 0 || c.RateLimits.UIDWeight <= 0) {
		return fmt.Errorf("config: rate_limits: weights must be positive when enabled")
	}
	c.coinByName = map[string]int{}
	for i, co := range c.Coins {
		if co.Coin == "" || strings.ToUpper(co.Coin) != co.Coin {
			return fmt.Errorf("config: coins[%d].coin: must be a non-empty upper-case name", i)
		}
		if _, dup := c.coinByName[co.Coin]; dup {
			return fmt.Errorf("config: coins[%d].coin: duplicate coin %s", i, co.Coin)
		}
		if co.Scale < 0 || co.Scale > 18 {
			return fmt.Errorf("config: coins[%d].scale: must be in [0, 18]", i)
		}
		for j, n := range co.NetworkList {
			for _, s := range []string{n.WithdrawFee, n.WithdrawMin, n.WithdrawIntegerMultiple, n.DepositDust} {
				if s != "" {
					if _, _, err := engine.Decimals(s); err != nil {
						return fmt.Errorf("config: coins[%d].networkList[%d]: %q is not a plain decimal", i, j, s)
					}
				}
			}
		}
		c.coinByName[co.Coin] = i
	}
	syms := map[string]bool{}
	for i, s := range c.Spot {
		if s.Symbol == "" || syms[s.Symbol] {
			return fmt.Errorf("config: spot[%d].symbol: empty or duplicate symbol %q", i, s.Symbol)
		}
		syms[s.Symbol] = true
		if _, ok := c.coinByName[s.BaseAsset]; !ok {
			return fmt.Errorf("config: spot[%d].baseAsset: unknown coin %q", i, s.BaseAsset)
		}
		if _, ok := c.coinByName[s.QuoteAsset]; !ok {
			return fmt.Errorf("config: spot[%d].quoteAsset: unknown coin %q", i, s.QuoteAsset)
		}
	}
	if len(c.Spot) == 0 {
		return fmt.Errorf("config: spot: at least one market is needed")
	}
	if len(c.Spot) > int(engine.ContractBase) || len(c.Contracts) > int(engine.MaxMarkets-engine.ContractBase) {
		return fmt.Errorf("config: at most %d spot markets and %d contracts", engine.ContractBase, engine.MaxMarkets-engine.ContractBase)
	}
	v3, ids := map[string]bool{}, map[int64]bool{}
	for i, k := range c.Contracts {
		if k.Symbol == "" || v3[k.Symbol] {
			return fmt.Errorf("config: contracts[%d].symbol: empty or duplicate symbol %q", i, k.Symbol)
		}
		v3[k.Symbol] = true
		if k.V2Symbol == "" || syms[k.V2Symbol] {
			return fmt.Errorf("config: contracts[%d].v2Symbol: empty or duplicate symbol %q", i, k.V2Symbol)
		}
		syms[k.V2Symbol] = true
		if k.ContractID <= 0 || ids[k.ContractID] {
			return fmt.Errorf("config: contracts[%d].contractId: must be positive and unique", i)
		}
		ids[k.ContractID] = true
		for _, a := range [...]struct{ field, coin string }{{"baseAsset", k.BaseAsset}, {"quoteAsset", k.QuoteAsset}, {"marginAsset", k.MarginAsset}} {
			if _, ok := c.coinByName[a.coin]; !ok {
				return fmt.Errorf("config: contracts[%d].%s: unknown coin %q", i, a.field, a.coin)
			}
		}
		if k.IndexSymbol != "" && !c.hasSpot(k.IndexSymbol) {
			return fmt.Errorf("config: contracts[%d].indexSymbol: %q is not a spot market of this exchange", i, k.IndexSymbol)
		}
	}
	uids, keys := map[int64]bool{}, map[string]bool{}
	for i, u := range c.Users {
		if u.UID <= 0 || uids[u.UID] {
			return fmt.Errorf("config: users[%d].uid: must be positive and unique", i)
		}
		uids[u.UID] = true
		if u.APIKey == "" || keys[u.APIKey] || u.SecretKey == "" || u.Passphrase == "" {
			return fmt.Errorf("config: users[%d]: apiKey (unique), secretKey and passphrase are required", i)
		}
		keys[u.APIKey] = true
		rate, err := ParseRebateRate(u.RebateRate)
		if err != nil {
			return fmt.Errorf("config: users[%d].rebateRate: %v", i, err)
		}
		if rate != 0 && !u.Broker {
			return fmt.Errorf("config: users[%d].rebateRate: only a broker has one", i)
		}
		c.Users[i].Rate = rate
		if u.ReferrerUID < 0 || u.ReferrerUID == u.UID {
			return fmt.Errorf("config: users[%d].referrerUid: must be another user's uid, or 0", i)
		}
		if u.UIDWeight < 0 {
			return fmt.Errorf("config: users[%d].uid_weight_per_10s: must not be negative", i)
		}
		for name, deps := range map[string]map[string]string{"deposits": u.Deposits, "futuresDeposits": u.FuturesDeposits} {
			for coin, amt := range deps {
				ci, ok := c.coinByName[coin]
				if !ok {
					return fmt.Errorf("config: users[%d].%s.%s: unknown coin", i, name, coin)
				}
				if v, err := engine.ParseFixed([]byte(amt), c.Coins[ci].Scale); err != nil || v <= 0 {
					return fmt.Errorf("config: users[%d].%s.%s: %q is not a positive amount at scale %d", i, name, coin, amt, c.Coins[ci].Scale)
				}
			}
		}
		if u.UID == c.InsuranceUID || u.UID == c.FeeUID {
			return fmt.Errorf("config: users[%d].uid: %d is a system account (fee_uid or insurance_uid)", i, u.UID)
		}
	}
	_, _, err := c.EngineSpecs()
	return err
}

func (c *Config) hasSpot(sym string) bool {
	for _, s := range c.Spot {
		if s.Symbol == sym {
			return true
		}
	}
	return false
}

// EngineSpecs converts the coins and markets to the engine's types: coins
// with dense ids in config order; markets indexed by MarketID, spot ones
// in config order from 0, contracts from engine.ContractBase (nil
// between). Use Spot and ContractSpec to walk them by kind.
func (c *Config) EngineSpecs() ([]engine.Coin, []*engine.MarketSpec, error) {
	coins := make([]engine.Coin, len(c.Coins))
	for i, co := range c.Coins {
		coins[i] = engine.Coin{ID: engine.CoinID(i), Name: co.Coin, ExternalID: co.CoinID, Scale: co.Scale}
	}
	n := len(c.Spot)
	if len(c.Contracts) > 0 {
		n = int(engine.ContractBase) + len(c.Contracts)
	}
	specs := make([]*engine.MarketSpec, n)
	for i, s := range c.Spot {
		sp, err := engine.NewMarketSpec(engine.MarketID(i), s.SpotConfig,
			coins[c.coinByName[s.BaseAsset]], coins[c.coinByName[s.QuoteAsset]])
		if err != nil {
			return nil, nil, fmt.Errorf("config: spot[%d]: %w", i, err)
		}
		specs[i] = sp
	}
	for i, k := range c.Contracts {
		sp, err := engine.NewContractSpec(engine.ContractBase+engine.MarketID(i), k.ContractConfig,
			coins[c.coinByName[k.BaseAsset]], coins[c.coinByName[k.QuoteAsset]])
		if err != nil {
			return nil, nil, fmt.Errorf("config: contracts[%d]: %w", i, err)
		}
		specs[engine.ContractBase+engine.MarketID(i)] = sp
	}
	return coins, specs, nil
}
