// ccxt conformance: drives the real ccxt weex client against our server.
// Usage: node ccxt_conformance.cjs <dir holding node_modules/ccxt> <base url> <apiKey> <secret> <password>
// Exits non-zero with a message on the first wrong value.
const [ccxtDir, base, apiKey, secret, password] = process.argv.slice(2);
const ccxt = require('module').createRequire(require('path').join(ccxtDir, 'package.json'))('ccxt');

function check(cond, what, got) {
    if (!cond) {
        console.error('FAIL ' + what + ': got ' + JSON.stringify(got));
        process.exit(1);
    }
    console.log('ok   ' + what);
}
const near = (a, b) => Math.abs(a - b) < 1e-9;

(async () => {
    const ex = new ccxt.weex({
        apiKey, secret, password,
        urls: { api: { public: base, private: base, contract: base, contractPrivate: base } },
    });
    const markets = await ex.loadMarkets();
    const m = markets['BTC/USDT'];
    check(m && m.id === 'BTCUSDT' && m.spot && m.active, 'loadMarkets BTC/USDT', m && m.id);
    check(m.precision.price === 0.01 && m.precision.amount === 0.000001, 'market precision', m.precision);
    check(m.limits.amount.min === 0.00001 && m.limits.amount.max === 1000, 'market amount limits', m.limits.amount);
    check(m.taker === 0.001 && m.maker === 0.0008, 'market fees', [m.taker, m.maker]);
    check(ex.currencies && ex.currencies.USDT, 'currencies loaded', Object.keys(ex.currencies || {}));

    const t = await ex.fetchTime();
    check(Math.abs(t - Date.now()) < 5000, 'fetchTime', t);

    const bal = await ex.fetchBalance();
    check(bal.USDT.free === 1000000 && bal.USDT.used === 0 && bal.BTC.free === 100, 'fetchBalance', { USDT: bal.USDT, BTC: bal.BTC });

    const lim = await ex.createOrder('BTC/USDT', 'limit', 'buy', 0.01, 30000);
    check(lim.id && lim.clientOrderId && lim.clientOrderId.startsWith('b-WEEX111125-'), 'createOrder limit', lim);
    check(lim.status === 'open' && lim.price === 30000 && lim.amount === 0.01, 'createOrder limit state', lim);

    const f1 = await ex.fetchOrder(lim.id, 'BTC/USDT');
    check(f1.id === lim.id && f1.status === 'open' && f1.price === 30000 && f1.amount === 0.01 && f1.filled === 0 && f1.side === 'buy' && f1.type === 'limit', 'fetchOrder', f1);
    const f1b = await ex.fetchOrder(lim.id);
    check(f1b.id === lim.id && f1b.symbol === 'BTC/USDT', 'fetchOrder without symbol', f1b);
    const byCid = await ex.fetchOrder(undefined, 'BTC/USDT', { clientOrderId: lim.clientOrderId });
    check(byCid.id === lim.id, 'fetchOrder by clientOrderId', byCid);

    const bal2 = await ex.fetchBalance();
    check(near(bal2.USDT.used, 300) && near(bal2.USDT.free, 999700), 'fetchBalance reserves', bal2.USDT);

    const open = await ex.fetchOpenOrders('BTC/USDT');
    check(open.length === 1 && open[0].id === lim.id && open[0].status === 'open', 'fetchOpenOrders', open);
    const openAll = await ex.fetchOpenOrders();
    check(openAll.length === 1, 'fetchOpenOrders all markets', openAll);

    const ob = await ex.fetchOrderBook('BTC/USDT');
    check(ob.bids.length === 1 && ob.bids[0][0] === 30000 && ob.bids[0][1] === 0.01 && ob.asks.length === 1 && ob.asks[0][0] === 31000, 'fetchOrderBook', ob);
    const ob200 = await ex.fetchOrderBook('BTC/USDT', 100);
    check(ob200.bids.length === 1, 'fetchOrderBook limit', ob200);
    check(Number.isInteger(ob.nonce) && ob.nonce > 0 && ob200.nonce >= ob.nonce, 'fetchOrderBook nonce (lastUpdateId)', [ob.nonce, ob200.nonce]);

    const c = await ex.cancelOrder(lim.id, 'BTC/USDT');
    check(c.id === lim.id && c.status === 'canceled', 'cancelOrder', c);
    const f2 = await ex.fetchOrder(lim.id, 'BTC/USDT');
    check(f2.status === 'canceled', 'fetchOrder after cancel', f2);
    try {
        await ex.cancelOrder(lim.id, 'BTC/USDT');
        check(false, 'cancelOrder twice raises OrderNotFound', 'no error');
    } catch (e) {
        check(e instanceof ccxt.OrderNotFound, 'cancelOrder twice raises OrderNotFound', e.constructor.name + ': ' + e.message);
    }

    // a resting ask of another user at 31000 (placed by the Go test): market buy.
    const mkt = await ex.createOrder('BTC/USDT', 'market', 'buy', 0.02);
    check(mkt.id, 'createOrder market', mkt);
    const fm = await ex.fetchOrder(mkt.id, 'BTC/USDT');
    check(fm.status === 'closed' && fm.filled === 0.02 && fm.cost === 620 && fm.type === 'market', 'market order filled', fm);

    const orders = await ex.fetchOrders('BTC/USDT');
    check(orders.length === 2 && orders[0].id === lim.id && orders[0].status === 'canceled' && orders[1].id === mkt.id && orders[1].status === 'closed', 'fetchOrders', orders.map(o => [o.id, o.status]));
    const since = await ex.fetchOrders('BTC/USDT', orders[1].timestamp);
    check(since.length >= 1 && since[since.length - 1].id === mkt.id, 'fetchOrders since', since.length);

    const bal3 = await ex.fetchBalance();
    check(near(bal3.BTC.free, 100.01998) && near(bal3.USDT.free, 1000000 - 620), 'fetchBalance after fill (taker fee in BTC)', { BTC: bal3.BTC, USDT: bal3.USDT });

    const mine = await ex.fetchMyTrades('BTC/USDT');
    check(mine.length === 1 && mine[0].price === 31000 && mine[0].amount === 0.02 && mine[0].side === 'buy' && near(mine[0].fee.cost, 0.00002) && mine[0].fee.currency === 'BTC', 'fetchMyTrades', mine[0]);
    check(mine[0].takerOrMaker === 'taker', 'fetchMyTrades takerOrMaker (maker)', mine[0].takerOrMaker);
    const led = await ex.fetchLedger('USDT');
    check(led.length === 2 && led[0].type === 'deposit' && near(led[0].amount, 1000000) && led[1].type === 'trade' &&
        led[1].direction === 'out' && near(led[1].amount, 620) && near(led[1].after, 1000000 - 620) && near(led[1].before, 1000000),
        'fetchLedger', led.map(e => [e.type, e.direction, e.amount, e.before, e.after]));
    const fund = await ex.fetchLedger(undefined, undefined, undefined, { type: 'funding' });
    check(fund.length === 2 && fund.every(e => e.type === 'deposit' && e.direction === 'in'), 'fetchLedger funding', fund.map(e => [e.type, e.currency, e.amount]));
    for (const tf of ['1m', '1h', '1w', '1M']) {
        const k = await ex.fetchOHLCV('BTC/USDT', tf);
        check(k.length === 1 && k[0][1] === 31000 && k[0][4] === 31000 && k[0][5] === 0.02 && k[0][0] <= Date.now(), 'fetchOHLCV ' + tf, k);
    }
    const trades = await ex.fetchTrades('BTC/USDT');
    check(trades.length === 1 && trades[0].price === 31000 && trades[0].side === 'buy', 'fetchTrades', trades);
    const tk = await ex.fetchTicker('BTC/USDT');
    check(tk.last === 31000 && tk.ask === 31000 && tk.baseVolume === 0.02, 'fetchTicker', tk);
    const st = await ex.fetchStatus();
    check(st.status === 'ok', 'fetchStatus', st);
    const lp = await ex.fetchLastPrices();
    check(lp['BTC/USDT'] && lp['BTC/USDT'].price === 31000, 'fetchLastPrices', lp);
    const tks = await ex.fetchTickers();
    check(tks['BTC/USDT'] && tks['BTC/USDT'].last === 31000 && tks['ETH/USDT'], 'fetchTickers', Object.keys(tks));
    const bidsAsks = await ex.fetchBidsAsks(['BTC/USDT']);
    check(bidsAsks['BTC/USDT'] && bidsAsks['BTC/USDT'].ask === 31000, 'fetchBidsAsks', bidsAsks);

    try {
        await ex.createOrder('BTC/USDT', 'limit', 'buy', 500, 30000);
        check(false, 'insufficient balance raises InsufficientFunds', 'no error');
    } catch (e) {
        check(e instanceof ccxt.InsufficientFunds, 'insufficient balance raises InsufficientFunds', e.constructor.name + ': ' + e.message);
    }
    for (let i = 0; i < 2; i++) {
        await ex.createOrder('BTC/USDT', 'limit', 'buy', 0.01, 29000 + i);
    }
    const ca = await ex.cancelAllOrders('BTC/USDT');
    check(ca.length === 2 && ca.every(o => o.status === 'canceled'), 'cancelAllOrders', ca);
    const o3 = await ex.createOrder('BTC/USDT', 'limit', 'buy', 0.01, 28000);
    const o4 = await ex.createOrder('BTC/USDT', 'limit', 'sell', 0.01, 40000);
    const cs = await ex.cancelOrders([o3.id, o4.id], 'BTC/USDT');
    check(cs.length === 2 && cs[0].id === o3.id && cs[1].id === o4.id && cs.every(o => o.status === 'canceled'), 'cancelOrders', cs);
    const o5 = await ex.createOrder('BTC/USDT', 'limit', 'buy', 0.01, 28000, { clientOrderId: 'cancel-me' });
    const cc = await ex.cancelOrders(undefined, undefined, { clientOrderIds: ['cancel-me'] });
    check(cc.length === 1 && cc[0].id === o5.id, 'cancelOrders by clientOrderIds', cc);
    const left = await ex.fetchOpenOrders();
    check(left.length === 0, 'no open orders left', left);

    const bad = new ccxt.weex({ apiKey, secret: 'wrong', password, urls: ex.urls });
    bad.markets = ex.markets; bad.marketsById = ex.marketsById; bad.symbols = ex.symbols; bad.currencies = ex.currencies;
    try {
        await bad.fetchBalance();
        check(false, 'bad secret raises AuthenticationError', 'no error');
    } catch (e) {
        check(e instanceof ccxt.AuthenticationError, 'bad secret raises AuthenticationError', e.constructor.name);
    }
    console.log('ALL OK');
})().catch((e) => {
    console.error('FAIL exception: ' + (e && e.stack || e));
    process.exit(1);
});
