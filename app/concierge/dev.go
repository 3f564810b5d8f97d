package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/conciergehq/concierge/config"
	"github.com/conciergehq/concierge/core/account"
	"github.com/conciergehq/concierge/core/domain"
)

// demoWorkspaceID is fixed so that `concierge dev` finds the demo workspace it
// seeded on an earlier start instead of creating another one.
const demoWorkspaceID = domain.PrefixWorkspace + "0000000000000000000000dev0"

func devCommand(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "dev",
		Short: "Development mode: migrate, seed a demo workspace, and run the API and the worker in one process",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			cfg, log, err := e.devDefaults().load()
			if err != nil {
				return err
			}
			if err := migrate(ctx, cfg, log); err != nil {
				return err
			}
			traces, log, err := e.tracing(log)
			if err != nil {
				return err
			}
			sys, err := connect(ctx, cfg, log, traces)
			if err != nil {
				return err
			}
			defer sys.close()
			ln, err := listen(cfg)
			if err != nil {
				return err
			}
			metricsAddr, stopMetrics, err := sys.serveMetrics(ctx, e.getenv(config.Prefix+"METRICS_ADDR") == "")
			if err != nil {
				_ = ln.Close()
				return err
			}
			defer stopMetrics()
			demo, err := sys.seedDemo(ctx)
			if err != nil {
				return fmt.Errorf("seeding the demo workspace: %w", err)
			}
			demo.MetricsAddr = metricsAddr
			printDemo(e.stdout, cfg.PublicURL, demo)

			var wg sync.WaitGroup
			var workerErr error
			wg.Go(func() { workerErr = sys.runWorker(ctx) })
			httpErr := sys.serveHTTP(ctx, ln)
			wg.Wait()
			return errors.Join(httpErr, workerErr)
		},
	}
}

// The demo workspace's owner, for signing in to the console in development.
// The password is fixed and printed in the banner: `concierge dev` is for a
// developer's machine (it listens on loopback by default), never a server.
const (
	demoOwnerEmail    = "owner@demo.concierge.test"
	demoOwnerPassword = "concierge-demo-owner"
)

// demo is what the dev banner shows.
type demo struct {
	WorkspaceID   string
	APIKey        string
	WebhookSecret string
	AgentSlug     string
	// WidgetPath is the agent's widget page, /chat/<its address>.
	WidgetPath string
	// MetricsAddr is where metrics are served ("" for nowhere).
	MetricsAddr string
}

// devDefaults is e with the defaults of development: metrics on
// config.DevMetricsAddr, and the demo workspace as the operator's (its
// owner sees the queue monitor), unless the environment says otherwise.
func (e *env) devDefaults() *env {
	dev := *e
	dev.getenv = func(name string) string {
		v := e.getenv(name)
		if v != "" {
			return v
		}
		switch name {
		case config.Prefix + "METRICS_ADDR":
			return config.DevMetricsAddr
		case config.Prefix + "OPERATOR_WORKSPACE_ID":
			return demoWorkspaceID
		}
		return v
	}
	return &dev
}

// seedDemo creates the demo workspace, agent and sources once; on later starts
// it only issues a fresh API key, because stored keys are hashes and cannot
// be shown again.
func (s *system) seedDemo(ctx context.Context) (demo, error) {
	d, err := s.seedDemoWorkspace(ctx)
	if err != nil {
		return demo{}, err
	}
	agent, err := s.agents.Get(ctx, d.WorkspaceID, d.AgentSlug)
	if err != nil {
		return demo{}, err
	}
	d.WidgetPath = "/chat/" + agent.WidgetAddress()
	if err := s.seedDemoOwner(ctx, d.WorkspaceID); err != nil {
		return demo{}, fmt.Errorf("seeding the demo owner: %w", err)
	}
	return d, nil
}

// seedDemoOwner makes the demo owner once, through the same invitation a
// real owner accepts; a later start leaves the user (and any password they
// chose) alone.
func (s *system) seedDemoOwner(ctx context.Context, workspaceID string) error {
	_, err := s.store.FindUserByEmail(ctx, demoOwnerEmail)
	if err == nil || !errors.Is(err, domain.ErrNotFound) {
		return err
	}
	inv, err := s.accounts.InviteByOperator(ctx, workspaceID, account.InviteRequest{Email: demoOwnerEmail, Role: domain.MemberOwner})
	if err != nil {
		return err
	}
	token := inv.Link[strings.LastIndex(inv.Link, "/")+1:]
	signed, err := s.accounts.AcceptInvitation(ctx, account.AcceptRequest{Token: token, Name: "Demo Owner", Password: demoOwnerPassword})
	if err != nil {
		return err
	}
	// Accepting signs in; nobody holds that session's token.
	return s.accounts.SignOut(ctx, signed.Token)
}

func (s *system) seedDemoWorkspace(ctx context.Context) (demo, error) {
	const slug = "support"
	ws, err := s.store.GetWorkspace(ctx, demoWorkspaceID)
	switch {
	case errors.Is(err, domain.ErrNotFound):
		now := s.clock.Now()
		ws = domain.Workspace{
			ID: demoWorkspaceID, Name: "Concierge Demo", Plan: domain.PlanStandard,
			WebhookSecret: domain.NewSecret(domain.PrefixWebhookSecret), CreatedAt: now, UpdatedAt: now,
		}
		key, secret := domain.NewAPIKey(ws.ID, "dev", now)
		if err := s.store.CreateWorkspace(ctx, ws, key); err != nil {
			return demo{}, err
		}
		if err := s.seedDemoAgent(ctx, ws.ID, slug); err != nil {
			return demo{}, err
		}
		return demo{WorkspaceID: ws.ID, APIKey: secret, WebhookSecret: ws.WebhookSecret, AgentSlug: slug}, nil
	case err != nil:
		return demo{}, err
	}
	_, secret, err := s.workspaces.CreateAPIKey(ctx, ws.ID, "dev")
	if err != nil {
		return demo{}, err
	}
	return demo{WorkspaceID: ws.ID, APIKey: secret, WebhookSecret: ws.WebhookSecret, AgentSlug: slug}, nil
}

func (s *system) seedDemoAgent(ctx context.Context, workspaceID, slug string) error {
	_, err := s.agents.Create(ctx, workspaceID, domain.Agent{
		Slug: slug,
		Name: "Acme Support",
		Config: domain.AgentConfig{
			SystemPrompt:       "You are Acme's support assistant. Answer only from the knowledge provided; say so when you do not know.",
			WelcomeMessage:     "Hi! I'm Acme's assistant. Ask me about orders, shipping, returns or your account.",
			SuggestedQuestions: []string{"How long does shipping take?", "How do I return an item?", "How do I reset my password?"},
			FallbackMessage:    "I'm not sure about that one. Would you like to talk to a person from our team?",
			// Zero is a real setting (answer whatever retrieval finds), so
			// the default is set here as the API and the console set it.
			RetrievalThreshold: domain.DefaultRetrievalThreshold,
			Published:          true,
		},
	})
	if err != nil {
		return err
	}
	sources := []domain.Source{
		{Type: domain.SourceText, Name: "Shipping policy", Content: "Acme ships orders within 1 business day. Standard shipping takes 3 to 5 business days; express shipping takes 1 to 2 business days. Shipping is free for orders over 50 euros. You receive a tracking link by email as soon as the parcel leaves our warehouse."},
		{Type: domain.SourceText, Name: "Returns and refunds", Content: "You can return any unused item within 30 days of delivery. Start a return from the Orders page of your account and print the prepaid label. Refunds are issued to the original payment method within 5 business days of the return reaching us."},
		{Type: domain.SourceQA, Question: "How do I reset my password?", Answer: "Click \"Forgot password\" on the sign-in page and follow the link we email you. The link is valid for one hour."},
		{Type: domain.SourceQA, Question: "Which payment methods do you accept?", Answer: "We accept credit and debit cards (Visa, Mastercard, American Express), PayPal and bank transfer."},
	}
	for _, src := range sources {
		if _, err := s.agents.AddSource(ctx, workspaceID, slug, src); err != nil {
			return err
		}
	}
	return nil
}

func printDemo(w io.Writer, base string, d demo) {
	fmt.Fprintf(w, `
Concierge is running on %[1]s with a demo workspace on the Standard plan.

  workspaceId     %[2]s
  API key         %[3]s   (new on every start; earlier ones stay valid)
  webhook secret  %[4]s
  agent           %[5]s

Chat with the agent in a browser: %[1]s%[6]s

Console: %[1]s/console
  sign in as %[7]s with the password %[8]s (development only)
  queue monitor (read-only, for the operator workspace's owners): %[1]s/console/queues
%[9]s
Try the API (in another terminal):

  export CONCIERGE_API_KEY=%[3]s CONCIERGE_API_URL=%[1]s/api/v2

  curl -s %[1]s/api/v2/chat -H "Authorization: Bearer $CONCIERGE_API_KEY" \
       -H 'Content-Type: application/json' -d '{"agent":"%[5]s","message":"How long does shipping take?"}'
  curl -sN %[1]s/api/v2/chat -H "Authorization: Bearer $CONCIERGE_API_KEY" \
       -H 'Content-Type: application/json' -d '{"message":"How do I return an item?","stream":true}'
  curl -s %[1]s/api/v2/agents -H "Authorization: Bearer $CONCIERGE_API_KEY"
  curl -s -X POST %[1]s/api/v1/sessions -H "Authorization: Bearer $CONCIERGE_API_KEY" \
       -H 'Content-Type: application/json' -d '{"slug":"%[5]s"}'
  curl -s -X POST %[1]s/api/webhooks/inbound -H 'x-webhook-secret: %[4]s' \
       -H 'Content-Type: application/json' -d '{"event":"chat.message","sessionId":"<sessionId from above>","message":"Hello"}'
  curl -s "%[1]s/api/v2/conversations?agent=%[5]s&limit=5" -H "Authorization: Bearer $CONCIERGE_API_KEY"
  go run ./app/conciergectl conversations list --agent %[5]s

  OpenAPI: %[1]s/api/v2/openapi.json    Health: %[1]s/readyz

Press Ctrl+C to stop.
`, base, d.WorkspaceID, d.APIKey, d.WebhookSecret, d.AgentSlug, d.WidgetPath, demoOwnerEmail, demoOwnerPassword, metricsLine(d.MetricsAddr))
}

// metricsLine is the banner's line about metrics.
func metricsLine(addr string) string {
	if addr == "" {
		return "\nMetrics: not served (CONCIERGE_METRICS_ADDR)\n"
	}
	return "\nMetrics (Prometheus): http://" + addr + "/metrics\n"
}
