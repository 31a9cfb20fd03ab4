// ccxt funding conformance, run by TestContractFunding (dev clock) after
// the 08:00 funding of <day>: A holds LONG 0.1 BTCUSDT, the mark is
// 30060, the index 30000, the rates 0.0001 at 00:00 and 0.001 at 08:00
// (A paid 3.006), and the 08:00 minute sampled a 0.2% premium.
// Usage: node ccxt_funding.cjs <dir holding node_modules/ccxt> <base url> <apiKey> <secret> <password> <day ms>
// Exits non-zero with a message on the first wrong value.
const [ccxtDir, base, apiKey, secret, password, dayArg] = process.argv.slice(2);
const ccxt = require('module').createRequire(require('path').join(ccxtDir, 'package.json'))('ccxt');
const day = Number(dayArg);
const H = 3600000;

function check(cond, what, got) {
    if (!cond) {
        console.error('FAIL ' + what + ': got ' + JSON.stringify(got));
        process.exit(1);
    }
    console.log('ok   ' + what);
}

(async () => {
    const urls = { api: { public: base, private: base, contract: base, contractPrivate: base } };
    const ex = new ccxt.weex({ apiKey, secret, password, urls, enableRateLimit: false });
    const S = 'BTC/USDT:USDT';
    await ex.loadMarkets();

    const fr = await ex.fetchFundingRate(S);
    check(fr.symbol === S && fr.fundingRate === 0.001 && fr.markPrice === 30060 && fr.indexPrice === 30000 &&
        fr.interestRate === 0.0001 && fr.nextFundingRate === 0.0015 && fr.nextFundingTimestamp === day + 16 * H &&
        fr.interval === '8h' && fr.timestamp >= day + 8 * H, 'fetchFundingRate', fr);
    const frs = await ex.fetchFundingRates();
    check(frs[S] && frs[S].fundingRate === 0.001 && frs['ETH/USDT:USDT'] && frs['ETH/USDT:USDT'].fundingRate === 0.0001,
        'fetchFundingRates', Object.keys(frs));

    const h = await ex.fetchFundingRateHistory(S, day);
    check(h.length === 2 && h[0].timestamp === day && h[0].fundingRate === 0.0001 && h[1].timestamp === day + 8 * H &&
        h[1].fundingRate === 0.001 && h[1].symbol === S, 'fetchFundingRateHistory', h);
    const h1 = await ex.fetchFundingRateHistory(S, undefined, 1);
    check(h1.length === 1 && h1[0].timestamp === day + 8 * H, 'fetchFundingRateHistory limit 1', h1);
    const hu = await ex.fetchFundingRateHistory(S, day, undefined, { until: day + 8 * H - 1 });
    check(hu.length === 1 && hu[0].timestamp === day, 'fetchFundingRateHistory until', hu);

    const fh = await ex.fetchFundingHistory(S);
    check(fh.length === 1 && fh[0].symbol === S && fh[0].code === 'USDT' && fh[0].amount === -3.006 &&
        fh[0].timestamp >= day + 8 * H && fh[0].id, 'fetchFundingHistory', fh);
    const fa = await ex.fetchFundingHistory();
    check(fa.length === 1 && fa[0].id === fh[0].id, 'fetchFundingHistory of every contract', fa);

    const mp = await ex.fetchMarkPrice(S);
    check(mp.symbol === S && mp.markPrice === 30060, 'fetchMarkPrice', mp);
    const mps = await ex.fetchMarkPrices([S]);
    check(mps[S] && mps[S].markPrice === 30060 && mps[S].indexPrice === 30000, 'fetchMarkPrices', mps);

    const pos = await ex.fetchPositions([S]);
    check(pos.length === 1 && pos[0].side === 'long' && pos[0].info.cumFundingFee === '-3.00600000' &&
        pos[0].info.fundingFee === '-3.00600000', 'fetchPositions funding fields', pos.map(p => p.info));
    console.log('ALL OK');
})().catch((e) => {
    console.error('FAIL exception: ' + (e && e.stack || e));
    process.exit(1);
});
