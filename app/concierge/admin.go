package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/conciergehq/concierge/adapters/postgres"
	redisadapter "github.com/conciergehq/concierge/adapters/redis"
	"github.com/conciergehq/concierge/config"
	"github.com/conciergehq/concierge/core/account"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/core/workspace"
	"github.com/conciergehq/concierge/ports"
)

// adminCommand is how an operator gives a fresh install its first workspace and
// manages keys, plans and webhook secrets. It needs PostgreSQL, and Redis to
// tell running pods of a change at once (without it they notice within their
// authentication cache's lifetime).
func adminCommand(e *env) *cobra.Command {
	admin := &cobra.Command{Use: "admin", Short: "Operator commands: workspaces, API keys, webhook secrets, console users (add --json for machine-readable output)"}
	admin.PersistentFlags().Bool("json", false, "print JSON instead of text")

	ws := &cobra.Command{Use: "workspace", Short: "Create workspaces and change their plan"}
	ws.AddCommand(workspaceCreateCommand(e), workspaceShowCommand(e), workspaceSetPlanCommand(e), workspaceSetAddonCommand(e))
	keys := &cobra.Command{Use: "apikey", Short: "Create, list and revoke API keys"}
	keys.AddCommand(apikeyCreateCommand(e), apikeyListCommand(e), apikeyRevokeCommand(e))
	secret := &cobra.Command{Use: "webhook-secret", Short: "Rotate a workspace's webhook secret"}
	secret.AddCommand(webhookRotateCommand(e))
	users := &cobra.Command{Use: "user", Short: "Invite people to a workspace's console; make password reset links"}
	users.AddCommand(userInviteCommand(e), userResetCommand(e))
	admin.AddCommand(ws, keys, secret, users)
	return admin
}

// withWorkspaces opens PostgreSQL, runs fn with the workspace use cases, and closes.
func (e *env) withWorkspaces(ctx context.Context, fn func(*workspace.Service) error) error {
	cfg, log, err := e.load()
	if err != nil {
		return err
	}
	db, err := postgres.Open(ctx, cfg.DatabaseURL, postgres.Options{MaxOpenConns: 2, MaxIdleConns: 1})
	if err != nil {
		return fmt.Errorf("%sDATABASE_URL: cannot use PostgreSQL at %s: %v; start PostgreSQL (make services), run `concierge migrate`, or fix %sDATABASE_URL",
			config.Prefix, config.MaskURL(cfg.DatabaseURL), rootCause(err), config.Prefix)
	}
	defer func() { _ = db.Close() }()
	store := postgres.NewStore(db.Gorm, db.Pool)
	// Changes are announced to the running pods so that a revoked key or a
	// plan change applies at once; without Redis they apply within the
	// pods' authentication cache lifetime, which the service logs.
	var changes ports.WorkspaceNotifier = unannounced{}
	if rdb, err := redisadapter.Connect(ctx, cfg.RedisURL); err == nil {
		defer func() { _ = rdb.Close() }()
		changes = redisadapter.NewChanges(rdb, log)
	}
	// No authentication cache: the CLI authenticates nothing and exits.
	return fn(workspace.NewService(store, store, domain.SystemClock{}, log, 0, changes))
}

// withAccounts opens PostgreSQL, runs fn with the account use cases, and
// closes. Links are emailed too when CONCIERGE_SMTP_URL is set.
func (e *env) withAccounts(ctx context.Context, fn func(*account.Service) error) error {
	cfg, log, err := e.load()
	if err != nil {
		return err
	}
	db, err := postgres.Open(ctx, cfg.DatabaseURL, postgres.Options{MaxOpenConns: 2, MaxIdleConns: 1})
	if err != nil {
		return fmt.Errorf("%sDATABASE_URL: cannot use PostgreSQL at %s: %v; start PostgreSQL (make services), run `concierge migrate`, or fix %sDATABASE_URL",
			config.Prefix, config.MaskURL(cfg.DatabaseURL), rootCause(err), config.Prefix)
	}
	defer func() { _ = db.Close() }()
	// The operator's commands remove no member: nothing to report.
	svc, err := accounts(cfg, postgres.NewStore(db.Gorm, db.Pool), operatorLimiter{}, domain.SystemClock{}, nil, log)
	if err != nil {
		return err
	}
	return fn(svc)
}

// operatorLimiter lets every call through: the operator's commands
// (InviteByOperator, ResetLink) are not throttled, and the CLI then needs
// no Redis.
type operatorLimiter struct{}

func (operatorLimiter) Allow(context.Context, string, int) (ports.RateLimit, error) {
	return ports.RateLimit{Allowed: true}, nil
}

// unannounced is the admin CLI's notifier when Redis cannot be reached.
type unannounced struct{}

func (unannounced) WorkspaceChanged(context.Context, string) error {
	return domain.Unavailable("announce the change", errors.New("redis is not reachable"))
}

func jsonFlag(cmd *cobra.Command) bool {
	v, _ := cmd.Flags().GetBool("json")
	return v
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func requireFlag(cmd *cobra.Command, name string) (string, error) {
	v, _ := cmd.Flags().GetString(name)
	if v == "" {
		return "", usageError{fmt.Errorf("--%s is required", name)}
	}
	return v, nil
}

type workspaceJSON struct {
	WorkspaceID             string   `json:"workspaceId"`
	Name                    string   `json:"name"`
	Plan                    string   `json:"plan"`
	Addons                  []string `json:"addons"`
	WebhookSecret           string   `json:"webhookSecret,omitempty"`
	PreviousSecretExpiresAt *string  `json:"previousWebhookSecretExpiresAt,omitempty"`
	APIKey                  string   `json:"apiKey,omitempty"`
	APIKeyID                string   `json:"apiKeyId,omitempty"`
	CreatedAt               string   `json:"createdAt"`
}

func toWorkspaceJSON(ws domain.Workspace) workspaceJSON {
	out := workspaceJSON{WorkspaceID: ws.ID, Name: ws.Name, Plan: string(ws.Plan), Addons: []string{}, CreatedAt: ws.CreatedAt.UTC().Format(time.RFC3339)}
	for _, a := range ws.Addons {
		out.Addons = append(out.Addons, string(a))
	}
	if ws.PreviousWebhookSecret != "" {
		t := ws.PreviousSecretExpiresAt.UTC().Format(time.RFC3339)
		out.PreviousSecretExpiresAt = &t
	}
	return out
}

func workspaceCreateCommand(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "create --name NAME --plan free|hobby|standard|enterprise",
		Short: "Create a workspace; prints its id, first API key and webhook secret (shown once)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			name, err := requireFlag(cmd, "name")
			if err != nil {
				return err
			}
			plan, _ := cmd.Flags().GetString("plan")
			return e.withWorkspaces(cmd.Context(), func(s *workspace.Service) error {
				created, err := s.CreateWorkspace(cmd.Context(), name, domain.Plan(plan))
				if err != nil {
					return err
				}
				out := toWorkspaceJSON(created.Workspace)
				out.APIKey, out.APIKeyID, out.WebhookSecret = created.APIKeySecret, created.APIKey.ID, created.Workspace.WebhookSecret
				if jsonFlag(cmd) {
					return printJSON(e.stdout, out)
				}
				fmt.Fprintf(e.stdout, "workspaceId:    %s\nname:           %s\nplan:           %s\napiKey:         %s\nwebhookSecret:  %s\n\nThe API key is shown only now: store it in a secret manager, not in version control.\n",
					out.WorkspaceID, out.Name, out.Plan, out.APIKey, out.WebhookSecret)
				return nil
			})
		},
	}
	cmd.Flags().String("name", "", "workspace name (required)")
	cmd.Flags().String("plan", "standard", "plan: free, hobby, standard or enterprise")
	return cmd
}

func workspaceShowCommand(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "show --workspace ID",
		Short: "Show a workspace, including its webhook secret",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			id, err := requireFlag(cmd, "workspace")
			if err != nil {
				return err
			}
			return e.withWorkspaces(cmd.Context(), func(s *workspace.Service) error {
				ws, err := s.GetWorkspace(cmd.Context(), id)
				if err != nil {
					return err
				}
				return printWorkspace(e, cmd, ws)
			})
		},
	}
	cmd.Flags().String("workspace", "", "workspace id (required)")
	return cmd
}

func printWorkspace(e *env, cmd *cobra.Command, ws domain.Workspace) error {
	out := toWorkspaceJSON(ws)
	out.WebhookSecret = ws.WebhookSecret
	if jsonFlag(cmd) {
		return printJSON(e.stdout, out)
	}
	fmt.Fprintf(e.stdout, "workspaceId:    %s\nname:           %s\nplan:           %s\naddons:         %v\nwebhookSecret:  %s\n", out.WorkspaceID, out.Name, out.Plan, out.Addons, out.WebhookSecret)
	if out.PreviousSecretExpiresAt != nil {
		fmt.Fprintf(e.stdout, "previous webhook secret valid until %s\n", *out.PreviousSecretExpiresAt)
	}
	return nil
}

func workspaceSetPlanCommand(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "set-plan --workspace ID --plan free|hobby|standard|enterprise",
		Short: "Change a workspace's plan",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			id, err := requireFlag(cmd, "workspace")
			if err != nil {
				return err
			}
			plan, err := requireFlag(cmd, "plan")
			if err != nil {
				return err
			}
			return e.withWorkspaces(cmd.Context(), func(s *workspace.Service) error {
				ws, err := s.SetPlan(cmd.Context(), id, domain.Plan(plan))
				if err != nil {
					return err
				}
				if jsonFlag(cmd) {
					return printJSON(e.stdout, toWorkspaceJSON(ws))
				}
				fmt.Fprintf(e.stdout, "workspace %s is now on the %s plan\n", ws.ID, ws.Plan.Title())
				return nil
			})
		},
	}
	cmd.Flags().String("workspace", "", "workspace id (required)")
	cmd.Flags().String("plan", "", "plan: free, hobby, standard or enterprise (required)")
	return cmd
}

func workspaceSetAddonCommand(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "set-addon --workspace ID --addon identityVerification|whiteLabel [--enabled=false]",
		Short: "Turn an add-on on or off for a workspace below Enterprise",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			id, err := requireFlag(cmd, "workspace")
			if err != nil {
				return err
			}
			addon, err := requireFlag(cmd, "addon")
			if err != nil {
				return err
			}
			enabled, _ := cmd.Flags().GetBool("enabled")
			return e.withWorkspaces(cmd.Context(), func(s *workspace.Service) error {
				ws, err := s.SetAddon(cmd.Context(), id, domain.Feature(addon), enabled)
				if err != nil {
					return err
				}
				if jsonFlag(cmd) {
					return printJSON(e.stdout, toWorkspaceJSON(ws))
				}
				fmt.Fprintf(e.stdout, "workspace %s add-ons: %v\n", ws.ID, ws.Addons)
				return nil
			})
		},
	}
	cmd.Flags().String("workspace", "", "workspace id (required)")
	cmd.Flags().String("addon", "", "identityVerification or whiteLabel (required)")
	cmd.Flags().Bool("enabled", true, "true to turn the add-on on, false to turn it off")
	return cmd
}

type apiKeyJSON struct {
	ID            string  `json:"id"`
	WorkspaceID   string  `json:"workspaceId"`
	Name          string  `json:"name"`
	DisplayPrefix string  `json:"prefix"`
	APIKey        string  `json:"apiKey,omitempty"`
	CreatedAt     string  `json:"createdAt"`
	LastUsedAt    *string `json:"lastUsedAt"`
	RevokedAt     *string `json:"revokedAt"`
}

func toAPIKeyJSON(k domain.APIKey) apiKeyJSON {
	format := func(t *time.Time) *string {
		if t == nil {
			return nil
		}
		s := t.UTC().Format(time.RFC3339)
		return &s
	}
	return apiKeyJSON{ID: k.ID, WorkspaceID: k.WorkspaceID, Name: k.Name, DisplayPrefix: k.DisplayPrefix,
		CreatedAt: k.CreatedAt.UTC().Format(time.RFC3339), LastUsedAt: format(k.LastUsedAt), RevokedAt: format(k.RevokedAt)}
}

func apikeyCreateCommand(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "create --workspace ID [--name NAME]",
		Short: "Create an API key; the key is printed once and only its hash is stored",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			id, err := requireFlag(cmd, "workspace")
			if err != nil {
				return err
			}
			name, _ := cmd.Flags().GetString("name")
			return e.withWorkspaces(cmd.Context(), func(s *workspace.Service) error {
				key, secret, err := s.CreateAPIKey(cmd.Context(), id, name)
				if err != nil {
					return err
				}
				out := toAPIKeyJSON(key)
				out.APIKey = secret
				if jsonFlag(cmd) {
					return printJSON(e.stdout, out)
				}
				fmt.Fprintf(e.stdout, "apiKeyId:  %s\napiKey:    %s\n\nThe key is shown only now.\n", key.ID, secret)
				return nil
			})
		},
	}
	cmd.Flags().String("workspace", "", "workspace id (required)")
	cmd.Flags().String("name", "", "a label for the key, such as the integration using it")
	return cmd
}

func apikeyListCommand(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list --workspace ID",
		Short: "List a workspace's API keys (prefixes only, never the keys)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			id, err := requireFlag(cmd, "workspace")
			if err != nil {
				return err
			}
			return e.withWorkspaces(cmd.Context(), func(s *workspace.Service) error {
				keys, err := s.ListAPIKeys(cmd.Context(), id)
				if err != nil {
					return err
				}
				out := make([]apiKeyJSON, 0, len(keys))
				for _, k := range keys {
					out = append(out, toAPIKeyJSON(k))
				}
				if jsonFlag(cmd) {
					return printJSON(e.stdout, map[string]any{"data": out})
				}
				tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tNAME\tPREFIX\tCREATED\tLAST USED\tREVOKED")
				for _, k := range out {
					fmt.Fprintf(tw, "%s\t%s\t%s…\t%s\t%s\t%s\n", k.ID, k.Name, k.DisplayPrefix, k.CreatedAt, orDash(k.LastUsedAt), orDash(k.RevokedAt))
				}
				return tw.Flush()
			})
		},
	}
	cmd.Flags().String("workspace", "", "workspace id (required)")
	return cmd
}

func orDash(s *string) string {
	if s == nil {
		return "-"
	}
	return *s
}

func apikeyRevokeCommand(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "revoke --workspace ID --key KEY_ID",
		Short: "Revoke an API key; calls with it get 401 from then on",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			id, err := requireFlag(cmd, "workspace")
			if err != nil {
				return err
			}
			keyID, err := requireFlag(cmd, "key")
			if err != nil {
				return err
			}
			return e.withWorkspaces(cmd.Context(), func(s *workspace.Service) error {
				key, err := s.RevokeAPIKey(cmd.Context(), id, keyID)
				if err != nil {
					return err
				}
				if jsonFlag(cmd) {
					return printJSON(e.stdout, toAPIKeyJSON(key))
				}
				fmt.Fprintf(e.stdout, "API key %s revoked\n", key.ID)
				return nil
			})
		},
	}
	cmd.Flags().String("workspace", "", "workspace id (required)")
	cmd.Flags().String("key", "", "API key id, key_... (required)")
	return cmd
}

func webhookRotateCommand(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rotate --workspace ID [--grace 24h]",
		Short: "Make a new webhook secret; the old one keeps working until the grace period ends",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			id, err := requireFlag(cmd, "workspace")
			if err != nil {
				return err
			}
			grace, _ := cmd.Flags().GetDuration("grace")
			return e.withWorkspaces(cmd.Context(), func(s *workspace.Service) error {
				ws, err := s.RotateWebhookSecret(cmd.Context(), id, grace)
				if err != nil {
					return err
				}
				out := toWorkspaceJSON(ws)
				out.WebhookSecret = ws.WebhookSecret
				if jsonFlag(cmd) {
					return printJSON(e.stdout, out)
				}
				fmt.Fprintf(e.stdout, "webhookSecret:  %s\n", ws.WebhookSecret)
				if out.PreviousSecretExpiresAt != nil {
					fmt.Fprintf(e.stdout, "the previous secret stays valid until %s; update your integrations before then and watch for 401 responses\n", *out.PreviousSecretExpiresAt)
				} else {
					fmt.Fprintln(e.stdout, "the previous secret no longer works")
				}
				return nil
			})
		},
	}
	cmd.Flags().String("workspace", "", "workspace id (required)")
	cmd.Flags().Duration("grace", 24*time.Hour, "how long the previous secret stays valid (0 ends it now, at most 720h)")
	return cmd
}

type invitationJSON struct {
	InvitationID string `json:"invitationId"`
	WorkspaceID  string `json:"workspaceId"`
	Email        string `json:"email"`
	Role         string `json:"role"`
	ExpiresAt    string `json:"expiresAt"`
	Link         string `json:"link"`
	Emailed      bool   `json:"emailed"`
}

func userInviteCommand(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "invite --workspace ID --email EMAIL --role owner|admin|agent",
		Short: "Invite someone to a workspace's console; prints the one-time link (a workspace's first owner comes from here)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			id, err := requireFlag(cmd, "workspace")
			if err != nil {
				return err
			}
			email, err := requireFlag(cmd, "email")
			if err != nil {
				return err
			}
			role, err := requireFlag(cmd, "role")
			if err != nil {
				return err
			}
			return e.withAccounts(cmd.Context(), func(s *account.Service) error {
				inv, err := s.InviteByOperator(cmd.Context(), id, account.InviteRequest{Email: email, Role: domain.MemberRole(role)})
				if err != nil {
					return err
				}
				out := invitationJSON{InvitationID: inv.ID, WorkspaceID: inv.WorkspaceID, Email: inv.Email, Role: string(inv.Role),
					ExpiresAt: inv.ExpiresAt.UTC().Format(time.RFC3339), Link: inv.Link, Emailed: inv.Emailed}
				if jsonFlag(cmd) {
					return printJSON(e.stdout, out)
				}
				fmt.Fprintf(e.stdout, "invitationId:  %s\nworkspaceId:   %s\nemail:         %s\nrole:          %s\nexpiresAt:     %s\nlink:          %s\n\n",
					out.InvitationID, out.WorkspaceID, out.Email, out.Role, out.ExpiresAt, out.Link)
				if inv.Emailed {
					fmt.Fprintf(e.stdout, "The link was emailed to %s. It works once, until it expires.\n", inv.Email)
				} else {
					fmt.Fprintf(e.stdout, "Send the link to %s yourself: it works once, until it expires, and is shown only now.\n", inv.Email)
				}
				return nil
			})
		},
	}
	cmd.Flags().String("workspace", "", "workspace id, ws_... (required)")
	cmd.Flags().String("email", "", "the invited person's email address (required)")
	cmd.Flags().String("role", "", "owner, admin or agent (required)")
	return cmd
}

func userResetCommand(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "reset --email EMAIL",
		Short: "Make a one-time password reset link for a console user (valid for an hour)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			email, err := requireFlag(cmd, "email")
			if err != nil {
				return err
			}
			return e.withAccounts(cmd.Context(), func(s *account.Service) error {
				link, err := s.ResetLink(cmd.Context(), email)
				if err != nil {
					return err
				}
				if jsonFlag(cmd) {
					norm, _ := domain.NormalizeEmail(email)
					return printJSON(e.stdout, map[string]string{"email": norm, "link": link})
				}
				fmt.Fprintf(e.stdout, "link:  %s\n\nThe link sets a new password once, within an hour, and signs the user out everywhere.\n", link)
				return nil
			})
		},
	}
	cmd.Flags().String("email", "", "the user's email address (required)")
	return cmd
}
