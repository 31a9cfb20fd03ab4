package load

import "testing"

func TestAppendSign(t *testing.T) {
	// Expected values computed independently (Python hmac/base64).
	cases := []struct {
		method, query, body, want string
	}{
		{"DELETE", "symbol=BTCUSDT&orderId=42", "", "Sts3E4tUJ/5oTtM+p6QVbI+9/TOHvpD/PfLH6OdDZgc="},
		{"POST", "", `{"symbol":"BTCUSDT"}`, "MkOh8JqLcSGexUubJ0Y6zFEJ8jDF3cGekNSD8PBZfC8="},
	}
	s := NewSigner("demo-secret")
	for _, c := range cases {
		// Twice: the signer is reused.
		for i := 0; i < 2; i++ {
			got := string(s.AppendSign(nil, 1700000000000, c.method, "/api/v3/order", []byte(c.query), []byte(c.body)))
			if got != c.want {
				t.Errorf("AppendSign(%s ?%s %s) = %s, want %s", c.method, c.query, c.body, got, c.want)
			}
		}
	}
}

func TestAppendSignAllocs(t *testing.T) {
	s := NewSigner("k")
	dst := make([]byte, 0, 64)
	q, b := []byte("symbol=BTCUSDT&orderId=1"), []byte(`{"a":1}`)
	s.AppendSign(dst, 1, "POST", "/api/v3/order", q, b)
	if n := testing.AllocsPerRun(100, func() { s.AppendSign(dst, 1, "POST", "/api/v3/order", q, b) }); n != 0 {
		t.Errorf("AppendSign allocs = %v, want 0", n)
	}
}
