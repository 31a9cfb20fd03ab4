package core

import (
	"strconv"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/weexcore/exchange/engine"
)

// metrics are the node's counters for operators (Collectors). The shards
// update them with atomic stores and adds on their own cache lines; a
// scrape reads them.
type metrics struct {
	commitHist prometheus.Histogram
	shards     []shardMetrics
}

type shardMetrics struct {
	rejects [engine.NumRejects]atomic.Uint64
	resting atomic.Int64
	open    atomic.Int64 // contract positions (the ledger shard's)
	_       [48]byte     // keep shards' counters off each other's cache lines
}

func (m *metrics) init(shards int) {
	m.shards = make([]shardMetrics, shards)
	m.commitHist = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "exchanged_journal_commit_seconds",
		Help: "Time of each synced journal commit: one shard's batch, or the committer's group of them.",
		Buckets: []float64{50e-6, 100e-6, 200e-6, 300e-6, 500e-6, 750e-6, 1e-3, 1.5e-3, 2e-3, 3e-3, 5e-3,
			10e-3, 20e-3, 50e-3, 100e-3, 250e-3, 1},
	})
}

func (m *metrics) commit(ns int64) { m.commitHist.Observe(float64(ns) / 1e9) }

func (m *metrics) reject(shard int, r engine.Reject) {
	if r != engine.OK {
		m.shards[shard].rejects[r].Add(1)
	}
}

func (m *metrics) resting(shard, n, positions int) {
	m.shards[shard].resting.Store(int64(n))
	m.shards[shard].open.Store(int64(positions))
}

var (
	ringDepthDesc = prometheus.NewDesc("exchanged_ring_depth",
		"Requests waiting in a shard's ring.", []string{"shard"}, nil)
	seqDesc = prometheus.NewDesc("exchanged_shard_seq",
		"A shard's last durable command sequence.", []string{"shard"}, nil)
	restingDesc = prometheus.NewDesc("exchanged_orders_resting",
		"Working orders resting in a shard's books.", []string{"shard"}, nil)
	positionsDesc = prometheus.NewDesc("exchanged_positions_open",
		"Contract positions open (a user's LONG and SHORT in a contract count apart).", nil, nil)
	rejectsDesc = prometheus.NewDesc("exchanged_rejects_total",
		"Commands the engine rejected, by reason.", []string{"reason"}, nil)
	writtenKeysDesc = prometheus.NewDesc("exchanged_journal_written_keys_total",
		"Pebble keys committed by the shards (journal records and history rows).", nil, nil)
	writtenBytesDesc = prometheus.NewDesc("exchanged_journal_written_bytes_total",
		"Bytes committed by the shards (journal records and history rows).", nil, nil)
)

// Collectors returns the node's metrics for a Prometheus registry: ring
// depth, sequences and resting orders per shard, rejects by reason,
// journal commit latency and bytes written, and the store's (WAL fsync
// latency).
func (n *Node) Collectors() []prometheus.Collector {
	cs := []prometheus.Collector{nodeCollector{n}, n.metrics.commitHist, n.store.Collector()}
	if n.repl != nil {
		cs = append(cs, replCollector{n.repl})
	}
	return cs
}

type nodeCollector struct{ n *Node }

func (c nodeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{ringDepthDesc, seqDesc, restingDesc, positionsDesc, rejectsDesc, writtenKeysDesc, writtenBytesDesc} {
		ch <- d
	}
}

func (c nodeCollector) Collect(ch chan<- prometheus.Metric) {
	n := c.n
	var rejects [engine.NumRejects]uint64
	var open int64
	for i, s := range n.shards {
		label := strconv.Itoa(i)
		ch <- prometheus.MustNewConstMetric(ringDepthDesc, prometheus.GaugeValue, float64(s.q.depth()), label)
		ch <- prometheus.MustNewConstMetric(seqDesc, prometheus.GaugeValue, float64(s.flushed.Load()), label)
		m := &n.metrics.shards[i]
		// the ledger shard rests contract orders
		ch <- prometheus.MustNewConstMetric(restingDesc, prometheus.GaugeValue, float64(m.resting.Load()), label)
		open += m.open.Load()
		for r := range m.rejects {
			rejects[r] += m.rejects[r].Load()
		}
	}
	for r, k := range rejects {
		if r != int(engine.OK) {
			ch <- prometheus.MustNewConstMetric(rejectsDesc, prometheus.CounterValue, float64(k), engine.Reject(r).String())
		}
	}
	ch <- prometheus.MustNewConstMetric(positionsDesc, prometheus.GaugeValue, float64(open))
	keys, bytes := n.Written()
	ch <- prometheus.MustNewConstMetric(writtenKeysDesc, prometheus.CounterValue, float64(keys))
	ch <- prometheus.MustNewConstMetric(writtenBytesDesc, prometheus.CounterValue, float64(bytes))
}
