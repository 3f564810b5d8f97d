package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/spf13/cobra"

	httpapi "github.com/conciergehq/concierge/adapters/httpapi"
	"github.com/conciergehq/concierge/config"
)

func serveCommand(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "serve",
		Short: "Serve the HTTP API (run several behind a load balancer; no sticky sessions needed)",
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
			ln, err := listen(cfg)
			if err != nil {
				return err
			}
			_, stopMetrics, err := sys.serveMetrics(cmd.Context(), false)
			if err != nil {
				_ = ln.Close()
				return err
			}
			defer stopMetrics()
			return sys.serveHTTP(cmd.Context(), ln)
		},
	}
}

func listen(cfg config.Config) (net.Listener, error) {
	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return nil, fmt.Errorf("%sHTTP_ADDR: cannot listen on %s: %v; stop whatever uses it or choose another address", config.Prefix, cfg.HTTPAddr, rootCause(err))
	}
	return ln, nil
}

// serveHTTP serves until ctx is cancelled, then drains in-flight requests for
// up to the shutdown timeout. Requests run under their own base context, so a
// SIGTERM does not cancel the work of requests that are still draining.
func (s *system) serveHTTP(ctx context.Context, ln net.Listener) error {
	base, cancelBase := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelBase()
	hub := s.startRelay()
	defer func() { _ = hub.Close() }()
	app, err := s.httpApp(base)
	if err != nil {
		return err
	}
	s.listenForChanges(base)
	served := make(chan error, 1)
	go func() { served <- app.Listener(httpapi.Listener(ln)) }()
	s.log.Info("HTTP API listening", "addr", ln.Addr().String(), "publicUrl", s.cfg.PublicURL)

	select {
	case err := <-served:
		return fmt.Errorf("HTTP server stopped: %w", err)
	case <-ctx.Done():
	}
	s.log.Info("shutting down the HTTP API", "timeout", s.cfg.ShutdownTimeout)
	// Live streams would hold their connections through the whole drain.
	_ = hub.Close()
	err = app.ShutdownWithTimeout(s.cfg.ShutdownTimeout)
	// Answers still streaming after the drain are cancelled now; wait for them
	// to store what they said before the caller closes the stores.
	cancelBase()
	wait, cancelWait := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancelWait()
	if werr := s.chat.Wait(wait); werr != nil {
		s.log.Warn("answers still running after shutdown", "error", werr)
	}
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("shutting down: %w", err)
	}
	return nil
}
