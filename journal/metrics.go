package journal

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// walFsyncDesc is the WAL's fdatasync latency, as Pebble measures it.
var walFsyncDesc = prometheus.NewDesc("exchanged_wal_fsync_seconds",
	"Latency of the journal WAL's fdatasyncs (Pebble's measure).", nil, nil)

var corruptionsDesc = prometheus.NewDesc("exchanged_storage_corruptions_total",
	"Damaged blocks the store met since it opened (reads, compactions, scrubs).", nil, nil)

// Collector returns the store's metrics: exchanged_wal_fsync_seconds and
// exchanged_storage_corruptions_total.
func (s *Store) Collector() prometheus.Collector { return storeCollector{s} }

type storeCollector struct{ s *Store }

func (c storeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- walFsyncDesc
	ch <- corruptionsDesc
}

func (c storeCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.s
	ch <- prometheus.MustNewConstMetric(corruptionsDesc, prometheus.CounterValue, float64(s.corruptions.Load()))
	s.mu.RLock()
	var h prometheus.Histogram
	if s.db != nil && !s.readOnly {
		h = s.db.Metrics().LogWriter.FsyncLatency
	}
	s.mu.RUnlock()
	if h == nil {
		return
	}
	var m dto.Metric
	if err := h.Write(&m); err != nil || m.Histogram == nil {
		return
	}
	// Pebble's histogram counts nanoseconds; ours, seconds.
	buckets := make(map[float64]uint64, len(m.Histogram.Bucket))
	for _, b := range m.Histogram.Bucket {
		if ub := b.GetUpperBound(); ub > 0 {
			buckets[ub/1e9] = b.GetCumulativeCount()
		}
	}
	ch <- prometheus.MustNewConstHistogram(walFsyncDesc, m.Histogram.GetSampleCount(), m.Histogram.GetSampleSum()/1e9, buckets)
}
