// Command concierge is the Concierge server: the API (serve), the background
// worker (worker), schema migrations (migrate), a one-process development mode
// (dev) and operator commands (admin).
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
