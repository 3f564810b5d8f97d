package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/hibiken/asynq"

	"github.com/conciergehq/concierge/adapters/httpapi/console"
	"github.com/conciergehq/concierge/adapters/metrics"
	"github.com/conciergehq/concierge/adapters/queuemonitor"
	redisadapter "github.com/conciergehq/concierge/adapters/redis"
	"github.com/conciergehq/concierge/config"
	"github.com/conciergehq/concierge/ports"
	"github.com/conciergehq/concierge/workers"
)

// observe builds the process's metrics when CONCIERGE_METRICS_ADDR is set:
// its registry, and the collectors that read the pools, the queues, the
// retrieval indexes and readiness at each scrape. The observers are wired
// by connect; without metrics nothing is observed and nothing costs.
func (s *system) observe() {
	if s.cfg.MetricsAddr == "" {
		return
	}
	m := metrics.New()
	m.DBPool(func() metrics.PoolStats {
		st := s.db.Pool.Stat()
		return metrics.PoolStats{InUse: int(st.AcquiredConns()), Idle: int(st.IdleConns()), Open: int(st.TotalConns()), Max: int(st.MaxConns())}
	})
	m.RedisPool(func() (uint32, uint32, uint32) {
		st := s.redis.PoolStats()
		return st.TotalConns, st.IdleConns, st.StaleConns
	})
	m.IndexBytes(func() int64 { return s.retriever.Stats().Bytes })
	m.Ready(s.healthChecks())
	s.inspector = asynq.NewInspector(s.redisOpt)
	m.Queues(s.inspector, []string{workers.QueueInbound, workers.QueueDelivery, workers.QueueKnowledge, workers.QueueDefault},
		s.log.With("component", "metrics"))
	s.metrics = m
}

// healthChecks are what /readyz and concierge_ready check.
func (s *system) healthChecks() map[string]ports.HealthChecker {
	return map[string]ports.HealthChecker{"postgres": s.store, "redis": redisadapter.NewHealth(s.redis)}
}

// serveMetrics serves /metrics on CONCIERGE_METRICS_ADDR until ctx ends;
// stop shuts it down. Without metrics it does nothing. A dev process whose
// default address is taken (optional) only warns: its metrics are a
// convenience there.
func (s *system) serveMetrics(ctx context.Context, optional bool) (addr string, stop func(), err error) {
	if s.metrics == nil {
		return "", func() {}, nil
	}
	ln, err := net.Listen("tcp", s.cfg.MetricsAddr)
	if err != nil {
		err = fmt.Errorf("%sMETRICS_ADDR: cannot listen on %s: %v; stop whatever uses it, choose another address, or set it to off", config.Prefix, s.cfg.MetricsAddr, rootCause(err))
		if optional {
			s.log.Warn("metrics are not served", "error", err)
			return "", func() {}, nil
		}
		return "", nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", s.metrics.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("metrics listener stopped", "error", err)
		}
	}()
	s.log.Info("metrics listening", "addr", ln.Addr().String())
	stopped := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
		case <-stopped:
		}
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	var once bool
	return ln.Addr().String(), func() {
		if !once {
			once = true
			close(stopped)
			<-done
		}
	}, nil
}

// queueMonitor builds the console's queue monitor when an operator
// workspace is configured (only its owners may see it).
func (s *system) queueMonitor() (console.QueueMonitor, error) {
	if s.cfg.OperatorWorkspace == "" {
		return nil, nil
	}
	if s.monitor == nil {
		m, err := queuemonitor.New(s.redisOpt, console.QueuesPrefix)
		if err != nil {
			return nil, err
		}
		s.monitor = m
	}
	return s.monitor, nil
}
