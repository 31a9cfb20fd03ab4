package edge

// The funding endpoints (cfunding.go) join fuzzRoutes at its end, after
// the contract order endpoints (ctrade_fuzz_test.go: init functions run in
// file-name order), so that earlier indices stay.
func init() {
	for _, r := range [...][2]string{
		{"GET", "/capi/v3/market/premiumIndex"},
		{"GET", "/capi/v3/market/fundingRate"},
	} {
		fuzzRoutes = append(fuzzRoutes, struct {
			method, path string
			admin        bool
			text         bool
		}{r[0], r[1], false, false})
	}
}
