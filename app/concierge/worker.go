package main

import (
	"context"
	"fmt"
	"sync"

	"github.com/spf13/cobra"
)

func workerCommand(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "worker",
		Short: "Run background jobs (asynq): inbound webhook processing, knowledge indexing, handoff and event deliveries, their sweepers, conversation outcomes and report rollups",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, log, err := e.load()
			if err != nil {
				return err
			}
			traces, log, err := e.tracing(log)
			if err != nil {
				return err
			}
			sys, err := connect(cmd.Context(), cfg, log, traces)
			if err != nil {
				return err
			}
			defer sys.close()
			_, stopMetrics, err := sys.serveMetrics(cmd.Context(), false)
			if err != nil {
				return err
			}
			defer stopMetrics()
			return sys.runWorker(cmd.Context())
		},
	}
}

// runWorker processes jobs until ctx is cancelled, then lets in-flight tasks
// finish (asynq's ShutdownTimeout) before returning.
func (s *system) runWorker(ctx context.Context) error {
	srv, sweepers := s.workerServer()
	if err := srv.Start(); err != nil {
		return fmt.Errorf("starting the worker: %w", err)
	}
	var wg sync.WaitGroup
	for _, sweeper := range sweepers {
		wg.Go(func() { sweeper.Run(ctx) })
	}
	s.log.Info("worker started", "concurrency", s.cfg.WorkerConcurrency, "indexConcurrency", s.cfg.WorkerIndexConcurrency)
	<-ctx.Done()
	s.log.Info("shutting down the worker")
	srv.Shutdown()
	wg.Wait()
	return nil
}
