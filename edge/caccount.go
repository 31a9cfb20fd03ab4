package edge

// contractAccountEndpoints are the contract market data and account
// endpoints (docs/API.md, "Perpetual contracts"), and the spot
// transferRecords that lists the transfers between the two families'
// wallets. Weights are ccxt's costs (the seed shows none of these).
func contractAccountEndpoints(pub func(string, int64, handler) *endpoint, sig func(string, string, int64, int64, handler) *endpoint) []*endpoint {
	return []*endpoint{
		pub("/capi/v3/market/exchangeInfo", 5, handleContractInfo),
		pub("/capi/v3/market/time", 5, handleTime),
		pub("/capi/v3/market/depth", 5, handleContractDepth),
		pub("/capi/v3/market/trades", 25, handleContractTrades),
		pub("/capi/v3/market/ticker/24hr", 200, handleContractTicker24h),
		pub("/capi/v3/market/ticker/bookTicker", 5, handleContractBookTicker),
		pub("/capi/v3/market/klines", 5, handleContractKlines),
		pub("/capi/v3/market/symbolPrice", 5, handleSymbolPrice),
		pub("/capi/v3/market/openInterest", 10, handleOpenInterest),
		sig("GET", "/capi/v3/account/balance", 10, 10, handleContractBalance),
		sig("GET", "/capi/v3/account/commissionRate", 10, 10, handleCommissionRate),
		sig("GET", "/capi/v3/account/symbolConfig", 10, 10, handleSymbolConfig),
		sig("GET", "/capi/v3/account/position/allPosition", 15, 15, handleAllPositions),
		sig("GET", "/capi/v3/account/position/singlePosition", 3, 3, handleSinglePosition),
		sig("POST", "/capi/v3/account/leverage", 20, 20, handleSetLeverage),
		sig("POST", "/capi/v3/account/marginType", 50, 50, handleSetMarginType),
		sig("POST", "/capi/v3/account/positionMargin", 30, 30, handlePositionMargin),
		sig("POST", "/capi/v3/account/income", 5, 5, handleContractIncome),
		sig("GET", "/api/v3/account/transferRecords", 3, 3, handleTransferRecords),
		pub("/capi/v3/market/premiumIndex", 5, handlePremiumIndex),
		pub("/capi/v3/market/fundingRate", 25, handleFundingRate),
	}
}
