package load

import "strings"

// DefaultDeposits returns what each generated user is credited with: plenty
// of the quote coin and of every base coin of markets, far more than the
// orders the generator can keep resting need, and small enough that a few
// hundred users stay far from int64 limits at scale 8.
func DefaultDeposits(markets []Market) []Deposit {
	seen := map[string]bool{}
	var out []Deposit
	add := func(coin, amount string) {
		if !seen[coin] {
			seen[coin] = true
			out = append(out, Deposit{Coin: coin, Amount: amount})
		}
	}
	for _, m := range markets {
		add(m.Quote, "10000000")
	}
	for _, m := range markets {
		amount := "10000000"
		switch m.Base {
		case "BTC":
			amount = "1000"
		case "ETH":
			amount = "10000"
		}
		add(m.Base, amount)
	}
	return out
}

// DefaultFuturesDeposits returns what each generated user is credited with
// in its futures wallets (admin deposit with "wallet":"futures") for
// contracts: the margin coin of each, enough for the margin of every open
// a full run can make (opens only: positions grow through a run; at the
// default leverage of 20 a user's margin stays under 1% of it).
func DefaultFuturesDeposits(contracts []Market) []Deposit {
	seen := map[string]bool{}
	var out []Deposit
	for _, m := range contracts {
		if !seen[m.Quote] {
			seen[m.Quote] = true
			out = append(out, Deposit{Coin: m.Quote, Amount: "10000000", Wallet: "futures"})
		}
	}
	return out
}

// ParseDeposits parses "USDT=1000000,BTC=100".
func ParseDeposits(s string) []Deposit {
	var out []Deposit
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if ok {
			out = append(out, Deposit{Coin: k, Amount: v})
		}
	}
	return out
}
