package config

import (
	"strings"
	"testing"
)

func TestDefaultConfig(t *testing.T) {
	c, err := ParseConfig(Default)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Coins) != 3 || len(c.Spot) != 2 || len(c.Users) != 3 || c.FeeUID != 1 {
		t.Errorf("default config: got %d coins, %d markets, %d users", len(c.Coins), len(c.Spot), len(c.Users))
	}
}

func TestConfigErrors(t *testing.T) {
	base := string(Default)
	for _, tc := range []struct {
		edit func(string) string
		want string
	}{
		{func(s string) string {
			return strings.Replace(s, `"tickSize": "0.01", "stepSize": "0.000001"`, `"tikSize": "0.01", "stepSize": "0.000001"`, 1)
		}, "config: spot[0].tikSize: unknown key"},
		{func(s string) string { return strings.Replace(s, `"tickSize": "0.01"`, `"tickSizee": "0.01"`, 1) }, "config: spot[0].tickSizee: unknown key"},
		{func(s string) string { return strings.Replace(s, `"fee_uid": 1,`, `"fee_uid": 1, "extra": true,`, 1) }, "config: extra: unknown key"},
		{func(s string) string { return strings.Replace(s, `"enabled": true`, `"enabled": true, "burst": 1`, 1) }, "config: rate_limits.burst: unknown key"},
		{func(s string) string { return strings.Replace(s, `"minConfirm": 2`, `"minConfirms": 2`, 1) }, "config: coins[0].networkList[0].minConfirms: unknown key"},
		// goccy/go-json names "referrerUid" here: its key is not trusted
		{func(s string) string { return strings.Replace(s, `"referrerUid": 0,`, `"referrer": 0,`, 1) }, "config: users[0].referrer: unknown key"},
		{func(s string) string {
			return strings.Replace(s, `"passphrase": "demo-pass2",`, `"passphrase": "demo-pass2", "apikey2": {"a": [1, {"b": 2}]},`, 1)
		}, "config: users[1].apikey2: unknown key"},
		{func(s string) string { return strings.Replace(s, `"scale": 8`, `"scale": "8"`, 1) }, "config: coins[0].scale: "},
		{func(s string) string { return strings.Replace(s, `"baseAsset": "BTC"`, `"baseAsset": "XBT"`, 1) }, "config: spot[0].baseAsset: unknown coin"},
		{func(s string) string { return strings.Replace(s, `"tickSize": "0.01"`, `"tickSize": "-1"`, 1) }, "tickSize"},
		{func(s string) string { return strings.Replace(s, `"USDT": "1000000"`, `"USDT": "1e6"`, 1) }, "deposits.USDT"},
		{func(s string) string {
			return strings.Replace(s, `"apiKey": "weex_demo_key2"`, `"apiKey": "weex_demo_key"`, 1)
		}, "users[1]"},
		{func(s string) string { return s[:len(s)-10] }, "invalid JSON"},
		{func(s string) string { return s + ` {}` }, "invalid JSON: data after the top-level value"},
		{func(s string) string { return strings.Replace(s, `"contracts": [`, `"contracts": [{},`, 1) }, "contracts[0].symbol"},
		{func(s string) string { return strings.Replace(s, `"insurance_uid": 2,`, `"insurance_uid": 0,`, 1) }, "insurance_uid"},
		{func(s string) string { return strings.Replace(s, `"insurance_uid": 2,`, `"insurance_uid": 1,`, 1) }, "insurance_uid"},
		{func(s string) string {
			return strings.Replace(s, `"v2Symbol": "cmt_ethusdt"`, `"v2Symbol": "cmt_btcusdt"`, 1)
		}, "contracts[1].v2Symbol"},
		{func(s string) string {
			return strings.Replace(s, `"v2Symbol": "cmt_ethusdt"`, `"v2Symbol": "ETHUSDT"`, 1)
		}, "contracts[1].v2Symbol"},
		{func(s string) string { return strings.Replace(s, `"contractId": 2,`, `"contractId": 1,`, 1) }, "contracts[1].contractId"},
		{func(s string) string { return strings.Replace(s, `"contractVal": "1"`, `"contractVal": "10"`, 1) }, "contractVal"},
		{func(s string) string { return strings.Replace(s, `"marginAsset": "USDT"`, `"marginAsset": "BTC"`, 1) }, "marginAsset"},
		{func(s string) string { return strings.Replace(s, `"marginAsset": "USDT"`, `"marginAsset": "XYZ"`, 1) }, "contracts[0].marginAsset: unknown coin"},
		{func(s string) string { return strings.Replace(s, `"maxLeverage": 100`, `"maxLeverage": 10`, 1) }, "leverage"},
		{func(s string) string {
			return strings.Replace(s, `"indexSymbol": "BTCUSDT"`, `"indexSymbol": "XBTUSDT"`, 1)
		}, "indexSymbol"},
		{func(s string) string {
			return strings.Replace(s, `"fundingIntervalHours": 8`, `"fundingIntervalHours": 5`, 1)
		}, "fundingIntervalHours"},
		{func(s string) string {
			return strings.Replace(s, `"maxPositionSize": "1000"`, `"maxPositionSize": "0.00005"`, 1)
		}, "maxPositionSize"},
		{func(s string) string {
			return strings.Replace(s, `"maintenanceMarginRate": "0.005"`, `"maintenanceMarginRate": "0.02"`, 1)
		}, "maintenanceMarginRate"},
		{func(s string) string {
			return strings.Replace(s, `"futuresDeposits": {"USDT": "1000000"}`, `"futuresDeposits": {"USDT": "-1"}`, 1)
		}, "futuresDeposits.USDT"},
		{func(s string) string {
			return strings.Replace(s, `"maxFundingRate": "0.0075"`, `"maxFundingRat": "0.0075"`, 1)
		}, "contracts[0].maxFundingRat: unknown key"},
		{func(s string) string { return strings.Replace(s, `"fee_uid": 1,`, `"fee_uid": 1, "fee_uid": 2,`, 1) }, "config: fee_uid: key given twice"},
		{func(s string) string { return strings.Replace(s, `"fee_uid": 1,`, `"fee_uid": 1, "FEE_UID": 2,`, 1) }, "config: FEE_UID: key given twice"},
		{func(s string) string {
			return strings.Replace(s, `"tickSize": "0.01", "stepSize": "0.000001"`, `"tickSize": "0.01", "stepSize": "0.000001", "tickSize": "0.1"`, 1)
		}, "config: spot[0].tickSize: key given twice"},
	} {
		_, err := ParseConfig([]byte(tc.edit(base)))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want an error containing %q", err, tc.want)
		}
	}
}

// TestKeyPath: the path of the last key before an offset, whatever the
// whitespace, nesting and arrays of scalars before it.
func TestKeyPath(t *testing.T) {
	doc := `{ "a" : [ 1, [2, 3], {"b": {"c": null}} , { "d" :` + ` "x", "e" : true } ], "f": {} }`
	for _, tc := range []struct {
		after string // the offset is just past this
		want  string
	}{
		{`{ "a" :`, "a"},
		{`"c":`, "a[2].b.c"},
		{`"d" :`, "a[3].d"},
		{`"e" :`, "a[3].e"},
		{`"f":`, "f"},
	} {
		off := strings.Index(doc, tc.after) + len(tc.after)
		if got := keyPath([]byte(doc), int64(off)); got != tc.want {
			t.Errorf("keyPath after %q: got %q, want %q", tc.after, got, tc.want)
		}
	}
}
