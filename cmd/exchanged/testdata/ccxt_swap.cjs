// ccxt swap conformance: drives the real ccxt weex client's contract
// (swap) methods against our server, with two users: the ccxt user and a
// counterparty (also through ccxt).
// Usage: node ccxt_swap.cjs <dir holding node_modules/ccxt> <base url> <admin url> <admin token>
//        <apiKey> <secret> <password> <apiKey2> <secret2> <password2>
// Exits non-zero with a message on the first wrong value.
const [ccxtDir, base, adminURL, adminToken, apiKey, secret, password, apiKey2, secret2, password2] = process.argv.slice(2);
const ccxt = require('module').createRequire(require('path').join(ccxtDir, 'package.json'))('ccxt');

function check(cond, what, got) {
    if (!cond) {
        console.error('FAIL ' + what + ': got ' + JSON.stringify(got));
        process.exit(1);
    }
    console.log('ok   ' + what);
}
const near = (a, b) => Math.abs(a - b) < 1e-6;

async function admin(method, path, body) {
    const r = await fetch(adminURL + path, {
        method, headers: { 'X-Admin-Token': adminToken, 'Content-Type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
    });
    const j = await r.json();
    if (r.status !== 200) {
        throw new Error(path + ': ' + r.status + ' ' + JSON.stringify(j));
    }
    return j;
}

(async () => {
    const urls = { api: { public: base, private: base, contract: base, contractPrivate: base } };
    // ticker/24hr weighs 200: ccxt's own throttle would wait seconds per call
    const ex = new ccxt.weex({ apiKey, secret, password, urls, enableRateLimit: false });
    const cp = new ccxt.weex({ apiKey: apiKey2, secret: secret2, password: password2, urls, enableRateLimit: false });
    const S = 'BTC/USDT:USDT';

    const markets = await ex.loadMarkets();
    await cp.loadMarkets();
    const m = markets[S];
    check(m && m.id === 'BTCUSDT' && m.swap && m.contract && m.linear && m.settle === 'USDT' && m.contractSize === 1 && m.numericId === 1,
        'loadMarkets ' + S, m && [m.id, m.type, m.settle, m.contractSize]);
    check(m.precision.price === 0.1 && m.precision.amount === 0.0001 && m.limits.leverage.max === 100 && m.taker === 0.0006 && m.maker === 0.0002,
        'swap market precision, leverage, fees', [m.precision, m.limits.leverage, m.taker, m.maker]);
    check(markets['BTC/USDT'] && markets['BTC/USDT'].spot, 'spot BTC/USDT beside the swap', Object.keys(markets));

    const bal = await ex.fetchBalance({ type: 'swap' });
    check(bal.USDT && bal.USDT.total === 100000 && bal.USDT.free === 100000 && bal.USDT.used === 0, 'fetchBalance swap', bal.USDT);

    await ex.setLeverage(10, S);
    await ex.setMarginMode('cross', S);
    const lev = await ex.fetchLeverage(S);
    check(lev.longLeverage === 10 && lev.marginMode === 'cross', 'setLeverage, setMarginMode, fetchLeverage', lev);

    // the counterparty rests an ask: SELL (opens SHORT) 0.1 at 30000
    const ask = await cp.createOrder(S, 'limit', 'sell', 0.1, 30000);
    check(ask.id && ask.status === 'open', 'counterparty createOrder limit sell', ask);

    // market BUY 0.05 opens LONG at 30000 (taker fee 0.06%: 0.9)
    const mk = await ex.createOrder(S, 'market', 'buy', 0.05);
    const fm = await ex.fetchOrder(mk.id, S);
    check(fm.status === 'closed' && fm.filled === 0.05 && fm.average === 30000 && fm.side === 'buy', 'createOrder market, fetchOrder', fm);

    const lim = await ex.createOrder(S, 'limit', 'buy', 0.02, 29000);
    check(lim.id && lim.status === 'open' && lim.price === 29000 && lim.amount === 0.02, 'createOrder limit', lim);
    const open = await ex.fetchOpenOrders(S);
    check(open.length === 1 && open[0].id === lim.id && open[0].status === 'open', 'fetchOpenOrders', open.map(o => [o.id, o.status]));
    const c = await ex.cancelOrder(lim.id, S);
    check(c.id === lim.id, 'cancelOrder', c);
    const fc = await ex.fetchOrder(lim.id, S);
    check(fc.status === 'canceled', 'fetchOrder after cancel', fc.status);
    for (let i = 0; i < 2; i++) {
        await ex.createOrder(S, 'limit', 'buy', 0.01, 29500 + i);
    }
    await ex.cancelAllOrders(S);
    const left = await ex.fetchOpenOrders(S);
    check(left.length === 0, 'cancelAllOrders', left.map(o => [o.id, o.status]));

    const pos = await ex.fetchPositions([S]);
    check(pos.length === 1 && pos[0].symbol === S && pos[0].side === 'long' && pos[0].contracts === 0.05 &&
        pos[0].entryPrice === 30000 && pos[0].marginMode === 'cross' && pos[0].leverage === 10,
        'fetchPositions', pos.map(p => [p.symbol, p.side, p.contracts, p.entryPrice, p.marginMode, p.leverage]));

    const mine = await ex.fetchMyTrades(S);
    check(mine.length === 1 && mine[0].price === 30000 && mine[0].amount === 0.05 && mine[0].side === 'buy' &&
        near(mine[0].fee.cost, 0.9) && mine[0].fee.currency === 'USDT', 'fetchMyTrades', mine[0]);

    const bal2 = await ex.fetchBalance({ type: 'swap' });
    check(near(bal2.USDT.total, 100000 - 0.9) && near(bal2.USDT.used, 150), 'fetchBalance with a position (margin 150)', bal2.USDT);

    // plans on the LONG (capi/v3/algoOrder): a standalone stop-loss at
    // market and a take-profit limit on the mark price, listed with
    // trigger: true, one cancelled by id and the other with all
    const sl = await ex.createOrder(S, 'market', 'sell', 0.05, undefined, { stopLossPrice: 25000 });
    check(sl.id && sl.status === 'open' && sl.stopLossPrice === 25000 && sl.triggerPrice === 25000 && sl.reduceOnly === true &&
        sl.side === 'sell' && sl.type === 'market' && sl.amount === 0.05, 'createOrder stopLossPrice', sl);
    const tpo = await ex.createOrder(S, 'limit', 'sell', 0.02, 36000, { takeProfitPrice: 35000, takeProfitPriceType: 'mark' });
    check(tpo.id && tpo.takeProfitPrice === 35000 && tpo.price === 36000 && tpo.type === 'limit' && tpo.info.workingType === 'MARK_PRICE',
        'createOrder takeProfitPrice (mark)', tpo);
    const trig = await ex.fetchOpenOrders(S, undefined, undefined, { trigger: true });
    check(trig.length === 2 && trig[0].id === sl.id && trig[1].id === tpo.id && trig.every(o => o.status === 'open' && o.symbol === S),
        'fetchOpenOrders trigger', trig.map(o => [o.id, o.status, o.triggerPrice]));
    check((await ex.fetchOpenOrders(S)).length === 0, 'plans are not open orders', 'plans listed as orders');
    const csl = await ex.cancelOrder(sl.id, S, { trigger: true });
    check(csl.id === sl.id && csl.status === 'canceled', 'cancelOrder trigger', csl);
    const call = await ex.cancelAllOrders(S, { trigger: true });
    check(call.length === 1 && call[0].id === tpo.id && call[0].status === 'canceled', 'cancelAllOrders trigger', call);
    check((await ex.fetchOpenOrders(S, undefined, undefined, { trigger: true })).length === 0, 'no plans left', 'plans left');
    try {
        await ex.createOrder(S, 'market', 'buy', 0.01, undefined, { triggerPrice: 31000 });
        check(false, 'a trigger entry order is refused', 'no error');
    } catch (e) {
        check(e instanceof ccxt.ExchangeError && e.message.includes('-1128'), 'a trigger entry order is refused', e.constructor.name + ': ' + e.message);
    }

    // the counterparty closes its SHORT with a bid at 30100 (reduceOnly),
    // then closePosition sells the LONG into it: PnL +5, maker... taker fee 0.903
    await cp.cancelAllOrders(S);
    const bid = await cp.createOrder(S, 'limit', 'buy', 0.05, 30100, { reduceOnly: true });
    check(bid.id, 'counterparty close with reduceOnly', bid);
    const closed = await ex.closePosition(S, 'long');
    check(closed && closed.id, 'closePosition', closed);
    const pos2 = await ex.fetchPositions([S]);
    check(pos2.length === 0, 'fetchPositions after closePosition', pos2);
    const bal3 = await ex.fetchBalance({ type: 'swap' });
    check(near(bal3.USDT.total, 100000 - 0.9 + 5 - 0.903) && near(bal3.USDT.used, 0), 'fetchBalance after the close', bal3.USDT);

    const tk = await ex.fetchTicker(S);
    check(tk.symbol === S && tk.last === 30100, 'fetchTicker', [tk.symbol, tk.last]);
    const ob = await ex.fetchOrderBook(S);
    check(ob.symbol === S && Array.isArray(ob.bids) && Array.isArray(ob.asks), 'fetchOrderBook', ob);
    const k = await ex.fetchOHLCV(S, '1m');
    check(k.length === 1 && k[0][1] === 30000 && k[0][2] === 30100 && k[0][4] === 30100 && near(k[0][5], 0.1), 'fetchOHLCV swap', k);

    // funding without the dev clock: the timer's first tick settles the
    // current boundary (the interest rate, nobody paying) a second after
    // the start, so the last rate is 0 or 0.0001 and the history holds
    // at most that row; the book is empty: mark = last, and the index
    // (no spot price) = mark, the premium 0, the forecast the interest rate
    const EIGHT_H = 8 * 3600000;
    const fr = await ex.fetchFundingRate(S);
    check(fr.symbol === S && fr.markPrice === 30100 && fr.indexPrice === 30100 && fr.interestRate === 0.0001 &&
        (fr.fundingRate === 0 || fr.fundingRate === 0.0001) && fr.nextFundingRate === 0.0001 && fr.interval === '8h' &&
        fr.nextFundingTimestamp % EIGHT_H === 0 && fr.nextFundingTimestamp > fr.timestamp && fr.nextFundingTimestamp <= fr.timestamp + EIGHT_H,
        'fetchFundingRate', fr);
    const frh = await ex.fetchFundingRateHistory(S);
    check(Array.isArray(frh) && frh.length <= 1 && frh.every(x => x.symbol === S && x.fundingRate === 0.0001 && x.timestamp % EIGHT_H === 0),
        'fetchFundingRateHistory', frh);
    const fh = await ex.fetchFundingHistory(S);
    check(Array.isArray(fh) && fh.every(x => x.symbol === S && x.code === 'USDT'), 'fetchFundingHistory', fh);
    const mp = await ex.fetchMarkPrice(S);
    check(mp.symbol === S && mp.markPrice === 30100, 'fetchMarkPrice', mp);

    const led = await ex.fetchLedger('USDT', undefined, undefined, { type: 'swap' });
    const types = led.map(e => e.info.incomeType || e.info.bizType);
    check(led.length >= 3 && types.includes('position_open_long') && types.includes('position_close_long') && types.includes('deposit'),
        'fetchLedger swap', types);

    // spot <-> futures transfers show in fetchTransfers
    const before = (await ex.fetchTransfers('USDT')).length;
    await admin('POST', '/admin/v1/transfer', { uid: 10004, coin: 'USDT', amount: '25', from: 'spot', to: 'futures' });
    const tr = await ex.fetchTransfers('USDT');
    check(tr.length === before + 1 && near(tr[tr.length - 1].amount, 25) || tr.length === before + 1 && near(tr[0].amount, 25),
        'fetchTransfers', tr.map(x => [x.amount, x.fromAccount, x.toAccount]));
    const bal4 = await ex.fetchBalance({ type: 'swap' });
    check(near(bal4.USDT.total, bal3.USDT.total + 25), 'transfer reaches the futures wallet', bal4.USDT);

    try {
        await ex.createOrder(S, 'limit', 'buy', 50, 30000); // 50 BTC at leverage 10: 150,000 of margin
        check(false, 'insufficient margin raises InsufficientFunds', 'no error');
    } catch (e) {
        check(e instanceof ccxt.InsufficientFunds, 'insufficient margin raises InsufficientFunds', e.constructor.name + ': ' + e.message);
    }
    try {
        await ex.cancelOrder('999999999', S);
        check(false, 'unknown order raises InvalidOrder (ccxt maps -3200 so)', 'no error');
    } catch (e) {
        check(e instanceof ccxt.InvalidOrder && e.message.includes('-3200'), 'unknown order raises InvalidOrder (ccxt maps -3200 so)', e.constructor.name + ': ' + e.message);
    }
    console.log('ALL OK');
})().catch((e) => {
    console.error('FAIL exception: ' + (e && e.stack || e));
    process.exit(1);
});
