package load

import "testing"

func TestAppendFixed(t *testing.T) {
	cases := []struct {
		v    int64
		dec  int
		want string
	}{
		{5000000, 2, "50000.00"}, {1, 6, "0.000001"}, {123456, 4, "12.3456"}, {7, 0, "7"}, {100, 1, "10.0"}, {15000, 5, "0.15000"},
	}
	for _, c := range cases {
		if got := FormatFixed(c.v, c.dec); got != c.want {
			t.Errorf("FormatFixed(%d, %d) = %s, want %s", c.v, c.dec, got, c.want)
		}
	}
}

func TestUnitString(t *testing.T) {
	m := Market{TickDecimals: 2, StepDecimals: 0}
	if got := m.TickSize(); got != "0.01" {
		t.Errorf("TickSize = %s, want 0.01", got)
	}
	if got := m.StepSize(); got != "1" {
		t.Errorf("StepSize = %s, want 1", got)
	}
}

func TestSelectMarkets(t *testing.T) {
	ms, err := SelectMarkets(DefaultMarkets(), "ETHUSDT, BTCUSDT")
	if err != nil || len(ms) != 2 || ms[0].Symbol != "ETHUSDT" || ms[1].Symbol != "BTCUSDT" {
		t.Errorf("SelectMarkets = %v, %v; want ETHUSDT, BTCUSDT", ms, err)
	}
	if _, err := SelectMarkets(DefaultMarkets(), "NOPE"); err == nil {
		t.Errorf("SelectMarkets(NOPE): got no error")
	}
}
