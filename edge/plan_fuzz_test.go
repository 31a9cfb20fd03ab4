package edge

// The plan endpoints (cplan.go, cplan_algo.go) join fuzzRoutes at its
// end, after the contract order and funding endpoints: init functions run
// in file-name order, and this file's name sorts after theirs
// (ctrade_fuzz_test.go, funding_fuzz_test.go; a cplan_ name would sort
// first and shift their indices), so that earlier indices stay.
func init() {
	for _, r := range [...][2]string{
		{"POST", "/capi/v2/order/placeTpSlOrder"},
		{"GET", "/capi/v2/order/currentPlan"},
		{"POST", "/capi/v3/algoOrder"},
		{"DELETE", "/capi/v3/algoOrder"},
		{"GET", "/capi/v3/openAlgoOrders"},
		{"DELETE", "/capi/v3/algoOpenOrders"},
	} {
		fuzzRoutes = append(fuzzRoutes, struct {
			method, path string
			admin        bool
			text         bool
		}{r[0], r[1], false, false})
	}
}
