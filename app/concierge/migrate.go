package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/conciergehq/concierge/adapters/postgres"
	"github.com/conciergehq/concierge/config"
)

func migrateCommand(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "migrate",
		Short: "Create the database if needed and apply the embedded migrations (safe to run from several pods at once)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, log, err := e.load()
			if err != nil {
				return err
			}
			if err := migrate(cmd.Context(), cfg, log); err != nil {
				return err
			}
			fmt.Fprintln(e.stdout, "migrations applied")
			return nil
		},
	}
}

// migrate creates the database when it is missing and applies migrations under
// a PostgreSQL advisory lock, so pods starting together apply each one once.
func migrate(ctx context.Context, cfg config.Config, log *slog.Logger) error {
	if err := postgres.EnsureDatabase(ctx, cfg.DatabaseURL); err != nil {
		return fmt.Errorf("%sDATABASE_URL: cannot create or reach the database at %s: %v; start PostgreSQL (make services) or fix %sDATABASE_URL",
			config.Prefix, config.MaskURL(cfg.DatabaseURL), rootCause(err), config.Prefix)
	}
	if err := postgres.Migrate(ctx, cfg.DatabaseURL, log); err != nil {
		return fmt.Errorf("migrating the database at %s: %v", config.MaskURL(cfg.DatabaseURL), err)
	}
	return nil
}
