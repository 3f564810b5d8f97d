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

// layer names the part of the hexagon a package belongs to.
func layer(path string) string {
	rel := strings.TrimPrefix(strings.TrimPrefix(path, module), "/")
	switch {
	case rel == "core/domain" || strings.HasPrefix(rel, "core/domain/"):
		return "domain"
	case strings.HasPrefix(rel, "core/"):
		return "core"
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
	"database/sql", "net/http",
}

func TestDependencyRules(t *testing.T) {
	allowed := map[string]map[string]bool{
		"domain":   {"domain": true},
		"ports":    {"domain": true},
		"core":     {"domain": true, "core": true, "ports": true}, // core->core checked below
		"config":   {},
		"adapters": {"domain": true, "core": true, "ports": true, "adapters": true},
		"workers":  {"domain": true, "core": true, "ports": true},
		"app":      {"domain": true, "core": true, "ports": true, "adapters": true, "workers": true, "config": true},
	}
	for _, p := range listPackages(t) {
		from := layer(p.ImportPath)
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, module) {
				to := layer(imp)
				if rules, ok := allowed[from]; ok && !rules[to] {
					t.Errorf("%s (%s) must not import %s (%s)", p.ImportPath, from, imp, to)
				}
				// A use case depends on ports and the domain, never on another
				// capability, so capabilities can change independently.
				if from == "core" && to == "core" && imp != p.ImportPath {
					t.Errorf("%s must not import another capability, %s", p.ImportPath, imp)
				}
				// Adapters talk to each other only through ports; test-support
				// packages (pgtest, redistest, openapitest) and shared client
				// libraries that implement no port are exempt.
				if from == "adapters" && to == "adapters" && adapterRoot(p.ImportPath) != adapterRoot(imp) &&
					!strings.HasSuffix(imp, "test") && !sharedAdapterLibraries[imp] {
					t.Errorf("%s must not import another adapter, %s", p.ImportPath, imp)
				}
				continue
			}
			if from == "domain" || from == "core" || from == "ports" {
				for _, infra := range infrastructure {
					if strings.HasPrefix(imp, infra) {
						t.Errorf("%s (%s) must not import infrastructure package %s", p.ImportPath, from, imp)
					}
				}
			}
		}
	}
}

func TestLayerClassification(t *testing.T) {
	tests := map[string]string{
		module + "/core/domain":         "domain",
		module + "/core/inbound":        "core",
		module + "/ports":               "ports",
		module + "/adapters/httpapi/v2": "adapters",
		module + "/workers":             "workers",
		module + "/config":              "config",
		module + "/app/concierge":       "app",
	}
	for path, want := range tests {
		if got := layer(path); got != want {
			t.Errorf("layer(%s) = %s, want %s", path, got, want)
		}
	}
}
