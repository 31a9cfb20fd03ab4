package edge

// contractAccountEndpoints are the contract market data and account
// endpoints (docs/API.md, "Perpetual contracts").
func contractAccountEndpoints(pub func(string, int64, handler) *endpoint, sig func(string, string, int64, int64, handler) *endpoint) []*endpoint {
	return []*endpoint{
		pub("/capi/v3/market/exchangeInfo", 5, handleContractInfo),
	}
}
