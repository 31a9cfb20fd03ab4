package edge

// contractTradeEndpoints are the contract order endpoints (docs/API.md,
// "Perpetual contracts: orders"): the seed's V2 placeOrder and V3
// batchOrders, and ccxt's swap order surface.
func contractTradeEndpoints(pub func(string, int64, handler) *endpoint, sig func(string, string, int64, int64, handler) *endpoint) []*endpoint {
	return nil
}
