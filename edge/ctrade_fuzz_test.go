package edge

// The contract order endpoints join fuzzRoutes at its end (a corpus entry
// names its endpoint by index, so the earlier indices stay).
func init() {
	for _, r := range [...][2]string{
		{"POST", "/capi/v2/order/placeOrder"},
		{"POST", "/capi/v3/batchOrders"},
		{"DELETE", "/capi/v3/batchOrders"},
		{"POST", "/capi/v3/order"},
		{"GET", "/capi/v3/order"},
		{"DELETE", "/capi/v3/order"},
		{"DELETE", "/capi/v3/allOpenOrders"},
		{"GET", "/capi/v3/openOrders"},
		{"GET", "/capi/v3/order/history"},
		{"GET", "/capi/v3/userTrades"},
		{"POST", "/capi/v3/closePositions"},
	} {
		fuzzRoutes = append(fuzzRoutes, struct {
			method, path string
			admin        bool
			text         bool
		}{r[0], r[1], false, false})
	}
}
