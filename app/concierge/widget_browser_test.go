package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/conciergehq/concierge/adapters/postgres"
	"github.com/conciergehq/concierge/core/domain"
)

// The chat widget in a real browser: `concierge serve` and `concierge
// worker` as real processes on a fresh database, seeded through the v2 API,
// and tools/browser/widget.test.mjs driving Debian's chromium through
// playwright-core (installed by `make browser`, a step of `make test`). The
// script asks a question and watches the answer stream in with its citation,
// clicks a suggested question, rates an answer, reloads and finds the
// history, asks for a person and sees a reply posted through the API appear
// (live, then with the live stream blocked, by polling), checks that hostile
// Markdown renders inert, sends with the keyboard only, fits a 375 px phone,
// checks the 404 page, embeds the widget in an <iframe> of a page on another
// origin (rendered for the default allowedOrigins and for a listed origin,
// refused by Chromium's CSP frame-ancestors for an unlisted one), and
// (Enterprise) white-label and a verified user.
// It prints the page weight (asserted under 200,000 bytes) and the first-token
// figures (recorded only). Screenshots go to a temporary directory, or to
// WIDGET_SCREENSHOT_DIR (`make screenshots` sets it to docs/widget).

const (
	widgetQuestion   = "How long does standard shipping take?"
	widgetAnswerText = "3 to 5 business days"
	widgetCitation   = "Shipping policy"
	// A Q&A source whose answer is hostile: the widget must render it inert.
	widgetXSSQuestion = "Show me the rendering sample"
	widgetXSSAnswer   = "Here is the sample: <img src=x onerror=\"window.__pwned=1\"> and a link [click me](javascript:window.__pwned=2). **Bold** stays bold."
	// The only origin an agent of the framing checks lets frame it: not the
	// host page's, so Chromium must refuse to render it there.
	widgetOtherOrigin = "https://shop.example.com"
)

func TestWidgetInBrowser(t *testing.T) {
	b := browserTools(t)

	c := newCluster(t, clusterOptions{pods: 1, workers: 1, env: map[string]string{
		// Answers of many small tokens, flushed one by one, so streaming shows.
		"CONCIERGE_LOCAL_TOKEN_DELAY": "25ms",
	}})
	pod := c.pods[0]

	// A Standard workspace (handoff, "Powered by Concierge").
	std := c.newTenant(domain.PlanStandard)
	c.must(c.do(pod, "POST", "/api/v2/agents", map[string]any{
		"slug": "support", "name": "Acme Help", "primaryColor": "#0F766E",
		"welcomeMessage":     "Hi! I'm the Acme assistant. Ask me about **shipping**, returns or your order.",
		"suggestedQuestions": []string{"How much does express shipping cost?", "Can I return an item?"},
	}, std.auth()), 201)
	for _, src := range []map[string]any{
		{"type": "text", "name": widgetCitation, "content": "Acme ships orders within 1 business day of payment. Standard shipping takes 3 to 5 business days and costs 4 euros. Express shipping takes 1 to 2 business days and costs 9 euros. Shipping is free for orders over 50 euros. You receive a tracking link by email as soon as the parcel leaves our warehouse."},
		{"type": "text", "name": "Returns and refunds", "content": "You can return any unused item within 30 days of delivery. Start a return from the Orders page of your account and print the prepaid label. Refunds are issued to the original payment method within 5 business days of the return reaching our warehouse."},
		{"type": "qa", "question": widgetXSSQuestion, "answer": widgetXSSAnswer},
	} {
		c.must(c.do(pod, "POST", "/api/v2/agents/support/sources", src, std.auth()), 201)
	}

	// An Enterprise workspace: white-label (no "Powered by") and identity.
	ent := c.newTenant(domain.PlanEnterprise)
	c.must(c.do(pod, "POST", "/api/v2/agents", map[string]any{
		"slug": "brand", "name": "Brand Concierge", "primaryColor": "#fde047",
		"welcomeMessage": "Welcome back! How can we help?",
	}, ent.auth()), 201)
	c.must(c.do(pod, "POST", "/api/v2/agents/brand/sources", map[string]any{
		"type": "text", "name": widgetCitation, "content": "Standard shipping takes 3 to 5 business days and costs 4 euros.",
	}, ent.auth()), 201)
	// Agents of the Standard workspace for the framing checks: the widget
	// (on 127.0.0.1) framed by a host page the script serves on another
	// origin, http://localhost:<port>. "support" keeps the default (no
	// allowedOrigins: any site may frame it); "framed" lists the host page's
	// origin (set with PATCH); "locked" lists another origin only.
	frameOrigin := "http://localhost:" + strings.TrimPrefix(freeAddr(t), "127.0.0.1:")
	c.must(c.do(pod, "POST", "/api/v2/agents", map[string]any{"slug": "framed", "name": "Framed Help"}, std.auth()), 201)
	c.must(c.do(pod, "PATCH", "/api/v2/agents/framed", map[string]any{"allowedOrigins": []string{frameOrigin}}, std.auth()), 200)
	c.must(c.do(pod, "POST", "/api/v2/agents", map[string]any{
		"slug": "locked", "name": "Locked Help", "allowedOrigins": []string{widgetOtherOrigin},
	}, std.auth()), 201)
	c.waitSourcesReady(pod, std, "support")
	c.waitSourcesReady(pod, ent, "brand")
	interrupted := seedInterruptedAnswer(t, c, std, "Standard shipping takes 3 to")

	b.run(t, "widget.test.mjs", "WIDGET_SCREENSHOT_DIR", 8*time.Minute,
		"WIDGET_BASE="+pod.base,
		"WIDGET_SLUG=support",
		"WIDGET_API_KEY="+std.Key,
		"WIDGET_QUESTION="+widgetQuestion,
		"WIDGET_ANSWER_TEXT="+widgetAnswerText,
		"WIDGET_CITATION="+widgetCitation,
		"WIDGET_XSS_QUESTION="+widgetXSSQuestion,
		"WIDGET_INTERRUPTED_SESSION="+interrupted,
		"WIDGET_INTERRUPTED_TEXT=Standard shipping takes 3 to",
		"WIDGET_FRAME_ORIGIN="+frameOrigin,
		"WIDGET_FRAME_ALLOWED_SLUG=framed",
		"WIDGET_FRAME_REFUSED_SLUG=locked",
		"WIDGET_FRAME_OTHER_ORIGIN="+widgetOtherOrigin,
		"WIDGET_WL_SLUG=brand",
		"WIDGET_WL_API_KEY="+ent.Key,
		"WIDGET_WL_SECRET="+ent.WebhookSecret,
	)
}

// seedInterruptedAnswer gives the support agent a session whose answer was
// interrupted after said, as the worker's sweep leaves one whose server
// died mid-answer (TestInterruptedAnswerEnds runs that for real), and
// returns the session.
func seedInterruptedAnswer(t *testing.T, c *cluster, tn tenant, said string) string {
	t.Helper()
	session := c.startSession(c.pods[0], tn)
	ctx := context.Background()
	db, err := postgres.Open(ctx, c.env["CONCIERGE_DATABASE_URL"], postgres.Options{MaxOpenConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	store := postgres.NewStore(db.Gorm, db.Pool)
	question := domain.Message{ID: domain.NewID(domain.PrefixMessage), WorkspaceID: tn.ID, ConversationID: session, Role: domain.RoleUser,
		Content: "How long does standard shipping take?", ReplyID: domain.NewID(domain.PrefixMessage), CreatedAt: time.Now().Add(-time.Minute)}
	if _, _, err := store.AppendMessage(ctx, question, domain.StatusAI); err != nil {
		t.Fatal(err)
	}
	reply := domain.Message{ID: question.ReplyID, WorkspaceID: tn.ID, ConversationID: session, Role: domain.RoleAssistant,
		Content: said, TokenEnds: []int{len(said)}, FallbackReason: domain.FallbackInterrupted, CreatedAt: time.Now()}
	answer := domain.AnswerInProgress{ReplyID: reply.ID, WorkspaceID: tn.ID, ConversationID: session, QuestionID: question.ID, StartedAt: question.CreatedAt}
	if closed, err := store.CloseAnswer(ctx, answer, reply); err != nil || !closed {
		t.Fatalf("closing the seeded answer: %v, %v", closed, err)
	}
	return session
}
