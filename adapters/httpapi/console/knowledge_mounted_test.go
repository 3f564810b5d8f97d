package console_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/conciergehq/concierge/adapters/httpapi"
	"github.com/conciergehq/concierge/adapters/httpapi/console"
	"github.com/conciergehq/concierge/core/domain"
)

// Knowledge: behind httpapi.New's body limits an upload's body is a live
// stream, so the plain form's CSRF token is checked by the handler, as the
// form's first part, before any file is read; files are bounded by the
// domain's limit and the body by the upload limit (refused by the edge's
// guard before routing, so in its JSON words; console.js says it in its
// own).
func TestKnowledgeStreamedUpload(t *testing.T) {
	accounts, agents := newFakeAccounts(), newFakeAgents()
	if _, err := agents.Create(context.Background(), "ws_a", domain.Agent{Slug: "support", Name: "Support"}); err != nil {
		t.Fatal(err)
	}
	h, err := console.New(accounts, fakeWorkspaces{names: map[string]string{"ws_a": "Acme"}}, agents, console.Options{PublicURL: publicURL})
	if err != nil {
		t.Fatal(err)
	}
	app, err := httpapi.New(context.Background(), httpapi.Services{Console: h},
		httpapi.Deps{Log: slog.New(slog.NewTextHandler(io.Discard, nil))},
		httpapi.Options{BodyLimitBytes: 1 << 20, LargeBodySlots: 1, LargeBodyWait: time.Second, PublicURL: publicURL})
	if err != nil {
		t.Fatal(err)
	}
	type part struct{ field, filename, value string }
	send := func(parts []part, header map[string]string) (int, string) {
		t.Helper()
		var buf bytes.Buffer
		w := multipart.NewWriter(&buf)
		for _, p := range parts {
			if p.filename == "" {
				_ = w.WriteField(p.field, p.value)
				continue
			}
			fw, _ := w.CreateFormFile(p.field, p.filename)
			_, _ = io.WriteString(fw, p.value)
		}
		_ = w.Close()
		r := httptest.NewRequest("POST", knowledgePath+"/files", &buf)
		r.Host = "console.example"
		r.Header.Set("Content-Type", w.FormDataContentType())
		r.Header.Set("Sec-Fetch-Site", "same-origin")
		r.AddCookie(&http.Cookie{Name: "__Host-concierge_session", Value: "cs_admin"})
		for k, v := range header {
			r.Header.Set(k, v)
		}
		res, err := app.Test(r, -1)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(raw)
	}
	added := func() int {
		if agents.sources == nil {
			return 0
		}
		return len(agents.sources.added)
	}
	file := func(name, content string) part { return part{"file", name, content} }
	csrf := func(tok string) part { return part{field: "csrf", value: tok} }

	tests := []struct {
		name   string
		parts  []part
		header map[string]string
		status int
		body   string
		added  int
	}{
		{"token first, two files", []part{csrf("csrf_admin"), file("a.md", "# A"), file("b.txt", "B")}, nil, 303, "", 2},
		{"token in the header (console.js)", []part{file("c.md", "# C")}, map[string]string{"X-CSRF-Token": "csrf_admin"}, 303, "", 1},
		{"no token", []part{file("a.md", "# A")}, nil, 403, "This form has expired", 0},
		{"wrong token", []part{csrf("csrf_owner"), file("a.md", "# A")}, nil, 403, "This form has expired", 0},
		{"a file before the token", []part{file("a.md", "# A"), csrf("csrf_admin")}, nil, 403, "This form has expired", 0},
		{"wrong header, right field", []part{csrf("csrf_admin"), file("a.md", "# A")}, map[string]string{"X-CSRF-Token": "nope"}, 403, "This form has expired", 0},
		{"an unknown field", []part{csrf("csrf_admin"), {field: "name", value: "x"}, file("a.md", "# A")}, nil, 400, "send the files as a multipart form", 0},
		{"a file over 20 MiB", []part{csrf("csrf_admin"), file("huge.txt", strings.Repeat("x", domain.MaxSourceFileBytes+1))}, nil, 400, "huge.txt: must be at most 20 MiB", 0},
		{"a body over the upload limit", []part{csrf("csrf_admin"), file("a.txt", strings.Repeat("x", 12<<20)), file("b.txt", strings.Repeat("x", 12<<20))}, nil, 413, "PAYLOAD_TOO_LARGE", 0},
	}
	// The text form is sent as multipart/form-data, so a text at its
	// 500,000-byte limit fits the 1 MiB form limit even when every
	// character would take 6 bytes URL-encoded.
	t.Run("the longest text in two-byte characters", func(t *testing.T) {
		var buf bytes.Buffer
		w := multipart.NewWriter(&buf)
		for _, kv := range [][2]string{{"csrf", "csrf_admin"}, {"type", "text"}, {"name", "Long"}, {"content", strings.Repeat("é", domain.MaxSourceContentLength/2)}} {
			_ = w.WriteField(kv[0], kv[1])
		}
		_ = w.Close()
		r := httptest.NewRequest("POST", knowledgePath+"/sources", &buf)
		r.Host = "console.example"
		r.Header.Set("Content-Type", w.FormDataContentType())
		r.AddCookie(&http.Cookie{Name: "__Host-concierge_session", Value: "cs_admin"})
		res, err := app.Test(r, -1)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		if res.StatusCode != http.StatusSeeOther {
			raw, _ := io.ReadAll(res.Body)
			t.Fatalf("%d:\n%.2000s", res.StatusCode, raw)
		}
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := added()
			status, body := send(tt.parts, tt.header)
			if status != tt.status || !strings.Contains(body, tt.body) {
				t.Fatalf("%d, want %d with %q:\n%.3000s", status, tt.status, tt.body, body)
			}
			if got := added() - before; got != tt.added {
				t.Fatalf("%d sources added, want %d", got, tt.added)
			}
		})
	}
}
