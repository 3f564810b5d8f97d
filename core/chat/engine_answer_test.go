package chat

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/conciergehq/concierge/core/conversation"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

func TestAnswerStreamsInOrder(t *testing.T) {
	tests := []struct {
		name     string
		rounds   []llmRound
		chunks   bool
		reply    string
		fallback domain.FallbackReason
	}{
		{"model answer", []llmRound{{deltas: []string{"Refunds ", "are accepted ", "within 30 days", " [1]."}, cited: []string{chunkRefund.ID},
			usage: domain.Usage{PromptTokens: 120, CompletionTokens: 14}}}, true, "Refunds are accepted within 30 days [1].", domain.FallbackNone},
		{"empty deltas are not events", []llmRound{{deltas: []string{"", "Yes", "", "."}}}, true, "Yes.", domain.FallbackNone},
		{"fallback streamed as words", nil, false, testFallback, domain.FallbackNoKnowledge},
		{"model error streamed as words", []llmRound{{err: domain.Unavailable("openai", errors.New("503"))}}, true, testFallback, domain.FallbackModelError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, Limits{})
			if !tt.chunks {
				r.retriever.byAgent[r.agent[domain.PlanStandard].ID] = nil
			}
			r.local.script(tt.rounds...)
			ans, events, err := r.ask(t, Request{Session: conversation.SessionRef{Workspace: r.ws[domain.PlanStandard]}, Message: "Can I get a refund?"})
			if err != nil {
				t.Fatal(err)
			}
			if ans.Reply.Content != tt.reply || ans.FallbackReason != tt.fallback || ans.IsFallback != (tt.fallback != "") {
				t.Errorf("reply %q fallback %v %q, want %q %q", ans.Reply.Content, ans.IsFallback, ans.FallbackReason, tt.reply, tt.fallback)
			}
			checkStream(t, r, events, ans)
			if tt.fallback != "" {
				toks := tokenTexts(events)
				if len(toks) < 2 {
					t.Errorf("fallback sent as %q; want word-sized tokens", toks)
				}
				for _, tok := range toks {
					if len(strings.Fields(tok)) != 1 {
						t.Errorf("fallback token %q is not one word", tok)
					}
				}
			}
			stored := r.messagesOf(ans.SessionID)
			if len(stored) != 2 || stored[0].ID != ans.UserMessage.ID || stored[1].ID != ans.Reply.ID || stored[1].Content != tt.reply ||
				stored[1].FallbackReason != tt.fallback || stored[1].OfferHandoff != ans.OfferHandoff {
				t.Errorf("stored %+v, want the USER message and the reply as answered, with its outcome", stored)
			}
			if stored[1].CreatedAt != r.clock.Now() || stored[0].CreatedAt != r.clock.Now() {
				t.Errorf("message times %v %v, want the clock's %v", stored[0].CreatedAt, stored[1].CreatedAt, r.clock.Now())
			}
		})
	}
}

// A fallback message in a language that uses multi-byte white space (French
// puts U+202F before "?" and "!", Japanese uses U+3000) must not be cut
// inside a rune when it is streamed as words: a token with half a rune is
// invalid UTF-8, JSON encoding turns it into U+FFFD, and the client's
// concatenation of tokens no longer equals done.message.
func TestAnswerStreamsMultiByteFallbackWithoutSplittingRunes(t *testing.T) {
	for _, fallback := range []string{
		"Désolé\u202f! Voulez-vous parler à quelqu'un de l'équipe\u202f?",
		"申し訳ありません。\u3000担当者におつなぎしますか？",
		"Sorry\u2009— would you like to talk to a person?",
		"Lo siento,\u00a0¿quieres hablar con una persona?",
	} {
		t.Run("", func(t *testing.T) {
			r := newRig(t, Limits{}, func(a *domain.Agent) { a.Config.FallbackMessage = fallback })
			r.retriever.byAgent[r.agent[domain.PlanStandard].ID] = nil
			ans, events, err := r.ask(t, Request{Session: conversation.SessionRef{Workspace: r.ws[domain.PlanStandard]}, Message: "Do you sell lampshades?"})
			if err != nil {
				t.Fatal(err)
			}
			for i, tok := range tokenTexts(events) {
				if !utf8.ValidString(tok) {
					t.Errorf("token %d = %q splits a multi-byte rune", i+1, tok)
				}
			}
			if ans.Reply.Content != fallback {
				t.Errorf("reply %q, want %q", ans.Reply.Content, fallback)
			}
		})
	}
}

func TestAnswerCitations(t *testing.T) {
	long := chunkShipping
	tests := []struct {
		name  string
		cited [][]string // per round
		want  []string   // source ids, in order
	}{
		{"retrieved and cited", [][]string{{chunkRefund.ID}}, []string{"src_refunds"}},
		{"hallucinated id dropped", [][]string{{"chk_made_up", chunkShipping.ID, "src_refunds"}}, []string{"src_shipping"}},
		{"one citation per source, order of first citation", [][]string{{chunkRefund2.ID, chunkShipping.ID, chunkRefund.ID, chunkRefund2.ID}}, []string{"src_refunds", "src_shipping"}},
		{"nothing cited", nil, []string{}},
		{"chunk of another agent", [][]string{{chunkWarranty.ID}}, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, Limits{})
			var cited []string
			if len(tt.cited) > 0 {
				cited = tt.cited[0]
			}
			r.local.script(llmRound{deltas: []string{"Thirty days [1]."}, cited: cited})
			ans, events, err := r.ask(t, Request{Session: conversation.SessionRef{Workspace: r.ws[domain.PlanStandard]}, Message: "Refund window?"})
			if err != nil {
				t.Fatal(err)
			}
			checkStream(t, r, events, ans)
			got := []string{}
			for _, c := range ans.Reply.Citations {
				got = append(got, c.SourceID)
				if n := utf8.RuneCountInString(c.Snippet); n > 200 || n == 0 {
					t.Errorf("snippet of %s has %d runes, want 1..200", c.SourceID, n)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("cited sources %v, want %v", got, tt.want)
			}
			stored := r.messagesOf(ans.SessionID)
			if len(stored) != 2 || fmt.Sprint(stored[1].Citations) != fmt.Sprint(ans.Reply.Citations) {
				t.Errorf("stored reply citations %+v, want %+v", stored[1].Citations, ans.Reply.Citations)
			}
		})
	}
	t.Run("fields and snippet of a long chunk", func(t *testing.T) {
		r := newRig(t, Limits{})
		r.local.script(llmRound{deltas: []string{"3 to 5 days [3]."}, cited: []string{long.ID}})
		ans, _, err := r.ask(t, Request{Session: conversation.SessionRef{Workspace: r.ws[domain.PlanStandard]}, Message: "Shipping time?"})
		if err != nil {
			t.Fatal(err)
		}
		if len(ans.Reply.Citations) != 1 {
			t.Fatalf("citations %+v, want one", ans.Reply.Citations)
		}
		c := ans.Reply.Citations[0]
		if c.DocumentName != long.DocumentName || c.SourceType != domain.SourceQA || c.Score != long.Score || c.URL != "" {
			t.Errorf("citation %+v does not describe %+v", c, long)
		}
		if utf8.RuneCountInString(c.Snippet) != 200 || !strings.HasSuffix(c.Snippet, "…") ||
			!strings.HasPrefix(c.Snippet, "Shipping takes 3 to 5 working days") {
			t.Errorf("snippet %q, want the text with white space folded, cut to 200 runes ending in …", c.Snippet)
		}
	})
	t.Run("a fallback keeps no citations", func(t *testing.T) {
		r := newRig(t, Limits{})
		r.local.script(llmRound{cited: []string{chunkRefund.ID}, err: domain.Unavailable("llm", errors.New("boom"))})
		ans, _, err := r.ask(t, Request{Session: conversation.SessionRef{Workspace: r.ws[domain.PlanStandard]}, Message: "Refund window?"})
		if err != nil {
			t.Fatal(err)
		}
		if !ans.IsFallback || len(ans.Reply.Citations) != 0 {
			t.Errorf("fallback %v with citations %+v", ans.IsFallback, ans.Reply.Citations)
		}
	})
}

func TestCitationsAndSnippet(t *testing.T) {
	knowledge := []domain.Chunk{chunkRefund, chunkRefund2, chunkShipping}
	tests := []struct {
		name  string
		cited []string
		want  []string // snippets
	}{
		{"nil", nil, []string{}},
		{"unknown only", []string{"x", ""}, []string{}},
		{"first chunk of a source wins", []string{chunkRefund2.ID, chunkRefund.ID}, []string{chunkRefund2.Text}},
		{"duplicates", []string{chunkRefund.ID, chunkRefund.ID}, []string{chunkRefund.Text}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := citations(knowledge, tt.cited)
			if got == nil {
				t.Fatal("citations returned nil; the stored message and done want an empty list")
			}
			var snippets []string
			for _, c := range got {
				snippets = append(snippets, c.Snippet)
			}
			if fmt.Sprint(snippets) != fmt.Sprint(tt.want) {
				t.Errorf("snippets %q, want %q", snippets, tt.want)
			}
		})
	}
	for _, tt := range []struct{ in, want string }{
		{"  a \n\t b  ", "a b"},
		{strings.Repeat("é", 200), strings.Repeat("é", 200)},
		{strings.Repeat("é", 201), strings.Repeat("é", 199) + "…"},
		{strings.Repeat("日本", 150), string([]rune(strings.Repeat("日本", 150))[:199]) + "…"},
	} {
		if got := snippet(tt.in); got != tt.want || utf8.RuneCountInString(got) > 200 || !utf8.ValidString(got) {
			t.Errorf("snippet(%.20q…) = %.20q… (%d runes), want %.20q…", tt.in, got, utf8.RuneCountInString(got), tt.want)
		}
	}
}

func TestAnswerModelErrors(t *testing.T) {
	unavailable := domain.Unavailable("openai", errors.New("503 from provider"))
	tests := []struct {
		name     string
		rounds   []llmRound
		retrErr  error
		reply    string
		fallback domain.FallbackReason
		calls    int
	}{
		{"error before any token", []llmRound{{err: unavailable}}, nil, testFallback, domain.FallbackModelError, 1},
		{"rate limited before any token", []llmRound{{err: &domain.RateLimitError{RetryAfterSeconds: 3}}}, nil, testFallback, domain.FallbackModelError, 1},
		{"error after tokens keeps the partial reply", []llmRound{{deltas: []string{"Refunds are ", "accepted within"}, err: unavailable, cited: []string{chunkRefund.ID}}},
			nil, "Refunds are accepted within", domain.FallbackNone, 1},
		{"error in the round after a tool call", []llmRound{
			{toolCalls: []domain.ToolCall{{ID: "c1", Name: toolSearchKnowledge, Arguments: `{"query":"refund"}`}}},
			{err: unavailable},
		}, nil, testFallback, domain.FallbackModelError, 2},
		{"retrieval failure", nil, domain.Unavailable("postgres", errors.New("down")), testFallback, domain.FallbackModelError, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, Limits{})
			r.local.script(tt.rounds...)
			if tt.retrErr != nil {
				r.retriever.failOn["Can I get a refund?"] = tt.retrErr
			}
			ans, events, err := r.ask(t, Request{Session: conversation.SessionRef{Workspace: r.ws[domain.PlanStandard]}, Message: "Can I get a refund?"})
			if err != nil {
				t.Fatalf("model failures become a fallback or a partial answer, not an error: %v", err)
			}
			if ans.Reply.Content != tt.reply || ans.FallbackReason != tt.fallback || ans.IsFallback != (tt.fallback != "") {
				t.Errorf("reply %q fallback %v %q, want %q %q", ans.Reply.Content, ans.IsFallback, ans.FallbackReason, tt.reply, tt.fallback)
			}
			if tt.fallback != "" && !ans.OfferHandoff {
				t.Error("a fallback on Standard offers handoff")
			}
			if n := len(r.local.calls()); n != tt.calls {
				t.Errorf("model called %d times, want %d", n, tt.calls)
			}
			checkStream(t, r, events, ans)
			if stored := r.messagesOf(ans.SessionID); len(stored) != 2 || stored[1].Content != tt.reply {
				t.Errorf("stored %+v, want the reply %q", stored, tt.reply)
			}
		})
	}
}

func TestAnswerModelChoice(t *testing.T) {
	tests := []struct {
		model     string
		wantLocal bool
		wantName  string
	}{
		{"", true, ""},
		{"local", true, ""},
		{"local:tiny-1b", true, "tiny-1b"},
		{"openai", false, ""},
		{"openai:gpt-x", false, "gpt-x"},
		{"anthropic:claude-x", true, ""},
		{"mystery", true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.model, func(t *testing.T) {
			r := newRig(t, Limits{}, func(a *domain.Agent) { a.Config.Model = tt.model })
			r.local.script(llmRound{deltas: []string{"local answer"}})
			r.openai.script(llmRound{deltas: []string{"openai answer"}})
			ans, _, err := r.ask(t, Request{Session: conversation.SessionRef{Workspace: r.ws[domain.PlanStandard]}, Message: "Can I get a refund?"})
			if err != nil {
				t.Fatal(err)
			}
			used, other := r.local, r.openai
			if !tt.wantLocal {
				used, other = r.openai, r.local
			}
			calls := used.calls()
			if len(calls) != 1 || len(other.calls()) != 0 {
				t.Fatalf("%s called %d times, %s %d times; want only %s", used.name, len(calls), other.name, len(other.calls()), used.name)
			}
			if calls[0].Model != tt.wantName {
				t.Errorf("req.Model = %q, want %q", calls[0].Model, tt.wantName)
			}
			if ans.Reply.Content != used.name+" answer" {
				t.Errorf("reply %q from the wrong model", ans.Reply.Content)
			}
		})
	}
}

func TestAnswerModelRequest(t *testing.T) {
	r := newRig(t, Limits{HistoryMessages: 3})
	r.local.script(
		llmRound{deltas: []string{"Thirty days."}},
		llmRound{deltas: []string{"Three to five days."}},
		llmRound{deltas: []string{"Two years."}},
	)
	ws := r.ws[domain.PlanStandard]
	first, _, err := r.ask(t, Request{Session: conversation.SessionRef{Workspace: ws}, Message: "Refund window?"})
	if err != nil {
		t.Fatal(err)
	}
	for _, msg := range []string{"Shipping time?", "Warranty?"} {
		if _, _, err := r.ask(t, Request{Session: conversation.SessionRef{Workspace: ws, ID: first.SessionID}, Message: msg}); err != nil {
			t.Fatal(err)
		}
	}
	calls := r.local.calls()
	if len(calls) != 3 {
		t.Fatalf("model called %d times", len(calls))
	}
	req := calls[2]
	var got []string
	for _, m := range req.Messages {
		got = append(got, m.Role+":"+m.Content)
	}
	want := []string{"assistant:Thirty days.", "user:Shipping time?", "assistant:Three to five days.", "user:Warranty?"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("messages %q, want the last %d stored messages then the new one: %q", got, 3, want)
	}
	if !strings.Contains(req.System, testPrompt) || !strings.Contains(req.System, "Ada") ||
		strings.Index(req.System, "Rules:") < strings.Index(req.System, testPrompt) {
		t.Errorf("system prompt %q: want the agent's name and prompt, the engine's rules last", req.System)
	}
	if fmt.Sprint(req.Knowledge) != fmt.Sprint([]domain.Chunk{chunkRefund, chunkRefund2, chunkShipping}) {
		t.Errorf("knowledge %+v, want the retrieved chunks in order", req.Knowledge)
	}
}

// TestAnswerHandsRetrievalsJudgementToTheModel checks that the model is
// told how sure retrieval is that the passages answer, and only when
// retrieval judged the question.
func TestAnswerHandsRetrievalsJudgementToTheModel(t *testing.T) {
	judged := func(a float64) *float64 { return &a }
	tests := []struct {
		name   string
		judged *float64
		want   float64
	}{
		{"a judged question", judged(0.8), 0.8},
		{"judged barely answerable", judged(0.36), 0.36},
		{"a retrieval that gave no verdict", nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, Limits{})
			r.retriever.judged = tt.judged
			r.local.script(llmRound{deltas: []string{"Thirty days."}})
			ws := r.ws[domain.PlanStandard]
			if _, _, err := r.ask(t, Request{Session: conversation.SessionRef{Workspace: ws}, Message: "Refund window?"}); err != nil {
				t.Fatal(err)
			}
			calls := r.local.calls()
			if len(calls) != 1 {
				t.Fatalf("model called %d times", len(calls))
			}
			if got := calls[0].Answerability; got != tt.want {
				t.Errorf("Answerability = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestHistoryForModel(t *testing.T) {
	got := historyForModel([]domain.Message{
		{Role: domain.RoleUser, Content: "u"},
		{Role: domain.RoleAssistant, Content: "a"},
		{Role: domain.RoleSystem, Content: "status changed"},
		{Role: domain.RoleHuman, Content: "h"},
	})
	want := []ports.LLMMessage{{Role: "user", Content: "u"}, {Role: "assistant", Content: "a"}, {Role: "assistant", Content: "h"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("history %+v, want %+v (SYSTEM messages left out, HUMAN replies as assistant)", got, want)
	}
}

func TestAnswerSurvivesFailingBus(t *testing.T) {
	for _, failFrom := range []int{1, 2, 4} {
		t.Run(fmt.Sprint("fails from publish ", failFrom), func(t *testing.T) {
			r := newRig(t, Limits{})
			r.bus.failFrom = failFrom
			r.local.script(llmRound{deltas: words("Refunds are accepted within 30 days of delivery."), cited: []string{chunkRefund.ID}})
			ans, events, err := r.ask(t, Request{Session: conversation.SessionRef{Workspace: r.ws[domain.PlanStandard]}, Message: "Refund window?"})
			if err != nil {
				t.Fatalf("a bus failure must not fail the answer: %v", err)
			}
			checkStream(t, r, events, ans)
			if stored := r.messagesOf(ans.SessionID); len(stored) != 2 {
				t.Errorf("stored %d messages, want 2", len(stored))
			}
			if got := len(r.bus.all()); got != failFrom-1 {
				t.Errorf("bus kept %d events, want the %d before the failure", got, failFrom-1)
			}
		})
	}
}

// A bus that hangs (Redis unreachable, a full TCP buffer) must not hold the
// answer: Publish gets the engine's context, so the fake returns as soon as
// that context is done.
func TestAnswerNotBlockedByHangingBus(t *testing.T) {
	r := newRig(t, Limits{Timeout: 500 * time.Millisecond})
	r.bus.hold = make(chan struct{})
	r.local.script(llmRound{deltas: words("Refunds are accepted within 30 days of delivery.")})
	rec := &recorder{}
	done := make(chan struct{})
	var (
		ans domain.Answer
		err error
	)
	go func() {
		defer close(done)
		ans, err = answerTurn(context.Background(), r.svc, Request{Session: conversation.SessionRef{Workspace: r.ws[domain.PlanStandard]}, Message: "Refund window?"}, rec.emit)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second): // a hang, with room for a loaded machine
		evs := rec.all()
		t.Errorf("Answer has not returned 10 s after it started (its Timeout is 0.5 s) because the event bus hangs; "+
			"Emit already got %d events, the last %q", len(evs), evs[len(evs)-1].Type)
		close(r.bus.hold) // let the engine finish so the test leaves no goroutine behind
		<-done
		return
	}
	close(r.bus.hold)
	if err != nil || ans.Reply.Content != "Refunds are accepted within 30 days of delivery." {
		t.Errorf("answer %q err %v", ans.Reply.Content, err)
	}
}

func TestAnswerReplyStoreFailure(t *testing.T) {
	r := newRig(t, Limits{})
	storeErr := domain.Unavailable("postgres", errors.New("gone"))
	r.convs.FailMessages(func(m domain.Message) error {
		if m.Role == domain.RoleAssistant {
			return storeErr
		}
		return nil
	})
	r.local.script(llmRound{deltas: []string{"Thirty ", "days."}})
	_, events, err := r.ask(t, Request{Session: conversation.SessionRef{Workspace: r.ws[domain.PlanStandard]}, Message: "Refund window?"})
	if !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("err = %v, want the store's unavailable error", err)
	}
	last := events[len(events)-1]
	if last.Type != domain.EventError || last.ErrorCode != "UNAVAILABLE" || last.Seq != 3 || last.MessageID == "" {
		t.Errorf("last event %+v, want an error event numbered after the 2 tokens", last)
	}
	for _, ev := range events {
		if ev.Type == domain.EventDone {
			t.Errorf("done sent for an answer that was not stored: %+v", ev)
		}
	}
}

func TestNewServiceNeedsDefaultModel(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if _, err := NewService(Deps{Models: map[string]ports.LLM{"local": &scriptedLLM{}}, DefaultModel: "openai", Log: log}, Limits{}); err == nil {
		t.Error("NewService accepted a default model that is not configured")
	}
}
