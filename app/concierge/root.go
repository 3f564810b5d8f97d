package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/conciergehq/concierge/adapters/tracing"
	"github.com/conciergehq/concierge/config"
	"github.com/conciergehq/concierge/core/domain"
)

// Exit codes of the concierge binary.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// env is what every command needs from the process: configuration, output
// streams and a logger, built once in run and passed down explicitly.
type env struct {
	getenv func(string) string
	stdout io.Writer
	stderr io.Writer
}

// usageError marks errors that come from how the command was called.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// run executes one command and returns the process exit code. Every failure is
// printed as one line on stderr.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	e := &env{getenv: getenv, stdout: stdout, stderr: stderr}
	root := &cobra.Command{
		Use:           "concierge",
		Short:         "Concierge: workspace-based AI support chat",
		Long:          "Concierge serves the chat API and widget (serve), runs background jobs (worker),\nmigrates the database (migrate), runs everything in one process for development (dev)\nand manages workspaces (admin). Configuration comes from CONCIERGE_* environment variables.",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetArgs(args)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(serveCommand(e), workerCommand(e), migrateCommand(e), devCommand(e), adminCommand(e))

	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	fmt.Fprintf(stderr, "concierge: %v\n", err)
	var ue usageError
	if errors.As(err, &ue) || isCobraUsage(err) || errors.Is(err, domain.ErrInvalidInput) {
		return exitUsage
	}
	return exitFailure
}

// isCobraUsage recognises cobra's own argument errors, which it does not type.
func isCobraUsage(err error) bool {
	msg := err.Error()
	for _, prefix := range []string{"unknown command", "unknown flag", "unknown shorthand flag", "accepts ", "requires at least", "required flag"} {
		if len(msg) >= len(prefix) && msg[:len(prefix)] == prefix {
			return true
		}
	}
	return false
}

// load reads the configuration and builds the logger.
func (e *env) load() (config.Config, *slog.Logger, error) {
	cfg, err := config.Load(e.getenv)
	if err != nil {
		return config.Config{}, nil, err
	}
	level, _ := cfg.LogLevelValue()
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler = slog.NewTextHandler(e.stderr, opts)
	if cfg.LogFormat == "json" {
		h = slog.NewJSONHandler(e.stderr, opts)
	}
	return cfg, slog.New(h), nil
}

// tracing builds the process's tracing from the standard OTEL_* variables
// (off without an OTLP endpoint: adapters/tracing.New) and, when it is on,
// the logger whose lines carry their trace_id and span_id.
func (e *env) tracing(log *slog.Logger) (*tracing.Tracing, *slog.Logger, error) {
	version := "devel"
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
		version = info.Main.Version
	}
	t, err := tracing.New(e.getenv, "concierge", version)
	if err != nil {
		return nil, nil, err
	}
	if !t.Enabled() {
		return nil, log, nil
	}
	log = slog.New(tracing.LogHandler(log.Handler()))
	log.Info("tracing on", "endpoint", t.Endpoint)
	return t, log, nil
}
