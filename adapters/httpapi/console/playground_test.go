package console_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/conciergehq/concierge/core/chat"
	"github.com/conciergehq/concierge/core/conversation"
	"github.com/conciergehq/concierge/core/domain"
)

const streamPath = "/console/w/ws_a/playground/stream"

// sseData is the data of each event of a stream's body, in order.
func sseData(t *testing.T, body string) []map[string]any {
	t.Helper()
	var events []map[string]any
	for _, frame := range strings.Split(body, "\n\n") {
		for _, line := range strings.Split(frame, "\n") {
			data, ok := strings.CutPrefix(line, "data: ")
			if !ok {
				continue
			}
			var ev map[string]any
			if err := json.Unmarshal([]byte(data), &ev); err != nil {
				t.Fatalf("event %q: %v", data, err)
			}
			events = append(events, ev)
		}
	}
	return events
}

// formKey is the idempotency key a playground page's form sends.
func formKey(t *testing.T, body string) string {
	t.Helper()
	m := regexp.MustCompile(`<input type="hidden" name="key" value="([^"]*)">`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no key in the form:\n%s", body)
	}
	return m[1]
}

// The stream endpoint is the playground's: owners, admins and helpers;
// another workspace's user gets 404 and a signed-out one the sign-in page.
// A session of another workspace is not found in any workspace's URL.
func TestPlaygroundStreamRoleMatrix(t *testing.T) {
	const ok, see, nf = http.StatusOK, http.StatusSeeOther, http.StatusNotFound
	type want = roleStatuses
	routes := []struct {
		path string
		form url.Values
		want want
	}{
		{streamPath, url.Values{"agent": {"support"}, "question": {"How do refunds work?"}}, want{ok, ok, ok, nf, see}},
		{streamPath, url.Values{"session": {convA}, "question": {"And express?"}}, want{ok, ok, ok, nf, see}},
		{"/console/w/ws_b/playground/stream", url.Values{"session": {convA}, "question": {"Hello?"}}, want{nf, nf, nf, nf, see}},
	}
	for _, rt := range routes {
		for _, who := range rt.want.roles() {
			t.Run(rt.path+" "+rt.form.Get("question")+" as "+who.name, func(t *testing.T) {
				h := newHarness(t, publicURL)
				h.seedAgent(t, "support", "Support", true)
				h.seedConversations(t)
				r := h.do(t, req{Method: "POST", Path: rt.path, As: who.as, Form: rt.form})
				if r.Status != who.want {
					t.Fatalf("status %d, want %d; Location %q; body:\n%s", r.Status, who.want, r.location(), r.Body)
				}
				switch who.want {
				case ok:
					if ct := r.Header.Get("Content-Type"); ct != "text/event-stream" {
						t.Fatalf("Content-Type %q", ct)
					}
				case see:
					if !strings.HasPrefix(r.location(), "/console/sign-in") {
						t.Fatalf("signed out: Location %q", r.location())
					}
				case nf:
					if !strings.Contains(r.Body, "There is nothing here") || strings.Contains(r.Body, "Beta&#39;s secret question") {
						t.Fatalf("404 page:\n%s", r.Body)
					}
				}
				if who.want != ok && h.chat.runs != 0 {
					t.Fatal("a refused question was answered")
				}
				for _, asked := range h.chat.requests {
					if asked.Session.Workspace == nil || !strings.Contains(rt.path, "/w/"+asked.Session.Workspace.ID+"/") {
						t.Fatalf("the engine was asked in another workspace: %+v", asked)
					}
				}
			})
		}
	}
}

// The answer streams as the engine writes it: the question, its tokens,
// then done with the conversation's id, whose playground page then shows
// the answer with its citation and open trace. The conversation is the
// playground's, asked with the form's key.
func TestPlaygroundStream(t *testing.T) {
	h := newHarness(t, publicURL)
	h.seedAgent(t, "support", "Support", true)
	page := h.do(t, req{Path: "/console/w/ws_a/playground", As: "agent"})
	key := formKey(t, page.Body)
	if !strings.HasPrefix(key, "pgq_") || !strings.Contains(page.Body, `data-stream="/console/w/ws_a/playground/stream"`) ||
		!strings.Contains(page.Body, `data-answering="Answering…"`) || !strings.Contains(page.Body, `role="status" aria-live="polite" data-play-status`) {
		t.Fatalf("the form is not set up for streaming:\n%s", page.Body)
	}
	r := h.do(t, req{Method: "POST", Path: streamPath, As: "agent", Form: url.Values{"agent": {"support"}, "question": {"How do refunds work?"}, "key": {key}}})
	if r.Status != http.StatusOK || r.Header.Get("Content-Type") != "text/event-stream" || r.Header.Get("Cache-Control") != "no-cache" {
		t.Fatalf("status %d, headers %v:\n%s", r.Status, r.Header, r.Body)
	}
	events := sseData(t, r.Body)
	var types []string
	var text string
	for _, ev := range events {
		types = append(types, ev["type"].(string))
		if ev["type"] == "token" {
			text += ev["content"].(string)
		}
	}
	if strings.Join(types, ",") != "message,token,token,done" || text != "You asked: How do refunds work?" {
		t.Fatalf("events %v, text %q", types, text)
	}
	session, _ := events[len(events)-1]["sessionId"].(string)
	if !strings.HasPrefix(session, "ses_") {
		t.Fatalf("done without the session: %v", events[len(events)-1])
	}
	asked := h.chat.requests[0]
	if asked.IdempotencyKey != "console-playground:"+key || asked.Channel != domain.ChannelPlayground || asked.AgentSlug != "support" || asked.Session.Workspace.ID != "ws_a" {
		t.Fatalf("engine asked with %+v", asked)
	}
	shown := h.do(t, req{Path: "/console/w/ws_a/playground?session=" + session, As: "agent"})
	for _, want := range []string{"You asked: How do refunds work?", "snippet of Refund policy", `<details class="trace" open>`, "Passages considered (1, 1 kept)"} {
		if !strings.Contains(shown.Body, want) {
			t.Errorf("no %q on the answered page", want)
		}
	}
	if formKey(t, shown.Body) == key {
		t.Error("the next question's form has the last question's key")
	}
}

// chatRequest is the engine request the playground makes of a form in
// ws_a.
func (h *harness) chatRequest(t *testing.T, form url.Values) chat.Request {
	t.Helper()
	ws, err := fakeWorkspaces{names: map[string]string{"ws_a": "Acme"}}.GetWorkspace(t.Context(), "ws_a")
	if err != nil {
		t.Fatal(err)
	}
	return chat.Request{Session: conversation.SessionRef{Workspace: &ws}, AgentSlug: form.Get("agent"), Message: form.Get("question"),
		Channel: domain.ChannelPlayground, IdempotencyKey: "console-playground:" + form.Get("key")}
}

// The same form sent twice (a double click, a retried request) asks once,
// with or without console.js; its key with another question is refused
// with a new key to send it with; while its answer is being written, the
// second send says so and keeps the question.
func TestPlaygroundAsksOnce(t *testing.T) {
	ask := url.Values{"agent": {"support"}, "question": {"How do refunds work?"}, "key": {"pgq_0123456789abcdefghjkmnpq"}}
	for _, path := range []string{"/console/w/ws_a/playground", streamPath} {
		t.Run(path, func(t *testing.T) {
			h := newHarness(t, publicURL)
			h.seedAgent(t, "support", "Support", true)
			first := h.do(t, req{Method: "POST", Path: path, As: "agent", Form: ask})
			again := h.do(t, req{Method: "POST", Path: path, As: "agent", Form: ask})
			if first.Status != again.Status || first.Status >= 400 {
				t.Fatalf("statuses %d and %d:\n%s", first.Status, again.Status, again.Body)
			}
			if first.location() != again.location() {
				t.Fatalf("answered in two places: %q and %q", first.location(), again.location())
			}
			if path == streamPath {
				a, b := sseData(t, first.Body), sseData(t, again.Body)
				if a[len(a)-1]["sessionId"] != b[len(b)-1]["sessionId"] || b[len(b)-1]["type"] != "done" {
					t.Fatalf("the second send got another answer: %v / %v", a[len(a)-1], b[len(b)-1])
				}
			}
			if h.chat.runs != 1 || len(h.convs.convs) != 1 {
				t.Fatalf("%d answers in %d conversations, want 1 in 1", h.chat.runs, len(h.convs.convs))
			}
			for _, c := range h.convs.convs {
				if n := len(h.convs.msgs[c.ID]); n != 2 {
					t.Fatalf("%d messages, want the question and its answer", n)
				}
			}

			// The key with an edited question: refused, with a new key.
			edited := url.Values{"agent": {"support"}, "question": {"And express?"}, "key": ask["key"]}
			r := h.do(t, req{Method: "POST", Path: path, As: "agent", Form: edited})
			if r.Status != http.StatusConflict || !strings.Contains(r.Body, "This form had already sent another question.") ||
				!strings.Contains(r.Body, ">And express?</textarea>") || formKey(t, r.Body) == ask.Get("key") {
				t.Fatalf("reused key: %d\n%s", r.Status, r.Body)
			}
			if h.chat.runs != 1 {
				t.Fatal("a refused question was answered")
			}
		})
	}
	t.Run("still being answered", func(t *testing.T) {
		h := newHarness(t, publicURL)
		h.seedAgent(t, "support", "Support", true)
		// The first send is being answered: its key is taken, no answer yet.
		if _, err := h.chat.Start(t.Context(), h.chatRequest(t, ask)); err != nil {
			t.Fatal(err)
		}
		for _, path := range []string{"/console/w/ws_a/playground", streamPath} {
			r := h.do(t, req{Method: "POST", Path: path, As: "agent", Form: ask})
			if r.Status != http.StatusConflict || !strings.Contains(r.Body, "This question is still being answered.") ||
				!strings.Contains(r.Body, ">How do refunds work?</textarea>") || formKey(t, r.Body) != ask.Get("key") {
				t.Fatalf("%s: %d\n%s", path, r.Status, r.Body)
			}
		}
		if h.chat.runs != 0 {
			t.Fatal("asked twice")
		}
	})
}

// Bad input to either playground form (the plain post and the streaming
// one) is refused with the same page: the message next to its field, the
// question and the agent kept, nothing asked or stored, nothing echoed
// unescaped, and never an event stream.
func TestPlaygroundBadInput(t *testing.T) {
	for _, tc := range []struct {
		name   string
		form   url.Values
		status int
		field  string
		want   string
	}{
		{"no agent", url.Values{"question": {"Hello?"}}, 400, "agent", "Choose an agent."},
		{"unknown agent", url.Values{"agent": {"nobody"}, "question": {"Hello?"}}, 400, "agent", "This agent does not exist in this workspace."},
		{"another workspace's agent", url.Values{"agent": {"other"}, "question": {"Hello?"}}, 400, "agent", "This agent does not exist in this workspace."},
		{"empty question", url.Values{"agent": {"support"}, "question": {"  \n "}}, 400, "question", "Type a question."},
		{"oversize question", url.Values{"agent": {"support"}, "question": {strings.Repeat("é", domain.MaxMessageLength+1)}}, 400, "question", "The question is too long: at most 8000 characters."},
		{"bad characters", url.Values{"agent": {"support"}, "question": {"Hello\x00?"}}, 400, "question", ""},
		{"unknown session", url.Values{"session": {"ses_0123456789abcdefghjkmnpqrv"}, "question": {"Hello?"}}, 404, "", "There is nothing here"},
		{"malformed session", url.Values{"session": {"<script>"}, "question": {"Hello?"}}, 404, "", "There is nothing here"},
		{"malformed key", url.Values{"agent": {"support"}, "question": {"Hello?"}, "key": {"../<b>"}}, 400, "", "This form is out of date."},
		{"oversize key", url.Values{"agent": {"support"}, "question": {"Hello?"}, "key": {strings.Repeat("k", 300)}}, 400, "", "This form is out of date."},
	} {
		for _, path := range []string{"/console/w/ws_a/playground", streamPath} {
			t.Run(tc.name+" "+path, func(t *testing.T) {
				h := newHarness(t, publicURL)
				h.seedAgent(t, "support", "Support", true)
				if _, err := h.agents.Create(t.Context(), "ws_b", domain.Agent{Slug: "other", Name: "Other"}); err != nil {
					t.Fatal(err)
				}
				r := h.do(t, req{Method: "POST", Path: path, As: "owner", Form: tc.form})
				if r.Status != tc.status || !strings.Contains(r.Body, tc.want) || strings.HasPrefix(r.Header.Get("Content-Type"), "text/event-stream") {
					t.Fatalf("status %d, want %d with %q:\n%s", r.Status, tc.status, tc.want, r.Body)
				}
				if tc.field != "" && !strings.Contains(r.Body, `<p class="field-error" id="f-`+tc.field+`-error">`) {
					t.Fatalf("no message next to %s:\n%s", tc.field, r.Body)
				}
				if len(h.convs.convs) != 0 || h.chat.runs != 0 {
					t.Fatal("a refused question was asked or stored")
				}
				if tc.status == 400 && tc.form.Get("question") == "Hello?" && !strings.Contains(r.Body, ">Hello?</textarea>") {
					t.Errorf("the question is not kept:\n%s", r.Body)
				}
				if tc.name == "empty question" && !strings.Contains(r.Body, `<option value="support" selected>`) {
					t.Error("the chosen agent is lost")
				}
				if strings.Contains(r.Body, "<b>") {
					t.Error("the key is echoed unescaped")
				}
			})
		}
	}
}

// A question with markup goes back escaped: in the stream (JSON) and on a
// refusal's page.
func TestPlaygroundStreamEscapesQuestion(t *testing.T) {
	const x = `<script>alert(1)</script>`
	h := newHarness(t, publicURL)
	h.seedAgent(t, "support", "Support", true)
	r := h.do(t, req{Method: "POST", Path: streamPath, As: "agent", Form: url.Values{"agent": {"support"}, "question": {x}}})
	if r.Status != http.StatusOK || strings.Contains(r.Body, "<script>") || !strings.Contains(r.Body, `\u003cscript\u003e`) {
		t.Fatalf("stream not escaped: %d\n%s", r.Status, r.Body)
	}
	refused := h.do(t, req{Method: "POST", Path: streamPath, As: "agent", Form: url.Values{"question": {x}}})
	if refused.Status != http.StatusBadRequest || strings.Contains(refused.Body, "<script>alert") || !strings.Contains(refused.Body, `&lt;script&gt;alert(1)&lt;/script&gt;`) {
		t.Fatalf("refusal not escaped: %d\n%s", refused.Status, refused.Body)
	}
}
