package webhook_test

import (
	"context"
	"testing"

	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/adapters/httpapi/httpapitest"
	"github.com/conciergehq/concierge/adapters/httpapi/webhook"
	"github.com/conciergehq/concierge/adapters/httpapi/wire"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/core/inbound"
)

// Scripted fakes of the webhook's use cases and limits: each records its
// arguments and returns what the test scripted under "Interface.Method".

type fakeSenders struct{ *httpapitest.Script }

var _ webhook.Senders = fakeSenders{}

func (f fakeSenders) AuthenticateWebhook(_ context.Context, secret string) (domain.Workspace, error) {
	r := f.Call("Senders.AuthenticateWebhook", secret)
	return httpapitest.Value[domain.Workspace](r, 0), r.Err
}

type fakeInbox struct{ *httpapitest.Script }

var _ webhook.Inbox = fakeInbox{}

func (f fakeInbox) Receive(_ context.Context, ws *domain.Workspace, req inbound.Request) (domain.InboundEvent, error) {
	r := f.Call("Inbox.Receive", ws.ID, req)
	return httpapitest.Value[domain.InboundEvent](r, 0), r.Err
}

// newApp serves the webhook route on fakes scripted by s. Its limits are
// scripted too, under "Limits.Workspace" and "Limits.FailedAuth"; unscripted,
// they let the call through.
func newApp(t testing.TB, s *httpapitest.Script) *httpapitest.App {
	t.Helper()
	app := httpapitest.New(t, nil)
	limit := func(method string, args ...any) error { return s.CallOr(httpapitest.Result{}, method, args...).Err }
	hooks := webhook.NewHandlers(fakeSenders{s}, fakeInbox{s}, wire.NewDecoder(), webhook.Limits{
		Workspace:  func(_ *fiber.Ctx, workspaceID string) error { return limit("Limits.Workspace", workspaceID) },
		FailedAuth: func(*fiber.Ctx) error { return limit("Limits.FailedAuth") },
	})
	app.Post("/api/webhooks/inbound", hooks.Receive)
	return app
}

const sessionID = "ses_00000000000000000000000001"

func aWorkspace() domain.Workspace {
	return domain.Workspace{ID: "ws_test", Plan: domain.PlanEnterprise}
}

func TestReceive(t *testing.T) {
	const path = "/api/webhooks/inbound"
	secret := map[string]string{"x-webhook-secret": "whsec_abc", "Idempotency-Key": "k1"}
	body := `{"event":"chat.message","sessionId":"` + sessionID + `","message":"Hello"}`
	post := httpapitest.Request{Method: "POST", Path: path, Body: body, Header: secret}
	authenticated := map[string]httpapitest.Result{"Senders.AuthenticateWebhook": {Values: []any{aWorkspace()}}}
	with := func(extra map[string]httpapitest.Result) map[string]httpapitest.Result {
		out := map[string]httpapitest.Result{}
		for k, v := range authenticated {
			out[k] = v
		}
		for k, v := range extra {
			out[k] = v
		}
		return out
	}
	received := with(map[string]httpapitest.Result{"Inbox.Receive": {Values: []any{domain.InboundEvent{ID: "evt_00000000000000000000000001"}}}})
	var hashes []string
	invalid := func(fields map[string]any) httpapitest.Want {
		return httpapitest.Want{Status: 400, Code: domain.CodeValidation, Fields: fields}
	}
	cases := []httpapitest.Case{{
		Name:   "receives",
		Req:    post,
		Script: received,
		Want:   httpapitest.Want{Status: 200, Fields: map[string]any{"received": true, "workspaceId": "ws_test", "eventId": "evt_00000000000000000000000001"}},
		Calls: func(t *testing.T, s *httpapitest.Script) {
			if args := httpapitest.OnlyCall(t, s, "Senders.AuthenticateWebhook"); args[0] != "whsec_abc" {
				t.Fatalf("AuthenticateWebhook(%v)", args)
			}
			if args := httpapitest.OnlyCall(t, s, "Limits.Workspace"); args[0] != "ws_test" {
				t.Fatalf("counted against %v", args)
			}
			args := httpapitest.OnlyCall(t, s, "Inbox.Receive")
			req := args[1].(inbound.Request)
			if args[0] != "ws_test" || req.Event != "chat.message" || req.SessionID != sessionID || req.Message != "Hello" || req.IdempotencyKey != "k1" || req.BodyHash == "" {
				t.Fatalf("Receive(%v)", args)
			}
			hashes = append(hashes, req.BodyHash)
		},
	}, {
		// The same fields serialised otherwise are the same body for the
		// idempotency check (the hash is of the decoded fields).
		Name:   "the same event serialised otherwise",
		Req:    httpapitest.Request{Method: "POST", Path: path, Body: "{ \"message\": \"Hello\",\n \"sessionId\": \"" + sessionID + "\", \"event\": \"chat.message\" }", Header: secret},
		Script: received,
		Want:   httpapitest.Want{Status: 200, Fields: map[string]any{"received": true}},
		Calls: func(t *testing.T, s *httpapitest.Script) {
			hashes = append(hashes, httpapitest.OnlyCall(t, s, "Inbox.Receive")[1].(inbound.Request).BodyHash)
			if len(hashes) != 2 || hashes[0] != hashes[1] {
				t.Fatalf("body hashes %q differ", hashes)
			}
		},
	}, {
		Name:   "without an Idempotency-Key",
		Req:    httpapitest.Request{Method: "POST", Path: path, Body: `{"event":"crm.note"}`, Header: map[string]string{"x-webhook-secret": "whsec_abc"}},
		Script: received,
		Want:   httpapitest.Want{Status: 200, Fields: map[string]any{"received": true}},
		Calls: func(t *testing.T, s *httpapitest.Script) {
			if req := httpapitest.OnlyCall(t, s, "Inbox.Receive")[1].(inbound.Request); req.IdempotencyKey != "" || req.Event != "crm.note" {
				t.Fatalf("Receive(%+v)", req)
			}
		},
	}, {
		Name:   "a refused secret counts against the client",
		Req:    post,
		Script: map[string]httpapitest.Result{"Senders.AuthenticateWebhook": {Err: domain.Unauthorized("invalid x-webhook-secret")}},
		Want:   httpapitest.Want{Status: 401, Code: domain.CodeUnauthorized, Fields: map[string]any{"error.message": "invalid x-webhook-secret"}},
		Calls: func(t *testing.T, s *httpapitest.Script) {
			httpapitest.OnlyCall(t, s, "Limits.FailedAuth")
		},
	}, {
		Name: "too many refused secrets",
		Req:  post,
		Script: map[string]httpapitest.Result{"Senders.AuthenticateWebhook": {Err: domain.Unauthorized("invalid x-webhook-secret")},
			"Limits.FailedAuth": {Err: &domain.RateLimitError{RetryAfterSeconds: 30}}},
		Want: httpapitest.Want{Status: 429, Code: domain.CodeRateLimited, Header: map[string]string{"Retry-After": "30"}},
	}, {
		Name:   "a plan without API access",
		Req:    post,
		Script: map[string]httpapitest.Result{"Senders.AuthenticateWebhook": {Err: httpapitest.ErrPlan}},
		Want:   httpapitest.Want{Status: 403, Code: domain.CodePlanUpgrade, Fields: map[string]any{"error.details.feature": "handoff"}},
		Calls: func(t *testing.T, s *httpapitest.Script) {
			if n := len(s.Calls("Limits.FailedAuth")); n != 0 {
				t.Fatalf("a known secret counted as refused %d times", n)
			}
		},
	}, {
		Name:   "over the workspace's limit",
		Req:    post,
		Script: with(map[string]httpapitest.Result{"Limits.Workspace": {Err: &domain.RateLimitError{RetryAfterSeconds: 12}}}),
		Want:   httpapitest.Want{Status: 429, Code: domain.CodeRateLimited, Fields: map[string]any{"error.message": "rate limit exceeded; retry in 12 seconds"}},
	}, {
		Name:   "event missing",
		Req:    httpapitest.Request{Method: "POST", Path: path, Body: `{"message":"x"}`, Header: secret},
		Script: authenticated,
		Want:   invalid(map[string]any{"error.details.event": "is required"}),
	}, {
		Name:   "event of the wrong type",
		Req:    httpapitest.Request{Method: "POST", Path: path, Body: `{"event":1}`, Header: secret},
		Script: authenticated,
		Want:   invalid(map[string]any{"error.details.event": "must be a string"}),
	}, {
		Name:   "sessionId too long",
		Req:    httpapitest.Request{Method: "POST", Path: path, Body: `{"event":"x","sessionId":"ses_0000000000000000000000000000000000000000000000000000000000000000"}`, Header: secret},
		Script: authenticated,
		Want:   invalid(map[string]any{"error.details.sessionId": "must be at most 64 characters"}),
	}, {
		Name:   "an Idempotency-Key with a NUL",
		Req:    httpapitest.Request{Method: "POST", Path: path, Body: body, Header: map[string]string{"x-webhook-secret": "whsec_abc", "Idempotency-Key": "a\x00b"}},
		Script: authenticated,
		Want:   invalid(nil),
	}, {
		Name:   "no body",
		Req:    httpapitest.Request{Method: "POST", Path: path, Header: secret},
		Script: authenticated,
		Want:   invalid(map[string]any{"error.message": "request body is required"}),
	}}
	// Bodies are read only once the sender is known.
	for _, tc := range httpapitest.BadBodies("POST", path) {
		tc.Req.Header = secret
		tc.Script = authenticated
		cases = append(cases, tc)
	}
	for _, tc := range httpapitest.ErrorCases(post, "Inbox.Receive", 400, 404, 409, 500, 503) {
		tc.Script = with(tc.Script)
		cases = append(cases, tc)
	}
	httpapitest.Run(t, "POST /api/webhooks/inbound", newApp, cases)
}
