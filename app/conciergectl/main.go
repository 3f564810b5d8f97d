// Command conciergectl is the command-line client of the Concierge API v2.
//
// It is configured by two environment variables:
//
//	CONCIERGE_API_KEY   an API key of the workspace (required; created in the
//	                    workspace admin area, API keys section)
//	CONCIERGE_API_URL   the API base URL, ending in /api/v2
//	                    (default http://127.0.0.1:8080/api/v2)
//
// Commands:
//
//	conciergectl agents list [--json] [--limit N] [--cursor C] [--all]
//	conciergectl conversations list [--agent SLUG] [--status S] [--json] [--limit N] [--cursor C] [--all]
//
// Exit codes, so scripts can tell failures apart:
//
//	0  success
//	1  any other error: an API error not listed below (400, 409, 429, 5xx, ...),
//	   an unexpected response, or an interrupted run
//	2  usage: bad flags or arguments, missing CONCIERGE_API_KEY, bad CONCIERGE_API_URL
//	3  authentication: the API key is missing, invalid or revoked (401)
//	4  plan: the workspace's plan lacks API access (403 PLAN_UPGRADE_REQUIRED)
//	5  network: connection refused, DNS failure or timeout
//	6  not found (404), for example an unknown agent slug
//
// Errors are printed on stderr as one line, "conciergectl: <message> (<code>)",
// with the message and code of the server's error body.
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
