// Package httpapi is the HTTP edge of Concierge: the fiber app, every route,
// the middleware, and the one ErrorHandler. New, below, lists every route
// with its method, path, middleware and handler; the handlers live in v1,
// v2, webhook and widget.
package httpapi

import (
	"context"
	"log/slog"
	"net"
	"time"

	gojson "github.com/goccy/go-json"
	"github.com/gofiber/fiber/v2"
	"go.opentelemetry.io/otel/trace"

	"github.com/conciergehq/concierge/adapters/httpapi/bodylimit"
	"github.com/conciergehq/concierge/adapters/httpapi/console"
	"github.com/conciergehq/concierge/adapters/httpapi/sse"
	"github.com/conciergehq/concierge/adapters/httpapi/v1"
	"github.com/conciergehq/concierge/adapters/httpapi/v2"
	"github.com/conciergehq/concierge/adapters/httpapi/webhook"
	"github.com/conciergehq/concierge/adapters/httpapi/widget"
	"github.com/conciergehq/concierge/adapters/httpapi/wire"
	"github.com/conciergehq/concierge/core/agent"
	"github.com/conciergehq/concierge/core/assignment"
	"github.com/conciergehq/concierge/core/availability"
	"github.com/conciergehq/concierge/core/chat"
	"github.com/conciergehq/concierge/core/conversation"
	"github.com/conciergehq/concierge/core/delivery"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/core/feedback"
	"github.com/conciergehq/concierge/core/handoff"
	"github.com/conciergehq/concierge/core/relay"
	"github.com/conciergehq/concierge/core/savedreply"
	"github.com/conciergehq/concierge/core/unanswered"
	corewidget "github.com/conciergehq/concierge/core/widget"
	"github.com/conciergehq/concierge/core/workspace"
	"github.com/conciergehq/concierge/ports"
)

// Services are the use cases the HTTP edge calls.
type Services struct {
	Workspaces    *workspace.Service
	Agents        *agent.Service
	Conversations *conversation.Service
	// Inbound receives webhook events (inbound.Service, or the app's
	// counting wrapper of it).
	Inbound     webhook.Inbox
	Chat        *chat.Service
	Handoff     *handoff.Service
	Assignments *assignment.Service
	Deliveries  *delivery.Service
	// Relay serves the live streams of conversations.
	Relay *relay.Service
	// Widgets resolves widget addresses and opens widget sessions.
	Widgets  *corewidget.Service
	Feedback *feedback.Service
	// SavedReplies keeps the workspace's saved replies.
	SavedReplies *savedreply.Service
	// Availability says whether a person is there to answer a handoff.
	Availability *availability.Service
	// Reports answers /api/v2/analytics (a *report.Service); nil answers
	// those routes 503 with the error body.
	Reports v2.Reports
	// Unanswered groups the questions agents failed on into topics the
	// team answers with Q&A sources.
	Unanswered *unanswered.Service
	// Console serves /console; nil leaves the console out.
	Console *console.Handlers
}

// Deps are the outside-world pieces the HTTP edge needs directly.
type Deps struct {
	RateLimiter ports.RateLimiter
	Clock       ports.Clock
	// Health names the dependencies /readyz checks.
	Health map[string]ports.HealthChecker
	// OpenAPI is the JSON document served at /api/v2/openapi.json.
	OpenAPI []byte
	Log     *slog.Logger
	// Requests hears every answered request (metrics); nil hears nothing
	// and costs nothing.
	Requests RequestObserver
	// Traces starts a span for every request (adapters/tracing), continuing
	// a caller's W3C traceparent; nil traces nothing and costs nothing.
	Traces trace.TracerProvider
}

// Options are the HTTP settings from configuration.
type Options struct {
	// BodyLimitBytes bounds a JSON body; uploads and routes that take no
	// body have limits of their own.
	BodyLimitBytes int
	// LargeBodySlots bounds the bodies over BodyLimitBytes (uploads) read
	// at once; another waits up to LargeBodyWait, then is refused with 503.
	LargeBodySlots           int
	LargeBodyWait            time.Duration
	RateLimitAPIPerMinute    int
	RateLimitHookPerMinute   int
	RateLimitPublicPerMinute int
	// RateLimitWidgetSessionsPerMinute bounds the widget sessions one
	// client IP opens.
	RateLimitWidgetSessionsPerMinute int
	// PublicURL is the service's public base URL, without a trailing slash.
	PublicURL string
	// TrustedProxies are the addresses whose X-Forwarded-For is believed when
	// finding the client IP; empty means the peer address is the client.
	TrustedProxies []string
	ReadTimeout    time.Duration
	IdleTimeout    time.Duration
}

// New builds the fiber app with every route. base is the context use cases run
// under (cancelled at shutdown). Its error means the embedded widget front
// end does not load.
func New(base context.Context, s Services, d Deps, o Options) (*fiber.App, error) {
	bodyLimits := bodylimit.Limits{
		Other: min(otherLimitBytes, o.BodyLimitBytes), JSON: o.BodyLimitBytes, Upload: uploadLimitBytes,
		LargeSlots: o.LargeBodySlots, LargeWait: o.LargeBodyWait,
	}
	cfg := bodylimit.Configure(fiber.Config{
		AppName:               "concierge",
		ErrorHandler:          ErrorHandler(d.Log),
		DisableStartupMessage: true,
		// Response encoding only: goccy/go-json produces the same output as
		// encoding/json at a fraction of the CPU on list pages. Requests are
		// still decoded strictly with encoding/json (wire.Decoder).
		JSONEncoder: gojson.Marshal,
		// fasthttp's 4 KiB default refuses a request whose headers exceed it
		// before our code runs; identity headers alone may be 4 KiB.
		ReadBufferSize: 16 << 10,
		// No ReduceMemoryUsage: body streaming cannot have it (see
		// bodylimit.Configure), so a live stream holds its connection's
		// read buffer (measured: 58 KiB per idle stream with it held, 40
		// KiB without).
		ReadTimeout: o.ReadTimeout,
		// No WriteTimeout: it would cap the life of SSE streams.
		IdleTimeout: o.IdleTimeout,
	}, bodyLimits)
	if len(o.TrustedProxies) > 0 {
		cfg.EnableTrustedProxyCheck = true
		cfg.TrustedProxies = o.TrustedProxies
		cfg.ProxyHeader = fiber.HeaderXForwardedFor
	}
	app := fiber.New(cfg)

	lim := limits{APIPerMinute: o.RateLimitAPIPerMinute, WebhookPerMinute: o.RateLimitHookPerMinute, PublicPerMinute: o.RateLimitPublicPerMinute,
		WidgetSessionsPerMinute: o.RateLimitWidgetSessionsPerMinute}
	rl := rateLimiter{limiter: d.RateLimiter}
	decoder := wire.NewDecoder()
	widgets, err := widget.NewHandlers(s.Widgets, s.Availability, decoder)
	if err != nil {
		return nil, err
	}
	turns := chatTurns{s.Chat}
	// One follower for both APIs' live streams: one cache of rendered frames.
	follower := sse.NewFollower(relayStreams{s.Relay})
	var (
		agents        = v2.NewAgentHandlers(s.Agents, s.Agents, decoder, o.PublicURL)
		conversations = v2.NewConversationHandlers(s.Conversations)
		chats         = v2.NewChatHandlers(turns, s.Chat, decoder)
		handoffs      = v2.NewHandoffHandlers(s.Handoff, decoder)
		assignments   = v2.NewAssignmentHandlers(s.Assignments, decoder)
		integrations  = v2.NewIntegrationHandlers(s.Deliveries, decoder)
		deliveries    = v2.NewDeliveryHandlers(s.Deliveries)
		events        = v2.NewEventHandlers(follower)
		wsEvents      = v2.NewWorkspaceEventHandlers(relayStreams{s.Relay})
		ratings       = v2.NewFeedbackHandlers(s.Feedback)
		replies       = v2.NewSavedReplyHandlers(s.SavedReplies, decoder)
		suggestions   = v2.NewSuggestionHandlers(s.Chat, decoder)
		reports       = v2.NewReportHandlers(s.Reports, s.Agents)
		topics        = v2.NewUnansweredHandlers(s.Unanswered, decoder)

		sessions        = v1.NewHandlers(s.Conversations, turns, s.Handoff, decoder, d.Clock)
		sessionEvents   = v1.NewEventHandlers(follower)
		sessionFeedback = v1.NewFeedbackHandlers(s.Feedback, decoder)

		hooks = webhook.NewHandlers(s.Workspaces, s.Inbound, decoder, webhook.Limits{
			Workspace: func(c *fiber.Ctx, workspaceID string) error {
				return rl.take(c, "hook:"+workspaceID, lim.WebhookPerMinute)
			},
			FailedAuth: func(c *fiber.Ctx) error { return rl.failedAuth(c, lim) },
		})
	)

	// Every request: request id, metrics, the request's span (before the
	// access log, so its line carries the trace), access log, panic recovery, then the body
	// limit of its class (bodyClass, which must agree with the routes).
	// The observer, when there is one, reads the status the access log's
	// call of the ErrorHandler has written.
	app.Use(withRequestID(base))
	if d.Requests != nil {
		app.Use(observeRequests(d.Requests))
	}
	if d.Traces != nil {
		app.Use(traceRequests(d.Traces))
	}
	app.Use(accessLog(d.Log), recoverPanics(d.Log), bodylimit.NewGuard(bodyLimits, bodyClass).Handler)

	app.Get("/healthz", healthz)
	app.Get("/readyz", readyz(d.Health))
	// The widget's page and assets: HTML and files, outside /api (no JSON
	// body handling there); /chat/... is the page, /api/chat/... the API.
	app.Get(widget.AssetsPrefix+"*", widgets.Asset)
	app.Get("/chat/:slug", widgets.Page)

	api := app.Group("/api")
	api.Get("/v2/openapi.json", func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSONCharsetUTF8)
		c.Set(fiber.HeaderCacheControl, "public, max-age=300")
		return c.Send(d.OpenAPI)
	})

	// /api/v2 and /api/v1: an API key (counted per key), whose principal
	// scopes every call to its workspace. No two of these paths match the
	// same request, so their order does not matter; they are by resource.
	keyed := requireAPIKey(s.Workspaces, rl, lim)
	v2api := api.Group("/v2", keyed)
	v2api.Get("/agents", agents.List)
	v2api.Post("/agents", agents.Create)
	v2api.Get("/agents/:slug", agents.Get)
	v2api.Patch("/agents/:slug", agents.Update)
	v2api.Delete("/agents/:slug", agents.Delete)
	v2api.Post("/agents/:slug/sources", agents.CreateSource) // JSON, or a multipart upload (bodyClass)
	v2api.Get("/agents/:slug/sources", agents.ListSources)
	v2api.Get("/agents/:slug/sources/:id", agents.GetSource)
	v2api.Post("/agents/:slug/sources/:id/reindex", agents.ReindexSource)
	v2api.Delete("/agents/:slug/sources/:id", agents.DeleteSource)
	v2api.Post("/agents/:slug/retrieve", chats.Retrieve)
	v2api.Get("/agents/:slug/unanswered-topics", topics.List)
	v2api.Get("/agents/:slug/unanswered-topics/:id", topics.Get)
	v2api.Post("/agents/:slug/unanswered-topics/:id/answer", topics.Answer)
	v2api.Post("/chat", chats.Chat) // JSON, or SSE with "stream": true
	v2api.Get("/conversations", conversations.List)
	v2api.Get("/conversations/:id", conversations.Get)
	v2api.Get("/conversations/:id/events", events.Follow) // SSE
	v2api.Get("/events", wsEvents.Follow)                 // SSE: the workspace's events
	v2api.Post("/conversations/:id/messages", handoffs.PostMessage)
	v2api.Post("/conversations/:id/status", handoffs.SetStatus)
	v2api.Put("/conversations/:id/assignee", assignments.SetAssignee)
	v2api.Post("/conversations/:id/suggested-reply", suggestions.Suggest)
	v2api.Get("/conversations/:id/messages/:messageId/trace", conversations.MessageTrace)
	v2api.Get("/feedback", ratings.List)
	v2api.Get("/integrations", integrations.Get)
	v2api.Patch("/integrations", integrations.Update)
	v2api.Post("/integrations/signing-secret", integrations.RotateSigningSecret)
	v2api.Get("/deliveries", deliveries.List)
	v2api.Get("/deliveries/:id", deliveries.Get)
	v2api.Post("/deliveries/:id/retry", deliveries.Retry)
	v2api.Get("/saved-replies", replies.List)
	v2api.Post("/saved-replies", replies.Create)
	v2api.Get("/saved-replies/:id", replies.Get)
	v2api.Patch("/saved-replies/:id", replies.Update)
	v2api.Delete("/saved-replies/:id", replies.Delete)
	v2api.Get("/analytics/report", reports.Report)
	v2api.Get("/analytics/report.csv", reports.CSV)

	v1api := api.Group("/v1", keyed)
	v1api.Post("/sessions", sessions.CreateSession)

	// /api/chat: the session id is the capability here; no key, so count
	// per client IP. One group, so its limiter counts each request once.
	session := api.Group("/chat", limitPerIP(rl, "ip", lim.PublicPerMinute))
	session.Post("/:sessionId/message", sessions.Message) // JSON, or SSE with "stream": true
	session.Post("/:sessionId/handoff", sessions.RequestHandoff)
	session.Get("/:sessionId/poll", sessions.Poll)
	session.Get("/:sessionId/availability", widgets.Availability)
	session.Get("/:sessionId/events", sessionEvents.Follow) // SSE
	session.Post("/:sessionId/messages/:messageId/feedback", sessionFeedback.Rate)

	// /api/widget: the widget opens its sessions here: no key, no plan, its
	// own per-IP limit (a session is a conversation row; messages are
	// limited above).
	widgetAPI := api.Group("/widget")
	widgetAPI.Post("/:slug/sessions", limitPerIP(rl, "widget", lim.WidgetSessionsPerMinute), widgets.CreateSession)

	// /api/webhooks: the sender's secret authenticates; the handler counts
	// refused secrets per client IP and accepted calls per workspace
	// (hooks' Limits).
	webhooks := api.Group("/webhooks")
	webhooks.Post("/inbound", hooks.Receive)

	if s.Console != nil {
		ConsoleRoutes(app, s.Console)
	}
	return app, nil
}

// ConsoleRoutes lists every route of the console at /console. Every one
// passes console.Secure first (security headers, HTML error pages, the
// cross-origin check); the signed-in ones then Session (cookie, CSRF
// token); the workspace ones Workspace (membership of the workspace in the
// URL, 404 otherwise) and the permission their page needs. Exported so
// the console's tests run this exact table.
func ConsoleRoutes(app fiber.Router, h *console.Handlers) {
	con := app.Group(console.Prefix, h.Secure)
	con.Get("/assets/*", h.Asset)

	// Public pages: no session; cross-origin POSTs are refused by Secure.
	con.Get("/sign-in", h.SignInPage)
	con.Post("/sign-in", h.SignIn)
	con.Get("/password-reset", h.ResetRequestPage)
	con.Post("/password-reset", h.ResetRequest)
	con.Get("/password-reset/:token", h.ResetPage)
	con.Post("/password-reset/:token", h.Reset)
	con.Get("/invitations/:token", h.InvitationPage)
	con.Post("/invitations/:token", h.AcceptInvitation)

	// Signed in, any workspace.
	con.Get("/", h.Session, h.Home)
	con.Post("/sign-out", h.Session, h.SignOut)
	con.Get("/inbox", h.Session, h.InboxHome)
	con.Get("/account", h.Session, h.AccountPage)
	con.Post("/account/password", h.Session, h.ChangePassword)
	con.Post("/account/sign-out-others", h.Session, h.SignOutOthers)
	// The deployment's queue monitor (read-only, payloads redacted): owners
	// of the operator's workspace only, everyone else gets not-found.
	queues := h.Queues()
	con.All("/queues", h.Session, queues)
	con.All("/queues/*", h.Session, queues)

	// A workspace the user is a member of, with the role's permissions.
	ws := con.Group("/w/:workspaceID", h.Session, h.Workspace)
	agents := console.Require(domain.PermAgents)
	members := console.Require(domain.PermMembers)
	ws.Get("/", h.Overview)
	// Any member sets their own availability (the toggle in the header of
	// every workspace page).
	ws.Post("/availability", h.SetAvailability)
	ws.Get("/agents", agents, h.AgentsPage)
	ws.Get("/agents/new", agents, h.NewAgentPage)
	ws.Post("/agents", agents, h.CreateAgent)
	ws.Get("/agents/:slug", agents, h.AgentPage)
	ws.Post("/agents/:slug", agents, h.UpdateAgent)
	ws.Post("/agents/:slug/publish", agents, h.PublishAgent)
	ws.Post("/agents/:slug/unpublish", agents, h.UnpublishAgent)
	ws.Get("/agents/:slug/delete", agents, h.DeleteAgentPage)
	ws.Post("/agents/:slug/delete", agents, h.DeleteAgent)
	// Knowledge
	ws.Get("/knowledge", agents, h.KnowledgeLanding)
	ws.Get("/agents/:slug/knowledge", agents, h.AgentKnowledgePage)
	ws.Get("/agents/:slug/knowledge/list", agents, h.SourcesFragment) // polled by htmx
	ws.Post("/agents/:slug/knowledge/sources", agents, h.AddSource)
	ws.Post("/agents/:slug/knowledge/files", agents, h.UploadFiles) // a streamed multipart upload (bodyClass)
	ws.Post("/agents/:slug/knowledge/:sourceID/reindex", agents, h.ReindexSource)
	ws.Get("/agents/:slug/knowledge/:sourceID/delete", agents, h.DeleteSourcePage)
	ws.Post("/agents/:slug/knowledge/:sourceID/delete", agents, h.DeleteSource)
	ws.Get("/members", members, h.MembersPage)
	ws.Post("/members/invitations", members, h.Invite)
	ws.Get("/members/:userID/role", members, h.RolePage)
	ws.Post("/members/:userID/role", members, h.ChangeRole)
	ws.Get("/members/:userID/remove", members, h.RemovePage)
	ws.Post("/members/:userID/remove", members, h.RemoveMember)
	ws.Get("/invitations/:invitationID/revoke", members, h.RevokePage)
	ws.Post("/invitations/:invitationID/revoke", members, h.RevokeInvitation)

	// Settings: owners and admins; the webhook secret owners only, and it
	// is shown only after the password is entered again.
	settings := console.Require(domain.PermSettings)
	secrets := console.Require(domain.PermSecrets)
	ws.Get("/settings", settings, h.SettingsPage)
	ws.Get("/settings/api-keys", settings, h.APIKeysPage)
	ws.Post("/settings/api-keys", settings, h.CreateAPIKey)
	ws.Get("/settings/api-keys/:keyID/revoke", settings, h.RevokeKeyPage)
	ws.Post("/settings/api-keys/:keyID/revoke", settings, h.RevokeAPIKey)
	ws.Get("/settings/webhook-secret", secrets, h.WebhookSecretPage)
	ws.Post("/settings/webhook-secret/reveal", secrets, h.RevealWebhookSecret)
	ws.Get("/settings/webhook-secret/rotate", secrets, h.RotateSecretPage)
	ws.Post("/settings/webhook-secret/rotate", secrets, h.RotateWebhookSecret)
	ws.Get("/settings/integrations", settings, h.IntegrationsPage)
	ws.Post("/settings/integrations", settings, h.SaveIntegrations)
	ws.Post("/settings/integrations/auto-assign", settings, h.SaveAutoAssign)
	ws.Get("/settings/integrations/signing-secret", settings, h.RotateSigningPage)
	ws.Post("/settings/integrations/signing-secret", settings, h.RotateSigningSecret)
	ws.Get("/settings/deliveries", settings, h.DeliveriesPage)
	ws.Get("/settings/deliveries/:deliveryID", settings, h.DeliveryPage)
	ws.Post("/settings/deliveries/:deliveryID/retry", settings, h.RetryDelivery)
	ws.Get("/settings/plan", settings, h.PlanPage)
	// Saved replies: every member who answers conversations reads the
	// list (agents insert the replies with "/"); owners and admins
	// (domain.PermSavedReplies, which savedreply.Service enforces too)
	// create, edit and delete them.
	replies := console.Require(domain.PermSavedReplies)
	ws.Get("/settings/saved-replies", console.Require(domain.PermConversations), h.SavedRepliesPage)
	ws.Post("/settings/saved-replies", replies, h.CreateSavedReply)
	ws.Get("/settings/saved-replies/:replyID", replies, h.SavedReplyPage)
	ws.Post("/settings/saved-replies/:replyID", replies, h.UpdateSavedReply)
	ws.Get("/settings/saved-replies/:replyID/delete", replies, h.DeleteSavedReplyPage)
	ws.Post("/settings/saved-replies/:replyID/delete", replies, h.DeleteSavedReply)

	// Conversations: owners, admins and helpers read conversations and use
	// the playground (the answer engine, on every plan).
	convs := console.Require(domain.PermConversations)
	ws.Get("/conversations", convs, h.ConversationsPage)
	ws.Get("/conversations/:conversationID", convs, h.ConversationPage)
	ws.Get("/playground", convs, h.PlaygroundPage)
	ws.Post("/playground", convs, h.PlaygroundAsk)
	ws.Post("/playground/stream", convs, h.PlaygroundStream)
	// Reports: the figures of the conversations, each linking to them.
	ws.Get("/reports", convs, h.ReportsPage)
	ws.Get("/reports.csv", convs, h.ReportCSV)
	// Unanswered questions: every role that reads conversations sees the
	// topics; owners and admins (who manage knowledge) write answers.
	ws.Get("/unanswered", convs, h.UnansweredLanding)
	ws.Get("/agents/:slug/unanswered", convs, h.UnansweredPage)
	ws.Get("/agents/:slug/unanswered/:topicID", convs, h.TopicPage)
	ws.Post("/agents/:slug/unanswered/:topicID/answer", agents, h.AnswerTopic)
	ws.Get("/agents/:slug/improve", agents, h.ImprovePage)
	ws.Post("/agents/:slug/improve", agents, h.ImproveAnswer)
	// Inbox: every role that answers conversations. The workspace event
	// stream's route is listed before the thread's, which would take
	// "events" for a conversation id.
	ws.Get("/inbox", convs, h.InboxPage)
	ws.Get("/inbox/events", convs, h.InboxEvents) // SSE: the workspace's events
	ws.Get("/inbox/:conversationID", convs, h.ThreadPage)
	ws.Post("/inbox/:conversationID/messages", convs, h.PostThreadMessage)
	ws.Post("/inbox/:conversationID/take-over", convs, h.TakeOver)
	ws.Post("/inbox/:conversationID/assignee", convs, h.SetAssignee)
	ws.Post("/inbox/:conversationID/status", convs, h.SetThreadStatus)
	// The thread's "Suggest a reply" (inbox.js fetch; JSON, never stored).
	ws.Post("/inbox/:conversationID/suggestion", console.JSONErrors, convs, h.Suggestion)

	// Anything else under /console is the console's not-found page.
	con.Use(func(*fiber.Ctx) error { return domain.NotFound("page") })
}

// Listener wraps ln for serving the app New builds: a connection whose
// request body was refused unread then closes without a reset, so its
// client reads the answer.
func Listener(ln net.Listener) net.Listener { return bodylimit.Listener(ln) }
