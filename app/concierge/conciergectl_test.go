package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/conciergehq/concierge/core/domain"
)

// buildConciergectl compiles the real client binary once per test.
func buildConciergectl(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "conciergectl")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/conciergehq/concierge/app/conciergectl").CombinedOutput()
	if err != nil {
		t.Fatalf("building conciergectl: %v\n%s", err, out)
	}
	return bin
}

type ctlResult struct {
	code           int
	stdout, stderr string
}

func runCtl(t *testing.T, bin, apiURL, key string, args ...string) ctlResult {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = []string{"CONCIERGE_API_URL=" + apiURL, "CONCIERGE_API_KEY=" + key, "PATH=/usr/bin:/bin"}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return ctlResult{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

func TestConciergectlAgainstTheServer(t *testing.T) {
	bin := buildConciergectl(t)
	s := newStack(t, stackOptions{})
	tn := s.newTenant(domain.PlanStandard)
	free := s.newTenant(domain.PlanFree)
	s.createAgent(tn, "support")
	s.createAgent(tn, "sales")
	want := map[string]bool{}
	for range 25 {
		want[s.startSession(tn, "support")] = true
	}
	s.startSession(tn, "sales")
	api := s.base + "/api/v2"

	t.Run("agents list as a table", func(t *testing.T) {
		r := runCtl(t, bin, api, tn.Key, "agents", "list")
		if r.code != 0 || !strings.Contains(r.stdout, "SLUG") || !strings.Contains(r.stdout, "support") || !strings.Contains(r.stdout, "sales") {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
		}
	})
	t.Run("all conversations of an agent as JSON", func(t *testing.T) {
		r := runCtl(t, bin, api, tn.Key, "conversations", "list", "--agent", "support", "--all", "--json", "--limit", "7")
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		var out struct {
			Data []conversationItem `json:"data"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
			t.Fatalf("%v: %s", err, r.stdout)
		}
		got := map[string]bool{}
		for _, c := range out.Data {
			if c.Agent != "support" || got[c.ID] {
				t.Fatalf("unexpected or repeated conversation %+v", c)
			}
			got[c.ID] = true
		}
		if len(got) != len(want) {
			t.Fatalf("listed %d conversations, want %d", len(got), len(want))
		}
	})
	t.Run("one page hints at the next cursor", func(t *testing.T) {
		r := runCtl(t, bin, api, tn.Key, "conversations", "list", "--limit", "5")
		if r.code != 0 || strings.Count(r.stdout, "ses_") != 5 || !strings.Contains(r.stderr, "--cursor") {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
		}
	})
	errorsCases := []struct {
		name string
		url  string
		key  string
		args []string
		code int
	}{
		{"wrong key", api, domain.NewSecret(domain.PrefixAPIKeySecret), []string{"agents", "list"}, 3},
		{"free plan", api, free.Key, []string{"agents", "list"}, 4},
		{"unknown agent", api, tn.Key, []string{"conversations", "list", "--agent", "nobody"}, 6},
		{"limit out of range", api, tn.Key, []string{"agents", "list", "--limit", "500"}, 2},
		{"server down", "http://127.0.0.1:1/api/v2", tn.Key, []string{"agents", "list"}, 5},
	}
	for _, tc := range errorsCases {
		t.Run(tc.name, func(t *testing.T) {
			r := runCtl(t, bin, tc.url, tc.key, tc.args...)
			if r.code != tc.code || r.stdout != "" || !strings.HasPrefix(r.stderr, "conciergectl: ") {
				t.Fatalf("exit %d (want %d)\nstdout:\n%s\nstderr:\n%s", r.code, tc.code, r.stdout, r.stderr)
			}
		})
	}
}
