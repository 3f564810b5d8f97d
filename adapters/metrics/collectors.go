package metrics

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/conciergehq/concierge/ports"
)

// scrapeTimeout bounds what one scrape waits for Redis and PostgreSQL.
const scrapeTimeout = 2 * time.Second

// PoolStats are a connection pool's figures at one moment.
type PoolStats struct {
	InUse, Idle, Open, Max int
}

// DBPool reports the PostgreSQL pool as concierge_db_connections.
func (m *Metrics) DBPool(stats func() PoolStats) {
	d := prometheus.NewDesc(Namespace+"_db_connections", "PostgreSQL pool connections, by state (in_use, idle, open, max).", []string{"state"}, nil)
	m.register("db_connections", collectorFunc{desc: []*prometheus.Desc{d}, collect: func(ch chan<- prometheus.Metric) {
		s := stats()
		for _, v := range []struct {
			state string
			n     int
		}{{"in_use", s.InUse}, {"idle", s.Idle}, {"open", s.Open}, {"max", s.Max}} {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v.n), v.state)
		}
	}})
}

// RedisPool reports the go-redis pool as concierge_redis_pool_connections.
func (m *Metrics) RedisPool(stats func() (total, idle, stale uint32)) {
	d := prometheus.NewDesc(Namespace+"_redis_pool_connections", "Redis client pool connections, by state (total, idle, stale: closed since for being idle too long).", []string{"state"}, nil)
	m.register("redis_pool_connections", collectorFunc{desc: []*prometheus.Desc{d}, collect: func(ch chan<- prometheus.Metric) {
		total, idle, stale := stats()
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(total), "total")
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(idle), "idle")
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(stale), "stale")
	}})
}

// IndexBytes reports the in-memory retrieval indexes' size.
func (m *Metrics) IndexBytes(bytes func() int64) {
	m.register("retrieval_index_bytes", prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: Namespace, Name: "retrieval_index_bytes",
		Help: "Bytes of the in-memory retrieval indexes this process holds (texts included), as charged to CONCIERGE_INDEX_CACHE_BYTES."},
		func() float64 { return float64(bytes()) }))
}

// Ready reports concierge_ready: 1 when every check answers, as /readyz
// would answer 200, 0 otherwise. Each scrape runs the checks.
func (m *Metrics) Ready(checks map[string]ports.HealthChecker) {
	m.register("ready", prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: Namespace, Name: "ready",
		Help: "1 when this process's dependencies answer (as /readyz would answer 200), 0 otherwise."},
		func() float64 {
			ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
			defer cancel()
			var (
				wg    sync.WaitGroup
				mu    sync.Mutex
				ready = true
			)
			for _, check := range checks {
				wg.Go(func() {
					if err := check.Ping(ctx); err != nil {
						mu.Lock()
						ready = false
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			if ready {
				return 1
			}
			return 0
		}))
}

// QueueInspector is what the queue collector reads of asynq.Inspector.
type QueueInspector interface {
	Queues() ([]string, error)
	GetQueueInfo(queue string) (*asynq.QueueInfo, error)
}

// Queues reports the asynq queues' sizes by state and their latency (the
// age of the oldest pending task), read from Redis on each scrape. The
// known queues are reported even before asynq has seen a task in them.
// A queue that cannot be read is left out of that scrape (and logged).
func (m *Metrics) Queues(in QueueInspector, known []string, log *slog.Logger) {
	tasks := prometheus.NewDesc(Namespace+"_queue_tasks", "Tasks in an asynq queue, by state (pending, active, scheduled, retry, archived).", []string{"queue", "state"}, nil)
	latency := prometheus.NewDesc(Namespace+"_queue_latency_seconds", "Age of the oldest pending task of an asynq queue (0 when none waits).", []string{"queue"}, nil)
	m.reg.MustRegister(collectorFunc{desc: []*prometheus.Desc{tasks, latency}, collect: func(ch chan<- prometheus.Metric) {
		queues, err := in.Queues()
		if err != nil {
			log.Warn("metrics: listing the asynq queues failed", "error", err)
		}
		names := slices.Clone(known)
		for _, q := range queues {
			if !slices.Contains(names, q) {
				names = append(names, q)
			}
		}
		for _, q := range names {
			info, err := in.GetQueueInfo(q)
			if err != nil {
				if slices.Contains(queues, q) {
					log.Warn("metrics: reading an asynq queue failed", "queue", q, "error", err)
					continue
				}
				info = &asynq.QueueInfo{Queue: q} // never used yet: empty
			}
			for _, v := range []struct {
				state string
				n     int
			}{{"pending", info.Pending}, {"active", info.Active}, {"scheduled", info.Scheduled}, {"retry", info.Retry}, {"archived", info.Archived}} {
				ch <- prometheus.MustNewConstMetric(tasks, prometheus.GaugeValue, float64(v.n), q, v.state)
			}
			ch <- prometheus.MustNewConstMetric(latency, prometheus.GaugeValue, info.Latency.Seconds(), q)
		}
	}})
	m.names = append(m.names, Namespace+"_queue_tasks", Namespace+"_queue_latency_seconds")
}

// Names lists the concierge_ metric families a process exports with every
// collector attached (the API's and the worker's together), for checks
// that the dashboards and alert rules in deployments/ name only real
// metrics. The values behind the collectors are never read here.
func Names() []string {
	m := New()
	m.DBPool(func() PoolStats { return PoolStats{} })
	m.RedisPool(func() (uint32, uint32, uint32) { return 0, 0, 0 })
	m.IndexBytes(func() int64 { return 0 })
	m.Ready(nil)
	m.Queues(noQueues{}, nil, slog.New(slog.DiscardHandler))
	return slices.Clone(m.names)
}

// noQueues is an inspector of no queues, for Names.
type noQueues struct{}

func (noQueues) Queues() ([]string, error)                     { return nil, nil }
func (noQueues) GetQueueInfo(string) (*asynq.QueueInfo, error) { return &asynq.QueueInfo{}, nil }

// collectorFunc is a collector of fixed descriptions whose values are read
// at each scrape.
type collectorFunc struct {
	desc    []*prometheus.Desc
	collect func(chan<- prometheus.Metric)
}

func (c collectorFunc) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.desc {
		ch <- d
	}
}

func (c collectorFunc) Collect(ch chan<- prometheus.Metric) { c.collect(ch) }
