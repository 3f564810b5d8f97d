// Package core_test checks ARCHITECTURE.md's dependency rules on the real
// import graph, so a violation fails `make test`.
package core_test

import (
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/conciergehq/concierge"

type pkg struct {
	ImportPath string
	Imports    []string
}

func listPackages(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports", module+"/...")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(out)
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("go list: %v", err)
	}
	if len(pkgs) < 10 {
		t.Fatalf("go list found only %d packages; the check would prove nothing", len(pkgs))
	}
	return pkgs
}

// layer names the part of the hexagon a package belongs to. The core has
// three tiers: the domain, then core/conversation (the Conversation
// aggregate every capability shares), then the capabilities (every other
// core package).
func layer(path string) string {
	rel := strings.TrimPrefix(strings.TrimPrefix(path, module), "/")
	switch {
	case rel == "core/domain" || strings.HasPrefix(rel, "core/domain/"):
		return "domain"
	case rel == "core/conversation" || strings.HasPrefix(rel, "core/conversation/"):
		return "conversation"
	case strings.HasPrefix(rel, "core/"):
		return "capability"
	case rel == "ports" || strings.HasPrefix(rel, "ports/"):
		return "ports"
	case strings.HasPrefix(rel, "adapters/"):
		return "adapters"
	case strings.HasPrefix(rel, "workers"):
		return "workers"
	case strings.HasPrefix(rel, "config"):
		return "config"
	case strings.HasPrefix(rel, "app/"):
		return "app"
	}
	return "other"
}

// adapterRoot is the adapter a package belongs to (adapters/httpapi, adapters/postgres, ...).
func adapterRoot(path string) string {
	parts := strings.Split(strings.TrimPrefix(path, module+"/"), "/")
	if len(parts) < 2 {
		return path
	}
	return parts[0] + "/" + parts[1]
}

// sharedAdapterLibraries may be imported by any adapter: client plumbing
// that implements no port and imports no adapter (the rule above still
// applies to its own imports), so sharing it couples no two adapters'
// behaviour.
var sharedAdapterLibraries = map[string]bool{
	// Errors, retries and redaction for OpenAI-compatible HTTP APIs, used
	// by the chat and the embeddings adapters (and Retry-After by the
	// webhook sender).
	module + "/adapters/openaicompat": true,
	// The address guard against server-side request forgery, used by the
	// website crawler and the webhook senders.
	module + "/adapters/safehttp": true,
}

var infrastructure = []string{
	"github.com/gofiber/", "github.com/valyala/fasthttp", "gorm.io/", "github.com/hibiken/asynq",
	"github.com/redis/go-redis", "github.com/go-playground/validator", "github.com/jackc/pgx",
	"database/sql", "net/http", "github.com/prometheus/",
}

// allowed says which layers a layer may import.
var allowed = map[string]map[string]bool{
	"domain":       {"domain": true},
	"ports":        {"domain": true},
	"conversation": {"domain": true, "ports": true, "conversation": true},
	"capability":   {"domain": true, "ports": true, "conversation": true, "capability": true}, // capability->capability checked below
	"config":       {},
	"adapters":     {"domain": true, "conversation": true, "capability": true, "ports": true, "adapters": true},
	"workers":      {"domain": true, "conversation": true, "capability": true, "ports": true},
	"app":          {"domain": true, "conversation": true, "capability": true, "ports": true, "adapters": true, "workers": true, "config": true},
}

// importViolations returns what is wrong with from importing imp (a
// package of this module or not); nothing when the import is allowed.
func importViolations(from, imp string) []string {
	var out []string
	fromLayer := layer(from)
	if !strings.HasPrefix(imp, module) {
		if fromLayer == "domain" || fromLayer == "conversation" || fromLayer == "capability" || fromLayer == "ports" {
			for _, infra := range infrastructure {
				if strings.HasPrefix(imp, infra) {
					out = append(out, from+" ("+fromLayer+") must not import infrastructure package "+imp)
				}
			}
		}
		return out
	}
	to := layer(imp)
	if rules, ok := allowed[fromLayer]; ok && !rules[to] {
		out = append(out, from+" ("+fromLayer+") must not import "+imp+" ("+to+")")
	}
	// A use case depends on core/conversation, ports and the domain, never
	// on another capability, so capabilities can change independently.
	if fromLayer == "capability" && to == "capability" && imp != from {
		out = append(out, from+" must not import another capability, "+imp)
	}
	// Adapters talk to each other only through ports; test-support
	// packages (pgtest, redistest, openapitest) and shared client
	// libraries that implement no port are exempt.
	if fromLayer == "adapters" && to == "adapters" && adapterRoot(from) != adapterRoot(imp) &&
		!strings.HasSuffix(imp, "test") && !sharedAdapterLibraries[imp] {
		out = append(out, from+" must not import another adapter, "+imp)
	}
	return out
}

func TestDependencyRules(t *testing.T) {
	for _, p := range listPackages(t) {
		for _, imp := range p.Imports {
			for _, v := range importViolations(p.ImportPath, imp) {
				t.Error(v)
			}
		}
	}
}

// Each rule of importViolations fails the import it forbids, and lets
// through the ones the tiers allow.
func TestImportRules(t *testing.T) {
	tests := []struct {
		name      string
		from, imp string
		forbidden bool
	}{
		{"capability imports conversation", "/core/chat", "/core/conversation", false},
		{"capability imports ports and domain", "/core/handoff", "/ports", false},
		{"conversation imports ports", "/core/conversation", "/ports", false},
		{"conversation imports domain", "/core/conversation", "/core/domain", false},
		{"conversation's own subpackage", "/core/conversation/conversationtest", "/core/conversation", false},
		{"ports imports domain", "/ports", "/core/domain", false},
		{"adapter imports conversation", "/adapters/httpapi/v1", "/core/conversation", false},
		{"adapter imports its own package", "/adapters/httpapi/v1", "/adapters/httpapi/wire", false},
		{"capability imports another capability", "/core/chat", "/core/handoff", true},
		{"conversation imports a capability", "/core/conversation", "/core/chat", true},
		{"ports imports conversation", "/ports", "/core/conversation", true},
		{"ports imports a capability", "/ports", "/core/chat", true},
		{"domain imports ports", "/core/domain", "/ports", true},
		{"domain imports conversation", "/core/domain", "/core/conversation", true},
		{"conversation imports an adapter", "/core/conversation", "/adapters/postgres", true},
		{"capability imports an adapter", "/core/inbound", "/adapters/redis", true},
		{"adapter imports another adapter", "/adapters/postgres", "/adapters/redis", true},
		{"conversation imports infrastructure", "/core/conversation", "github.com/redis/go-redis/v9", true},
		{"ports imports infrastructure", "/ports", "gorm.io/gorm", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			imp := tt.imp
			if strings.HasPrefix(imp, "/") {
				imp = module + imp
			}
			got := importViolations(module+tt.from, imp)
			if forbidden := len(got) > 0; forbidden != tt.forbidden {
				t.Errorf("%s importing %s: violations %q, want forbidden %v", tt.from, tt.imp, got, tt.forbidden)
			}
		})
	}
}

func TestLayerClassification(t *testing.T) {
	tests := map[string]string{
		module + "/core/domain":                        "domain",
		module + "/core/conversation":                  "conversation",
		module + "/core/conversation/conversationtest": "conversation",
		module + "/core/inbound":                       "capability",
		module + "/core/chat":                          "capability",
		module + "/ports":                              "ports",
		module + "/adapters/httpapi/v2":                "adapters",
		module + "/workers":                            "workers",
		module + "/config":                             "config",
		module + "/app/concierge":                      "app",
	}
	for path, want := range tests {
		if got := layer(path); got != want {
			t.Errorf("layer(%s) = %s, want %s", path, got, want)
		}
	}
}
