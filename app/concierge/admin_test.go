package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/conciergehq/concierge/adapters/postgres"
	"github.com/conciergehq/concierge/adapters/postgres/pgtest"
	"github.com/conciergehq/concierge/adapters/redis/redistest"
	"github.com/conciergehq/concierge/core/account"
	"github.com/conciergehq/concierge/core/domain"
)

// Tests of the operator CLI through run, the same entry point main uses.

// admResult is one finished command.
type admResult struct {
	code   int
	stdout string
	stderr string
}

// admRun runs the concierge command line with env as its whole environment.
func admRun(t testing.TB, env map[string]string, args ...string) admResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := run(ctx, args, func(k string) string { return env[k] }, &stdout, &stderr)
	return admResult{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// admMustJSON runs a command that must succeed and decodes its JSON output.
func admMustJSON(t testing.TB, env map[string]string, v any, args ...string) string {
	t.Helper()
	res := admRun(t, env, args...)
	if res.code != exitOK {
		t.Fatalf("concierge %s: exit %d, stderr %q", strings.Join(args, " "), res.code, res.stderr)
	}
	if err := json.Unmarshal([]byte(res.stdout), v); err != nil {
		t.Fatalf("concierge %s: output is not JSON: %v: %s", strings.Join(args, " "), err, res.stdout)
	}
	return res.stdout
}

// admMustText runs a command that must succeed and returns its output.
func admMustText(t testing.TB, env map[string]string, args ...string) string {
	t.Helper()
	res := admRun(t, env, args...)
	if res.code != exitOK {
		t.Fatalf("concierge %s: exit %d, stderr %q", strings.Join(args, " "), res.code, res.stderr)
	}
	return res.stdout
}

// admEnv is the environment of a CLI sharing a fresh database and Redis.
func admEnv(t testing.TB) map[string]string {
	t.Helper()
	return map[string]string{
		"CONCIERGE_DATABASE_URL": pgtest.NewDatabase(t),
		"CONCIERGE_REDIS_URL":    redistest.URL(t),
		"CONCIERGE_LOG_LEVEL":    "warn",
	}
}

type admWorkspace struct {
	WorkspaceID                    string   `json:"workspaceId"`
	Name                           string   `json:"name"`
	Plan                           string   `json:"plan"`
	Addons                         []string `json:"addons"`
	WebhookSecret                  string   `json:"webhookSecret"`
	PreviousWebhookSecretExpiresAt *string  `json:"previousWebhookSecretExpiresAt"`
	APIKey                         string   `json:"apiKey"`
	APIKeyID                       string   `json:"apiKeyId"`
	CreatedAt                      string   `json:"createdAt"`
}

type admKey struct {
	ID          string  `json:"id"`
	WorkspaceID string  `json:"workspaceId"`
	Name        string  `json:"name"`
	Prefix      string  `json:"prefix"`
	APIKey      string  `json:"apiKey"`
	CreatedAt   string  `json:"createdAt"`
	LastUsedAt  *string `json:"lastUsedAt"`
	RevokedAt   *string `json:"revokedAt"`
}

func TestAdminWorkspaceAndKeys(t *testing.T) {
	env := admEnv(t)
	ctx := context.Background()

	var ws admWorkspace
	admMustJSON(t, env, &ws, "admin", "workspace", "create", "--name", "Acme", "--plan", "standard", "--json")
	if !domain.ValidID(domain.PrefixWorkspace, ws.WorkspaceID) || ws.Name != "Acme" || ws.Plan != "standard" ||
		!strings.HasPrefix(ws.APIKey, domain.PrefixAPIKeySecret) || !domain.ValidID(domain.PrefixAPIKey, ws.APIKeyID) ||
		!strings.HasPrefix(ws.WebhookSecret, domain.PrefixWebhookSecret) || ws.Addons == nil || len(ws.Addons) != 0 {
		t.Fatalf("workspace create printed %+v", ws)
	}
	if _, err := time.Parse(time.RFC3339, ws.CreatedAt); err != nil {
		t.Fatalf("createdAt %q: %v", ws.CreatedAt, err)
	}

	// A server on the same database and Redis accepts what the CLI printed.
	// Servers may reuse a successful key check for CONCIERGE_AUTH_CACHE_TTL
	// (README), so changes made with the CLI are awaited for at most that long.
	const cacheTTL = time.Second
	serverEnv := map[string]string{"CONCIERGE_AUTH_CACHE_TTL": cacheTTL.String()}
	for k, v := range env {
		serverEnv[k] = v
	}
	s := newStack(t, stackOptions{env: serverEnv, withWorker: false})
	p, err := s.sys.workspaces.AuthenticateAPIKey(ctx, ws.APIKey)
	if err != nil || p.Workspace.ID != ws.WorkspaceID || p.KeyID != ws.APIKeyID {
		t.Fatalf("AuthenticateAPIKey(printed key) = %+v, %v", p, err)
	}
	admin := tenant{ID: ws.WorkspaceID, Key: ws.APIKey, KeyID: ws.APIKeyID, WebhookSecret: ws.WebhookSecret}
	s.mustStatus(s.do("GET", "/api/v2/agents", nil, admin.auth()), 200)
	whMustAck(s, whPost(s, ws.WebhookSecret, map[string]any{"event": "user.typing"}, nil), ws.WorkspaceID)

	// show prints the same workspace with its webhook secret.
	var shown admWorkspace
	admMustJSON(t, env, &shown, "admin", "workspace", "show", "--workspace", ws.WorkspaceID, "--json")
	if shown.WorkspaceID != ws.WorkspaceID || shown.WebhookSecret != ws.WebhookSecret || shown.APIKey != "" {
		t.Fatalf("workspace show printed %+v", shown)
	}

	// set-plan: down to Free the key is refused with 403, up to Enterprise it works again.
	var planned admWorkspace
	admMustJSON(t, env, &planned, "admin", "workspace", "set-plan", "--workspace", ws.WorkspaceID, "--plan", "free", "--json")
	if planned.Plan != "free" {
		t.Fatalf("set-plan free printed plan %q", planned.Plan)
	}
	whEventually(t, cacheTTL+3*time.Second, "the plan change to reach the server", func() bool {
		return s.do("GET", "/api/v2/agents", nil, admin.auth()).Status != 200
	})
	if r := s.do("GET", "/api/v2/agents", nil, admin.auth()); r.Status != 403 || r.errorCode(t) != "PLAN_UPGRADE_REQUIRED" {
		t.Fatalf("key of a Free workspace: status %d %s, want 403", r.Status, r.Body)
	}
	admMustJSON(t, env, &planned, "admin", "workspace", "set-plan", "--workspace", ws.WorkspaceID, "--plan", "enterprise", "--json")
	if planned.Plan != "enterprise" || planned.WorkspaceID != ws.WorkspaceID || planned.WebhookSecret != "" {
		t.Fatalf("set-plan enterprise printed %+v (the secret is not reprinted)", planned)
	}
	if got, err := s.sys.workspaces.GetWorkspace(ctx, ws.WorkspaceID); err != nil || got.Plan != domain.PlanEnterprise {
		t.Fatalf("stored plan = %q, %v; want enterprise", got.Plan, err)
	}
	s.mustStatus(s.do("GET", "/api/v2/agents", nil, admin.auth()), 200)
	if out := admMustText(t, env, "admin", "workspace", "set-plan", "--workspace", ws.WorkspaceID, "--plan", "Standard"); !strings.Contains(out, ws.WorkspaceID) || !strings.Contains(out, "Standard") {
		t.Fatalf("set-plan text output %q lacks the id or plan", out)
	}

	// apikey create: a second key, shown once, working at once.
	var key admKey
	admMustJSON(t, env, &key, "admin", "apikey", "create", "--workspace", ws.WorkspaceID, "--name", "ci", "--json")
	if !domain.ValidID(domain.PrefixAPIKey, key.ID) || key.WorkspaceID != ws.WorkspaceID || key.Name != "ci" ||
		!strings.HasPrefix(key.APIKey, domain.PrefixAPIKeySecret) || key.APIKey == ws.APIKey ||
		key.Prefix == "" || !strings.HasPrefix(key.APIKey, key.Prefix) || len(key.Prefix) >= len(key.APIKey)/2 || key.RevokedAt != nil {
		t.Fatalf("apikey create printed %+v", key)
	}
	if p, err := s.sys.workspaces.AuthenticateAPIKey(ctx, key.APIKey); err != nil || p.KeyID != key.ID || p.Workspace.ID != ws.WorkspaceID {
		t.Fatalf("AuthenticateAPIKey(new key) = %+v, %v", p, err)
	}
	textKey := admMustText(t, env, "admin", "apikey", "create", "--workspace", ws.WorkspaceID)
	textKeyID, textKeySecret := admField(textKey, "apiKeyId:"), admField(textKey, "apiKey:")
	if !domain.ValidID(domain.PrefixAPIKey, textKeyID) || !strings.HasPrefix(textKeySecret, domain.PrefixAPIKeySecret) {
		t.Fatalf("apikey create text output %q lacks the id or key", textKey)
	}
	if p, err := s.sys.workspaces.AuthenticateAPIKey(ctx, textKeySecret); err != nil || p.KeyID != textKeyID {
		t.Fatalf("the key printed as text does not authenticate as %s: %+v, %v", textKeyID, p, err)
	}

	// apikey list: every key, prefixes only.
	var list struct {
		Data []admKey `json:"data"`
	}
	listJSON := admMustJSON(t, env, &list, "admin", "apikey", "list", "--workspace", ws.WorkspaceID, "--json")
	listText := admMustText(t, env, "admin", "apikey", "list", "--workspace", ws.WorkspaceID)
	if len(list.Data) != 3 {
		t.Fatalf("apikey list shows %d keys, want 3: %s", len(list.Data), listJSON)
	}
	byID := map[string]admKey{}
	for _, k := range list.Data {
		byID[k.ID] = k
		if k.APIKey != "" || k.Prefix == "" || k.WorkspaceID != ws.WorkspaceID {
			t.Fatalf("listed key %+v: want a prefix and no key", k)
		}
	}
	if byID[ws.APIKeyID].LastUsedAt == nil {
		t.Fatalf("the first key was used but shows no lastUsedAt: %+v", byID[ws.APIKeyID])
	}
	if _, ok := byID[key.ID]; !ok {
		t.Fatalf("apikey list lacks %s", key.ID)
	}
	for _, secret := range []string{ws.APIKey, key.APIKey} {
		random := secret[len(domain.PrefixAPIKeySecret)+6:]
		for name, out := range map[string]string{"JSON": listJSON, "text": listText} {
			if strings.Contains(out, random) {
				t.Fatalf("apikey list (%s) shows more of a key than its prefix:\n%s", name, out)
			}
		}
	}
	for _, id := range []string{ws.APIKeyID, key.ID} {
		if !strings.Contains(listText, id) {
			t.Fatalf("apikey list text lacks %s:\n%s", id, listText)
		}
	}

	// apikey revoke: the key stops working, the others do not.
	var revoked admKey
	admMustJSON(t, env, &revoked, "admin", "apikey", "revoke", "--workspace", ws.WorkspaceID, "--key", key.ID, "--json")
	if revoked.ID != key.ID || revoked.RevokedAt == nil || revoked.APIKey != "" {
		t.Fatalf("apikey revoke printed %+v", revoked)
	}
	whEventually(t, cacheTTL+3*time.Second, "the revocation to reach the server", func() bool {
		_, err := s.sys.workspaces.AuthenticateAPIKey(ctx, key.APIKey)
		return err != nil
	})
	if _, err := s.sys.workspaces.AuthenticateAPIKey(ctx, key.APIKey); !errors.Is(err, domain.ErrUnauthorized) {
		t.Fatalf("AuthenticateAPIKey(revoked key) err = %v, want ErrUnauthorized", err)
	}
	if r := s.do("GET", "/api/v2/agents", nil, header{"Authorization": "Bearer " + key.APIKey}); r.Status != 401 || r.errorCode(t) != "UNAUTHORIZED" {
		t.Fatalf("revoked key over HTTP: status %d %s, want 401", r.Status, r.Body)
	}
	if _, err := s.sys.workspaces.AuthenticateAPIKey(ctx, ws.APIKey); err != nil {
		t.Fatalf("revoking one key broke another: %v", err)
	}
	if out := admMustText(t, env, "admin", "apikey", "revoke", "--workspace", ws.WorkspaceID, "--key", key.ID); !strings.Contains(out, key.ID) {
		t.Fatalf("revoking again (harmless) printed %q, want the key id", out)
	}
	admMustJSON(t, env, &list, "admin", "apikey", "list", "--workspace", ws.WorkspaceID, "--json")
	for _, k := range list.Data {
		if (k.RevokedAt != nil) != (k.ID == key.ID) {
			t.Fatalf("after revoking %s, list shows %+v", key.ID, k)
		}
	}

	// webhook-secret rotate: a new secret, the old one valid for the grace period.
	before := time.Now()
	var rotated admWorkspace
	admMustJSON(t, env, &rotated, "admin", "webhook-secret", "rotate", "--workspace", ws.WorkspaceID, "--grace", "24h", "--json")
	if !strings.HasPrefix(rotated.WebhookSecret, domain.PrefixWebhookSecret) || rotated.WebhookSecret == ws.WebhookSecret || rotated.PreviousWebhookSecretExpiresAt == nil {
		t.Fatalf("webhook-secret rotate printed %+v", rotated)
	}
	expires, err := time.Parse(time.RFC3339, *rotated.PreviousWebhookSecretExpiresAt)
	if err != nil {
		t.Fatal(err)
	}
	if d := expires.Sub(before); d < 24*time.Hour-time.Minute || d > 24*time.Hour+time.Minute {
		t.Fatalf("previous secret expires %s after the rotation, want 24h", d)
	}
	for _, secret := range []string{rotated.WebhookSecret, ws.WebhookSecret} {
		whMustAck(s, whPost(s, secret, map[string]any{"event": "user.typing"}, nil), ws.WorkspaceID)
	}
	out := admMustText(t, env, "admin", "webhook-secret", "rotate", "--workspace", ws.WorkspaceID, "--grace", "0s")
	current, err := s.sys.workspaces.GetWorkspace(ctx, ws.WorkspaceID)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, current.WebhookSecret) || current.WebhookSecret == rotated.WebhookSecret {
		t.Fatalf("rotate text output %q lacks the new secret %s", out, current.WebhookSecret)
	}
	for _, old := range []string{rotated.WebhookSecret, ws.WebhookSecret} {
		if r := whPost(s, old, map[string]any{"event": "user.typing"}, nil); r.Status != 401 {
			t.Fatalf("secret rotated out with --grace 0s: status %d, want 401", r.Status)
		}
	}
	whMustAck(s, whPost(s, current.WebhookSecret, map[string]any{"event": "user.typing"}, nil), ws.WorkspaceID)

	// Text output of create names the id, key and secret.
	textWS := admMustText(t, env, "admin", "workspace", "create", "--name", "Globex")
	textID, textSecret := admField(textWS, "workspaceId:"), admField(textWS, "webhookSecret:")
	if !domain.ValidID(domain.PrefixWorkspace, textID) || !strings.HasPrefix(admField(textWS, "apiKey:"), domain.PrefixAPIKeySecret) ||
		admField(textWS, "plan:") != "standard" || admField(textWS, "name:") != "Globex" {
		t.Fatalf("workspace create text output lacks the id, key, plan or name:\n%s", textWS)
	}
	var globex admWorkspace
	admMustJSON(t, env, &globex, "admin", "workspace", "show", "--workspace", textID, "--json")
	if globex.Name != "Globex" || globex.WebhookSecret != textSecret {
		t.Fatalf("workspace %s printed as text is %+v", textID, globex)
	}
	if out := admMustText(t, env, "admin", "workspace", "show", "--workspace", textID); admField(out, "workspaceId:") != textID {
		t.Fatalf("workspace show text output lacks the id:\n%s", out)
	}
}

// admField returns the value of the "label value" line of a text output.
func admField(out, label string) string {
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), label); ok {
			return strings.TrimSpace(rest)
		}
	}
	return ""
}

func TestAdminErrors(t *testing.T) {
	env := admEnv(t)
	var ws admWorkspace
	admMustJSON(t, env, &ws, "admin", "workspace", "create", "--name", "Acme", "--plan", "hobby", "--json")
	unknownWS := domain.NewID(domain.PrefixWorkspace)

	tests := []struct {
		name       string
		args       []string
		code       int
		stderrWant string
	}{
		{"create without --name", []string{"admin", "workspace", "create", "--plan", "standard"}, exitUsage, "--name"},
		{"create with a blank --name", []string{"admin", "workspace", "create", "--name", "   "}, exitUsage, "name"},
		{"create with a bad --plan", []string{"admin", "workspace", "create", "--name", "Acme", "--plan", "gold"}, exitUsage, "gold"},
		{"unknown flag", []string{"admin", "workspace", "create", "--name", "Acme", "--colour", "red"}, exitUsage, "unknown flag"},
		{"unknown command", []string{"frobnicate"}, exitUsage, "unknown command"},
		{"positional argument", []string{"admin", "workspace", "show", "--workspace", ws.WorkspaceID, "extra"}, exitUsage, "extra"},
		{"set-plan without --plan", []string{"admin", "workspace", "set-plan", "--workspace", ws.WorkspaceID}, exitUsage, "--plan"},
		{"set-plan with a bad --plan", []string{"admin", "workspace", "set-plan", "--workspace", ws.WorkspaceID, "--plan", "platinum"}, exitUsage, "platinum"},
		{"revoke without --key", []string{"admin", "apikey", "revoke", "--workspace", ws.WorkspaceID}, exitUsage, "--key"},
		{"apikey list without --workspace", []string{"admin", "apikey", "list"}, exitUsage, "--workspace"},
		{"negative --grace", []string{"admin", "webhook-secret", "rotate", "--workspace", ws.WorkspaceID, "--grace=-1h"}, exitUsage, "grace"},
		{"oversized --grace", []string{"admin", "webhook-secret", "rotate", "--workspace", ws.WorkspaceID, "--grace", "721h"}, exitUsage, "grace"},
		{"unparsable --grace", []string{"admin", "webhook-secret", "rotate", "--workspace", ws.WorkspaceID, "--grace", "soon"}, exitUsage, "grace"},
		{"show an unknown workspace", []string{"admin", "workspace", "show", "--workspace", unknownWS}, exitFailure, "not found"},
		{"set-plan of an unknown workspace", []string{"admin", "workspace", "set-plan", "--workspace", unknownWS, "--plan", "standard"}, exitFailure, "not found"},
		{"apikey create in an unknown workspace", []string{"admin", "apikey", "create", "--workspace", unknownWS}, exitFailure, "not found"},
		{"apikey list of an unknown workspace", []string{"admin", "apikey", "list", "--workspace", unknownWS}, exitFailure, "not found"},
		{"revoke an unknown key", []string{"admin", "apikey", "revoke", "--workspace", ws.WorkspaceID, "--key", domain.NewID(domain.PrefixAPIKey)}, exitFailure, "not found"},
		{"revoke a key through another workspace", []string{"admin", "apikey", "revoke", "--workspace", unknownWS, "--key", ws.APIKeyID}, exitFailure, "not found"},
		{"rotate the secret of an unknown workspace", []string{"admin", "webhook-secret", "rotate", "--workspace", unknownWS}, exitFailure, "not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := admRun(t, env, tt.args...)
			if res.code != tt.code {
				t.Fatalf("exit %d, want %d; stderr %q", res.code, tt.code, res.stderr)
			}
			if res.stdout != "" {
				t.Fatalf("a failed command printed on stdout: %q", res.stdout)
			}
			if strings.Count(res.stderr, "\n") != 1 || !strings.HasSuffix(res.stderr, "\n") || !strings.HasPrefix(res.stderr, "concierge: ") {
				t.Fatalf("stderr is not one \"concierge: ...\" line: %q", res.stderr)
			}
			if !strings.Contains(res.stderr, tt.stderrWant) {
				t.Fatalf("stderr %q does not mention %q", res.stderr, tt.stderrWant)
			}
		})
	}

	// None of the refused commands changed anything.
	db := admOpen(t, env["CONCIERGE_DATABASE_URL"])
	var workspaces, keys int64
	if err := db.Gorm.Raw(`SELECT count(*) FROM workspaces`).Scan(&workspaces).Error; err != nil {
		t.Fatal(err)
	}
	if err := db.Gorm.Raw(`SELECT count(*) FROM api_keys WHERE revoked_at IS NULL`).Scan(&keys).Error; err != nil {
		t.Fatal(err)
	}
	var shown admWorkspace
	admMustJSON(t, env, &shown, "admin", "workspace", "show", "--workspace", ws.WorkspaceID, "--json")
	if workspaces != 1 || keys != 1 || shown.Plan != "hobby" || shown.WebhookSecret != ws.WebhookSecret || shown.PreviousWebhookSecretExpiresAt != nil {
		t.Fatalf("after refused commands: %d workspaces, %d active keys, workspace %+v", workspaces, keys, shown)
	}
}

// admOpen opens the database the CLI works on, closed when the test ends.
func admOpen(t testing.TB, dsn string) *postgres.DB {
	t.Helper()
	db, err := postgres.Open(context.Background(), dsn, postgres.Options{MaxOpenConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func TestConfigErrorsAreOneLineNamingTheVariable(t *testing.T) {
	goodDB := pgtest.NewDatabase(t)
	goodRedis := redistest.URL(t)
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		varName string
		secret  string
	}{
		{"serve with PostgreSQL unreachable", []string{"serve"},
			map[string]string{"CONCIERGE_DATABASE_URL": "postgres://postgres:pg-pass-123@127.0.0.1:1/x?sslmode=disable"},
			"CONCIERGE_DATABASE_URL", "pg-pass-123"},
		{"worker with PostgreSQL unreachable", []string{"worker"},
			map[string]string{"CONCIERGE_DATABASE_URL": "postgres://postgres@127.0.0.1:1/x?sslmode=disable"},
			"CONCIERGE_DATABASE_URL", ""},
		{"migrate with PostgreSQL unreachable", []string{"migrate"},
			map[string]string{"CONCIERGE_DATABASE_URL": "postgres://postgres:pg-pass-123@127.0.0.1:1/x?sslmode=disable"},
			"CONCIERGE_DATABASE_URL", "pg-pass-123"},
		{"admin with PostgreSQL unreachable", []string{"admin", "workspace", "create", "--name", "Acme"},
			map[string]string{"CONCIERGE_DATABASE_URL": "postgres://postgres@127.0.0.1:1/x?sslmode=disable"},
			"CONCIERGE_DATABASE_URL", ""},
		{"serve with an unparsable worker concurrency", []string{"serve"},
			map[string]string{"CONCIERGE_WORKER_CONCURRENCY": "abc"},
			"CONCIERGE_WORKER_CONCURRENCY", ""},
		{"worker with a zero worker concurrency", []string{"worker"},
			map[string]string{"CONCIERGE_WORKER_CONCURRENCY": "0"},
			"CONCIERGE_WORKER_CONCURRENCY", ""},
		{"serve with a database URL that is not postgres", []string{"serve"},
			map[string]string{"CONCIERGE_DATABASE_URL": "mysql://root@127.0.0.1/x"},
			"CONCIERGE_DATABASE_URL", ""},
		{"serve with Redis unreachable", []string{"serve"},
			map[string]string{"CONCIERGE_REDIS_URL": "redis://:redis-pass-123@127.0.0.1:1/0"},
			"CONCIERGE_REDIS_URL", "redis-pass-123"},
		{"worker with Redis unreachable", []string{"worker"},
			map[string]string{"CONCIERGE_REDIS_URL": "redis://127.0.0.1:1/0"},
			"CONCIERGE_REDIS_URL", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{
				"CONCIERGE_DATABASE_URL": goodDB,
				"CONCIERGE_REDIS_URL":    goodRedis,
				// If the command wrongly started, it must not take a real port;
				// the deadline then stops it and the exit code fails the test.
				"CONCIERGE_HTTP_ADDR": "127.0.0.1:0",
			}
			for k, v := range tt.env {
				env[k] = v
			}
			start := time.Now()
			// The real process: whatever a library prints on the process's own
			// stderr counts too, not only what run writes.
			res := admRunProcess(t, env, tt.args...)
			if res.code != exitFailure {
				t.Fatalf("exit %d, want %d; stderr %q", res.code, exitFailure, res.stderr)
			}
			if strings.Count(res.stderr, "\n") != 1 || !strings.HasSuffix(res.stderr, "\n") || !strings.HasPrefix(res.stderr, "concierge: ") {
				t.Fatalf("stderr is not exactly one \"concierge: ...\" line:\n%s", res.stderr)
			}
			if !strings.Contains(res.stderr, tt.varName) {
				t.Fatalf("stderr %q does not name %s", res.stderr, tt.varName)
			}
			if tt.secret != "" && strings.Contains(res.stderr, tt.secret) {
				t.Fatalf("stderr shows the password from the URL: %q", res.stderr)
			}
			if res.stdout != "" {
				t.Fatalf("a failed start printed on stdout: %q", res.stdout)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Fatalf("took %s to report an unreachable dependency", d)
			}
			t.Logf("%s", strings.TrimSpace(res.stderr))
		})
	}
}

// admRunProcess runs concierge in a child process with env as its only
// CONCIERGE_ configuration and returns its exit code and both outputs.
func admRunProcess(t testing.TB, env map[string]string, args ...string) admResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := helperCommand(ctx, env, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if exitErr, ok := errors.AsType[*exec.ExitError](err); ok {
		code = exitErr.ExitCode()
	} else if err != nil {
		t.Fatalf("running the concierge process: %v", err)
	}
	return admResult{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

func TestMigrateConcurrentlyCreatesTheDatabaseOnce(t *testing.T) {
	server := pgtest.ServerURL()
	u, err := url.Parse(server)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		t.Skipf("%s is not a URL; this test builds a database URL from it", pgtest.EnvDatabaseURL)
	}
	name := strings.ToLower("concierge_test_" + strings.TrimPrefix(domain.NewID("x_"), "x_"))
	u.Path = "/" + name
	dsn := u.String()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, server)
		if err != nil {
			t.Errorf("connect to drop %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			t.Errorf("drop %s: %v", name, err)
		}
	})
	env := map[string]string{"CONCIERGE_DATABASE_URL": dsn, "CONCIERGE_LOG_LEVEL": "warn"}

	const pods = 3
	results := make([]admResult, pods)
	var wg sync.WaitGroup
	for i := range pods {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var stdout, stderr bytes.Buffer
			code := run(ctx, []string{"migrate"}, func(k string) string { return env[k] }, &stdout, &stderr)
			results[i] = admResult{code: code, stdout: stdout.String(), stderr: stderr.String()}
		})
	}
	wg.Wait()
	for i, res := range results {
		if res.code != exitOK || !strings.Contains(res.stdout, "migrations applied") {
			t.Errorf("migrate #%d: exit %d, stdout %q, stderr %q", i, res.code, res.stdout, res.stderr)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	ctx := context.Background()
	states, err := postgres.MigrationStatus(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	if len(states) == 0 {
		t.Fatal("no migrations reported")
	}
	for _, st := range states {
		if !st.Applied {
			t.Fatalf("migration %d %s not applied", st.Version, st.Name)
		}
	}
	// Each migration was applied once.
	db := admOpen(t, dsn)
	var applied int64
	if err := db.Gorm.Raw(`SELECT count(*) FROM goose_db_version WHERE version_id > 0 AND is_applied`).Scan(&applied).Error; err != nil {
		t.Fatal(err)
	}
	if applied != int64(len(states)) {
		t.Fatalf("goose recorded %d applications of %d migrations", applied, len(states))
	}
	// Running it again is a no-op, and the schema is usable by the admin CLI.
	if res := admRun(t, env, "migrate"); res.code != exitOK {
		t.Fatalf("second migrate: exit %d, stderr %q", res.code, res.stderr)
	}
	var ws admWorkspace
	admMustJSON(t, env, &ws, "admin", "workspace", "create", "--name", "Fresh", "--json")
	if !domain.ValidID(domain.PrefixWorkspace, ws.WorkspaceID) {
		t.Fatalf("workspace create on the migrated database printed %+v", ws)
	}
}

// The operator invites a workspace's first owner and makes reset links; what
// the CLI prints works with the account use cases a server runs.
func TestAdminUserInviteAndReset(t *testing.T) {
	env := admEnv(t)
	ctx := context.Background()
	var ws admWorkspace
	admMustJSON(t, env, &ws, "admin", "workspace", "create", "--name", "Acme", "--plan", "free", "--json")

	var inv struct {
		InvitationID, WorkspaceID, Email, Role, ExpiresAt, Link string
		Emailed                                                 bool
	}
	admMustJSON(t, env, &inv, "admin", "user", "invite", "--workspace", ws.WorkspaceID, "--email", "Ada@Example.com", "--role", "owner", "--json")
	if !domain.ValidID(domain.PrefixInvitation, inv.InvitationID) || inv.WorkspaceID != ws.WorkspaceID || inv.Email != "ada@example.com" ||
		inv.Role != "owner" || inv.Emailed || !strings.HasPrefix(inv.Link, "http://127.0.0.1:8080/console/invitations/"+domain.PrefixLinkToken) {
		t.Fatalf("user invite printed %+v", inv)
	}
	if exp, err := time.Parse(time.RFC3339, inv.ExpiresAt); err != nil || time.Until(exp) < 6*24*time.Hour {
		t.Fatalf("expiresAt %q: %v", inv.ExpiresAt, err)
	}
	text := admMustText(t, env, "admin", "user", "invite", "--workspace", ws.WorkspaceID, "--email", "bob@example.com", "--role", "agent")
	if !strings.Contains(text, "link:          http://127.0.0.1:8080/console/invitations/lt_") || !strings.Contains(text, "Send the link to bob@example.com yourself") {
		t.Fatalf("user invite printed:\n%s", text)
	}

	s := newStack(t, stackOptions{env: env, withWorker: false})
	token := inv.Link[strings.LastIndex(inv.Link, "/")+1:]
	signed, err := s.sys.accounts.AcceptInvitation(ctx, account.AcceptRequest{Token: token, Name: "Ada", Password: "first password"})
	if err != nil {
		t.Fatalf("accepting the printed link: %v", err)
	}
	if m, err := s.sys.accounts.Member(ctx, signed.User.ID, ws.WorkspaceID); err != nil || m.Role != domain.MemberOwner {
		t.Fatalf("member = %+v, %v", m, err)
	}
	if _, err := s.sys.accounts.AcceptInvitation(ctx, account.AcceptRequest{Token: token, Name: "Eve", Password: "second password"}); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("the link worked twice: %v", err)
	}

	var reset struct{ Email, Link string }
	admMustJSON(t, env, &reset, "admin", "user", "reset", "--email", "ADA@example.com", "--json")
	if reset.Email != "ada@example.com" || !strings.HasPrefix(reset.Link, "http://127.0.0.1:8080/console/reset/"+domain.PrefixLinkToken) {
		t.Fatalf("user reset printed %+v", reset)
	}
	if err := s.sys.accounts.ResetPassword(ctx, account.ResetRequest{Token: reset.Link[strings.LastIndex(reset.Link, "/")+1:], Password: "a new password"}); err != nil {
		t.Fatalf("using the printed reset link: %v", err)
	}
	if _, err := s.sys.accounts.Authenticate(ctx, signed.Token); !errors.Is(err, domain.ErrUnauthorized) {
		t.Fatalf("a session survived the reset: %v", err)
	}
	again, err := s.sys.accounts.SignIn(ctx, account.SignInRequest{Email: "ada@example.com", Password: "a new password", IP: "127.0.0.1"})
	if err != nil {
		t.Fatalf("signing in with the new password: %v", err)
	}

	// No table of the people side holds a token, link secret or password.
	db := admOpen(t, env["CONCIERGE_DATABASE_URL"])
	for name, secret := range map[string]string{
		"invitation link secret": token, "reset link secret": reset.Link[strings.LastIndex(reset.Link, "/")+1:],
		"first session token": signed.Token, "second session token": again.Token,
		"first password": "first password", "new password": "a new password",
	} {
		for _, table := range []string{"users", "memberships", "console_sessions", "invitations", "password_resets"} {
			var n int64
			if err := db.Gorm.Raw(`SELECT count(*) FROM `+table+` r WHERE strpos(r::text, ?) > 0`, secret).Scan(&n).Error; err != nil {
				t.Fatal(err)
			}
			if n != 0 {
				t.Errorf("%s holds the %s in plaintext", table, name)
			}
		}
	}

	unknownWS := domain.NewID(domain.PrefixWorkspace)
	for _, tt := range []struct {
		name       string
		args       []string
		code       int
		stderrWant string
	}{
		{"invite without --role", []string{"admin", "user", "invite", "--workspace", ws.WorkspaceID, "--email", "c@example.com"}, exitUsage, "--role"},
		{"invite with a bad --role", []string{"admin", "user", "invite", "--workspace", ws.WorkspaceID, "--email", "c@example.com", "--role", "boss"}, exitUsage, "role"},
		{"invite a bad --email", []string{"admin", "user", "invite", "--workspace", ws.WorkspaceID, "--email", "c", "--role", "agent"}, exitUsage, "email"},
		{"invite into a bad workspace id", []string{"admin", "user", "invite", "--workspace", "acme", "--email", "c@example.com", "--role", "agent"}, exitUsage, "workspace"},
		{"invite into an unknown workspace", []string{"admin", "user", "invite", "--workspace", unknownWS, "--email", "c@example.com", "--role", "agent"}, exitFailure, "workspace not found"},
		{"invite a member", []string{"admin", "user", "invite", "--workspace", ws.WorkspaceID, "--email", "ada@example.com", "--role", "agent"}, exitFailure, "already a member"},
		{"reset without --email", []string{"admin", "user", "reset"}, exitUsage, "--email"},
		{"reset an unknown user", []string{"admin", "user", "reset", "--email", "nobody@example.com"}, exitFailure, "not found"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := admRun(t, env, tt.args...)
			if res.code != tt.code || res.stdout != "" || !strings.Contains(res.stderr, tt.stderrWant) {
				t.Fatalf("exit %d (want %d), stdout %q, stderr %q (want %q)", res.code, tt.code, res.stdout, res.stderr, tt.stderrWant)
			}
		})
	}
}
