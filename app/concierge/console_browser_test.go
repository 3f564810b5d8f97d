package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/conciergehq/concierge/adapters/openaicompat/mockllmtest"
	"github.com/conciergehq/concierge/core/domain"
)

// The console in a real browser: `concierge serve` and `concierge worker`
// as real processes on a fresh database, a Standard workspace made by the
// operator CLI, and tools/browser/console.test.mjs driving Debian's chromium
// through playwright-core (installed by `make browser`, a step of `make
// test`). The journeys: the operator's owner invitation accepted, sign-out
// and sign-in, the used link refused; an agent created, published, its
// snippet and live preview; a PDF and a DOCX uploaded with progress and
// watched until READY; an API key made in Settings and used with the real
// conciergectl; a saved reply made on its settings page (a taken shortcut
// refused first) and inserted with "/" in a thread's composer; the webhook
// secret revealed and rotated with a grace period (both secrets checked on
// the inbound webhook); a helper invited from Members, accepting in a
// second browser, refused settings and agent pages, seeing the saved
// replies read-only; a question asked in the playground, its answer
// streaming into the page and then shown with its citation and open trace
// without a reload (a double click asks once), and a question outside the
// knowledge showing its fallback reason. The worker writes each chunk's
// questions at index time (CONCIERGE_INDEX_QUESTIONS, mock-llm as the
// model), so the playground's trace shows the written question its passage
// was found by. Every screen (with the
// conversations list, a transcript and the answered playground) is audited
// with axe-core (zero WCAG 2.1 A/AA violations) at 1024 and 375 px.
// Screenshots go to a temporary directory, or to CONSOLE_SCREENSHOT_DIR
// (`make screenshots` sets it to docs/console).
func TestConsoleInBrowser(t *testing.T) {
	b := browserTools(t)
	root := b.root
	fixtures := filepath.Join(root, "adapters", "ingest", "testdata")
	pdf, docx := filepath.Join(fixtures, "sample.pdf"), filepath.Join(fixtures, "sample.docx")
	for _, f := range []string{pdf, docx} {
		if _, err := os.Stat(f); err != nil {
			t.Fatal(err)
		}
	}
	ctl := buildConciergectl(t)

	// The question writer: mock-llm gives the passage holding the default
	// port two questions (the last matching rule answers), every other
	// passage none.
	writer := func(match, content string) mockllmtest.Rule {
		body, _ := json.Marshal(content)
		return mockllmtest.Rule{Path: "/v1/chat/completions", Method: "POST", Match: match, Response: mockllmtest.Response{Status: 200,
			Content: `{"id":"chatcmpl-1","object":"chat.completion","model":"mock-writer","choices":[{"index":0,"message":{"role":"assistant","content":` +
				string(body) + `},"finish_reason":"stop"}]}`}}
	}
	mock := mockllmtest.Start(t, &mockllmtest.Config{Rules: []mockllmtest.Rule{
		writer("@", "None."),
		writer("contains(to_string(body.messages), '8080')", "Which port does the service listen on by default?\nHow do I change the port?"),
	}})
	c := newCluster(t, clusterOptions{pods: 1, workers: 1, env: map[string]string{
		"CONCIERGE_OPENAI_BASE_URL": mock.URL + "/v1", "CONCIERGE_OPENAI_API_KEY": "sk-mock",
		"CONCIERGE_INDEX_QUESTIONS": "2", "CONCIERGE_INDEX_QUESTIONS_MODEL": "mock-writer",
	}})
	pod := c.pods[0]
	tn := c.newTenant(domain.PlanStandard)

	// The first owner comes from the operator, as in production; a second
	// invitation is never accepted, so its page can be audited.
	type invitation struct{ Email, Role, Link string }
	invite := func(email, role string) invitation {
		var inv invitation
		admMustJSON(t, c.env, &inv, "admin", "user", "invite", "--workspace", tn.ID, "--email", email, "--role", role, "--json")
		if inv.Email != email || inv.Role != role || !strings.Contains(inv.Link, "/console/invitations/") {
			t.Fatalf("user invite printed %+v", inv)
		}
		return inv
	}
	owner := invite("owner@example.com", "owner")
	spare := invite("later@example.com", "admin")

	// The journey takes about five minutes on 2 quiet cores, most of it
	// the accessibility audits of every screen at two widths; the bound is
	// for a browser that hangs, not a measure, so it leaves room for a
	// loaded machine (CI's took over seven minutes once, beside the shards).
	b.run(t, "console.test.mjs", "CONSOLE_SCREENSHOT_DIR", 15*time.Minute,
		"CONSOLE_BASE="+pod.base,
		"CONSOLE_WORKSPACE="+tn.ID,
		// As newTenant names it.
		"CONSOLE_WORKSPACE_NAME=tenant "+domain.PlanStandard.Title(),
		"CONSOLE_OWNER_LINK="+owner.Link,
		"CONSOLE_OWNER_EMAIL="+owner.Email,
		"CONSOLE_SPARE_LINK="+spare.Link,
		"CONSOLE_PDF="+pdf,
		"CONSOLE_DOCX="+docx,
		"CONCIERGECTL="+ctl,
	)
}
