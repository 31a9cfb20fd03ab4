// ccxt liquidation conformance, run by TestContractLiquidation (see its
// comment for the numbers) with A's and B's keys, in two phases:
//   open:       A holds an isolated LONG 0.1 BTCUSDT at 50000 (leverage
//               20, liquidatePrice 47738.6) and an isolated SHORT 1
//               ETHUSDT at 3000 (3134.33);
//   liquidated: both were liquidated: BTC by a SELL 0.1 at 47500 (type
//               9, filled at 47600 on average), ETH by a BUY 1 at 3150
//               (type 10, filled at 3140); B's auto-deleveraging close
//               BUY SHORT 0.05 at 47500 (type 8).
// Usage: node ccxt_liquidation.cjs <dir holding node_modules/ccxt> <base url> <phase>
//        <apiKey A> <secret A> <password A> <apiKey B> <secret B> <password B>
// Exits non-zero with a message on the first wrong value.
const [ccxtDir, base, phase, keyA, secretA, passA, keyB, secretB, passB] = process.argv.slice(2);
const ccxt = require('module').createRequire(require('path').join(ccxtDir, 'package.json'))('ccxt');

function check(cond, what, got) {
    if (!cond) {
        console.error('FAIL ' + what + ': got ' + JSON.stringify(got));
        process.exit(1);
    }
    console.log('ok   ' + what);
}

(async () => {
    const urls = { api: { public: base, private: base, contract: base, contractPrivate: base } };
    const a = new ccxt.weex({ apiKey: keyA, secret: secretA, password: passA, urls, enableRateLimit: false });
    const b = new ccxt.weex({ apiKey: keyB, secret: secretB, password: passB, urls, enableRateLimit: false });
    const BTC = 'BTC/USDT:USDT', ETH = 'ETH/USDT:USDT';
    await a.loadMarkets();
    await b.loadMarkets();

    if (phase === 'open') {
        const pos = await a.fetchPositions();
        check(pos.length === 2 && pos[0].symbol === BTC && pos[0].side === 'long' && pos[0].contracts === 0.1 &&
            pos[0].marginMode === 'isolated' && pos[0].leverage === 20 && pos[0].liquidationPrice === 47738.6 &&
            pos[1].symbol === ETH && pos[1].side === 'short' && pos[1].contracts === 1 && pos[1].liquidationPrice === 3134.33,
            'fetchPositions liquidationPrice', pos.map(p => [p.symbol, p.side, p.contracts, p.marginMode, p.leverage, p.liquidationPrice]));
        const one = await a.fetchPosition(BTC);
        check(one && one.liquidationPrice === 47738.6, 'fetchPosition liquidationPrice', one && one.info);
        console.log('ALL OK');
        return;
    }

    check((await a.fetchPositions()).length === 0, 'fetchPositions after the liquidations', 'positions left');
    const closed = await a.fetchClosedOrders(BTC);
    const liq = closed.filter(o => o.info.typeCode === '9');
    check(liq.length === 1, 'fetchClosedOrders: one liquidation order', closed.map(o => [o.id, o.info.typeCode, o.status]));
    const o = liq[0];
    check(o.symbol === BTC && o.status === 'closed' && o.side === 'sell' && o.type === 'limit' && o.timeInForce === 'IOC' &&
        o.reduceOnly === true && o.price === 47500 && o.amount === 0.1 && o.filled === 0.1 && o.average === 47600 && o.cost === 4760,
        'fetchClosedOrders: the liquidation order (type 9, at the bankruptcy price)', o);
    check(closed.length === 2 && closed[0].info.typeCode === '1' && closed[0].price === 50000,
        'fetchClosedOrders: the open, then the liquidation', closed.map(o => [o.info.typeCode, o.price]));
    const eth = await a.fetchCanceledAndClosedOrders(ETH);
    const liqEth = eth.filter(o => o.info.typeCode === '10');
    check(liqEth.length === 1 && liqEth[0].side === 'buy' && liqEth[0].price === 3150 && liqEth[0].average === 3140 &&
        liqEth[0].filled === 1 && liqEth[0].status === 'closed' && liqEth[0].info.positionSide === 'SHORT',
        'fetchCanceledAndClosedOrders: the SHORT\'s liquidation order (type 10)', eth.map(o => o.info));
    // every contract (ccxt 4.5.84's fetchClosedOrders drops the type
    // before it calls this, so it cannot go without a symbol on swap)
    const all = await a.fetchCanceledAndClosedOrders(undefined, undefined, undefined, { type: 'swap' });
    check(all.length === 4 && all.filter(o => ['9', '10'].includes(o.info.typeCode)).length === 2,
        'fetchCanceledAndClosedOrders of every contract', all.map(o => [o.symbol, o.info.typeCode]));
    const got = await a.fetchOrder(o.id, BTC);
    check(got.id === o.id && got.status === 'closed' && got.info.typeCode === '9', 'fetchOrder of the liquidation order', got.info);
    const trades = await a.fetchOrderTrades(o.id, BTC);
    check(trades.length === 2 && trades[0].price === 47700 && trades[1].price === 47500 && trades.every(x => x.fee.cost === 0),
        'fetchOrderTrades of the liquidation order (no fee)', trades.map(x => [x.price, x.amount, x.fee]));

    const bc = await b.fetchClosedOrders(BTC);
    const adl = bc.filter(o => o.info.typeCode === '8');
    check(adl.length === 1 && adl[0].side === 'buy' && adl[0].info.positionSide === 'SHORT' && adl[0].price === 47500 &&
        adl[0].filled === 0.05 && adl[0].status === 'closed' && adl[0].reduceOnly === true,
        'fetchClosedOrders: B\'s auto-deleveraging close (type 8)', bc.map(o => o.info));

    const led = await a.fetchLedger('USDT', undefined, undefined, { type: 'swap' });
    const closes = led.filter(e => e.info.incomeType === 'position_close_long');
    check(closes.length === 2 && closes.every(e => e.amount === 125), 'fetchLedger: the liquidation\'s close bills', led.map(e => e.info));
    console.log('ALL OK');
})().catch((e) => {
    console.error('FAIL exception: ' + (e && e.stack || e));
    process.exit(1);
});
