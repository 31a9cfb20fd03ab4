package edge

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/weexcore/exchange/engine"
)

// DefaultConfig is the embedded demo configuration (`make run`).
//
//go:embed default.json
var DefaultConfig []byte

// Config is the server configuration file (SPEC §1). Unknown keys are an
// error naming the key's path.
type Config struct {
	AdminToken string       `json:"admin_token"`
	FeeUID     int64        `json:"fee_uid"`
	RateLimits RateLimits   `json:"rate_limits"`
	Coins      []CoinConfig `json:"coins"`
	Spot       []SpotConfig `json:"spot"`
	Contracts  []any        `json:"contracts"`
	Users      []UserConfig `json:"users"`

	coinByName map[string]int // index into Coins
}

// RateLimits are the request weight budgets per 10 s window (SPEC §4).
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

// UserConfig is a user created at start-up with fixed credentials.
type UserConfig struct {
	UID         int64             `json:"uid"`
	APIKey      string            `json:"apiKey"`
	SecretKey   string            `json:"secretKey"`
	Passphrase  string            `json:"passphrase"`
	Broker      bool              `json:"broker"`
	ReferrerUID int64             `json:"referrerUid"`
	Deposits    map[string]string `json:"deposits"`
	UIDWeight   int64             `json:"uid_weight_per_10s"`
}

// LoadConfig reads a config file; an empty path means the embedded default.
func LoadConfig(path string) (*Config, error) {
	b := DefaultConfig
	if path != "" {
		var err error
		if b, err = os.ReadFile(path); err != nil {
			return nil, fmt.Errorf("config: %v", err)
		}
	}
	return ParseConfig(b)
}

// ParseConfig parses and checks a config document.
func ParseConfig(b []byte) (*Config, error) {
	var generic any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&generic); err != nil {
		return nil, fmt.Errorf("config: invalid JSON: %v", err)
	}
	if d.More() {
		return nil, fmt.Errorf("config: invalid JSON: data after the top-level object")
	}
	if err := checkKeys(generic, reflect.TypeOf(Config{}), ""); err != nil {
		return nil, err
	}
	c := &Config{}
	if err := json.Unmarshal(b, c); err != nil {
		return nil, fmt.Errorf("config: %v", err)
	}
	if err := c.check(); err != nil {
		return nil, err
	}
	return c, nil
}

// checkKeys walks v (decoded generically) beside the Go type t and reports
// the first object key t does not declare, with its path.
func checkKeys(v any, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch x := v.(type) {
	case map[string]any:
		switch t.Kind() {
		case reflect.Struct:
			fields := map[string]reflect.Type{}
			collectFields(t, fields)
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				ft, ok := fields[k]
				p := k
				if path != "" {
					p = path + "." + k
				}
				if !ok {
					return fmt.Errorf("config: %s: unknown key", p)
				}
				if err := checkKeys(x[k], ft, p); err != nil {
					return err
				}
			}
		case reflect.Map:
			for k, e := range x {
				if err := checkKeys(e, t.Elem(), path+"."+k); err != nil {
					return err
				}
			}
		}
	case []any:
		if t.Kind() == reflect.Slice {
			for i, e := range x {
				if err := checkKeys(e, t.Elem(), path+"["+strconv.Itoa(i)+"]"); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func collectFields(t reflect.Type, dst map[string]reflect.Type) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			collectFields(f.Type, dst)
			continue
		}
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		dst[name] = f.Type
	}
}

func (c *Config) check() error {
	if c.FeeUID <= 0 {
		return fmt.Errorf("config: fee_uid: must be a positive uid")
	}
	if len(c.Contracts) > 0 {
		return fmt.Errorf("config: contracts: contract markets are not supported yet")
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
		if u.UIDWeight < 0 {
			return fmt.Errorf("config: users[%d].uid_weight_per_10s: must not be negative", i)
		}
		for coin, amt := range u.Deposits {
			ci, ok := c.coinByName[coin]
			if !ok {
				return fmt.Errorf("config: users[%d].deposits.%s: unknown coin", i, coin)
			}
			if v, err := engine.ParseFixed([]byte(amt), c.Coins[ci].Scale); err != nil || v <= 0 {
				return fmt.Errorf("config: users[%d].deposits.%s: %q is not a positive amount at scale %d", i, coin, amt, c.Coins[ci].Scale)
			}
		}
	}
	_, _, err := c.EngineSpecs()
	return err
}

// EngineSpecs converts the coins and markets to the engine's types, with
// dense ids in config order.
func (c *Config) EngineSpecs() ([]engine.Coin, []*engine.MarketSpec, error) {
	coins := make([]engine.Coin, len(c.Coins))
	for i, co := range c.Coins {
		coins[i] = engine.Coin{ID: engine.CoinID(i), Name: co.Coin, ExternalID: co.CoinID, Scale: co.Scale}
	}
	specs := make([]*engine.MarketSpec, len(c.Spot))
	for i, s := range c.Spot {
		sp, err := engine.NewMarketSpec(engine.MarketID(i), s.SpotConfig,
			coins[c.coinByName[s.BaseAsset]], coins[c.coinByName[s.QuoteAsset]])
		if err != nil {
			return nil, nil, fmt.Errorf("config: spot[%d]: %v", i, err)
		}
		specs[i] = sp
	}
	return coins, specs, nil
}
