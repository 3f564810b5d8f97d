package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/domain"
)

// End-to-end tests of integration settings and the delivery log
// (docs/api.md, "Helpdesk delivery and outbound events"), through the real
// HTTP server, PostgreSQL and Redis of an in-process stack.

type integrationsBody struct {
	Helpdesk         string  `json:"helpdesk"`
	HelpdeskURL      *string `json:"helpdeskUrl"`
	EventsURL        *string `json:"eventsUrl"`
	SigningSecretSet bool    `json:"signingSecretSet"`
	SigningSecret    *string `json:"signingSecret"`
}

type deliveryBody struct {
	ID             string  `json:"id"`
	Target         string  `json:"target"`
	Type           string  `json:"type"`
	ConversationID string  `json:"conversationId"`
	Status         string  `json:"status"`
	Attempts       int     `json:"attempts"`
	NextAttemptAt  *string `json:"nextAttemptAt"`
	LastError      *string `json:"lastError"`
	DeliveredAt    *string `json:"deliveredAt"`
	Log            []struct {
		Attempt    int     `json:"attempt"`
		StatusCode *int    `json:"statusCode"`
		Error      *string `json:"error"`
	} `json:"log"`
}

func (s *stack) integrations(tn tenant, method string, body any) (response, integrationsBody) {
	s.t.Helper()
	r := s.do(method, "/api/v2/integrations", body, tn.auth())
	var out integrationsBody
	if r.Status == 200 {
		r.decode(s.t, &out)
	}
	return r, out
}

func TestIntegrationSettings(t *testing.T) {
	s := newStack(t, stackOptions{})
	tn, other := s.newTenant(domain.PlanStandard), s.newTenant(domain.PlanEnterprise)

	r, got := s.integrations(tn, "GET", nil)
	s.mustStatus(r, 200)
	if got.Helpdesk != "inbox" || got.HelpdeskURL != nil || got.EventsURL != nil || got.SigningSecretSet || got.SigningSecret != nil {
		t.Fatalf("fresh workspace: %s", r.Body)
	}

	long := "https://desk.example.com/" + strings.Repeat("a", 2048)
	bad := []struct {
		name  string
		body  any
		field string
		want  string
	}{
		{"plain http", map[string]any{"helpdeskUrl": "http://desk.example.com/in"}, "helpdeskUrl", "must use https"},
		{"loopback", map[string]any{"helpdeskUrl": "https://127.0.0.1:8443/in"}, "helpdeskUrl", "loopback"},
		{"localhost", map[string]any{"eventsUrl": "https://localhost/in"}, "eventsUrl", "loopback"},
		{"private", map[string]any{"eventsUrl": "https://10.0.0.7/in"}, "eventsUrl", "private address"},
		{"cloud metadata", map[string]any{"helpdeskUrl": "https://169.254.169.254/latest/meta-data/"}, "helpdeskUrl", "cloud metadata"},
		{"loopback as one number", map[string]any{"eventsUrl": "https://2130706433/in"}, "eventsUrl", "non-standard form"},
		{"loopback in hex", map[string]any{"eventsUrl": "https://0x7f000001/in"}, "eventsUrl", "non-standard form"},
		{"loopback in two parts", map[string]any{"helpdeskUrl": "https://127.1/in"}, "helpdeskUrl", "non-standard form"},
		{"metadata name", map[string]any{"helpdeskUrl": "https://metadata.google.internal/"}, "helpdeskUrl", "cloud metadata service"},
		{"user info", map[string]any{"helpdeskUrl": "https://bot:pw@desk.example.com/"}, "helpdeskUrl", "user name or password"},
		{"not a URL", map[string]any{"helpdeskUrl": "desk.example.com/in"}, "helpdeskUrl", "absolute URL"},
		{"too long", map[string]any{"helpdeskUrl": long}, "helpdeskUrl", "2048"},
		{"wrong type", map[string]any{"helpdeskUrl": 42}, "", ""},
		{"unknown field", map[string]any{"signingSecret": "whsec_mine"}, "", "signingSecret"},
		{"no body", nil, "", "request body is required"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			r := s.do("PATCH", "/api/v2/integrations", tt.body, tn.auth())
			if r.Status != 400 || r.errorCode(t) != "VALIDATION_ERROR" || !strings.Contains(string(r.Body), tt.want) {
				t.Fatalf("status %d: %s; want 400 VALIDATION_ERROR mentioning %q", r.Status, r.Body, tt.want)
			}
			if tt.field != "" {
				var e struct {
					Error struct {
						Details map[string]string `json:"details"`
					} `json:"error"`
				}
				r.decode(t, &e)
				if e.Error.Details[tt.field] == "" {
					t.Errorf("details do not name %s: %s", tt.field, r.Body)
				}
			}
		})
	}
	if r := s.raw("PATCH", "/api/v2/integrations", "helpdeskUrl=x", header{"Authorization": "Bearer " + tn.Key, "Content-Type": "text/plain"}); r.Status != 415 {
		t.Errorf("text body: %d %s", r.Status, r.Body)
	}

	// The first URL creates the signing secret, shown in that response only.
	r, got = s.integrations(tn, "PATCH", map[string]any{"helpdeskUrl": "https://desk.example.com/hooks/concierge"})
	s.mustStatus(r, 200)
	if got.Helpdesk != "webhook" || got.HelpdeskURL == nil || *got.HelpdeskURL != "https://desk.example.com/hooks/concierge" ||
		!got.SigningSecretSet || got.SigningSecret == nil || !domain.ValidSigningSecret(*got.SigningSecret) {
		t.Fatalf("first URL: %s", r.Body)
	}
	if cc := r.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("a response with a secret has Cache-Control %q, want no-store", cc)
	}
	first := *got.SigningSecret
	r, got = s.integrations(tn, "PATCH", map[string]any{"eventsUrl": "https://events.example.com/in"})
	s.mustStatus(r, 200)
	if got.SigningSecret != nil || got.EventsURL == nil || got.HelpdeskURL == nil || strings.Contains(string(r.Body), first) {
		t.Fatalf("second change shows the secret or lost a URL: %s", r.Body)
	}
	r, got = s.integrations(tn, "GET", nil)
	if got.SigningSecret != nil || !got.SigningSecretSet || strings.Contains(string(r.Body), "whsec_") {
		t.Fatalf("GET shows the secret: %s", r.Body)
	}

	r = s.do("POST", "/api/v2/integrations/signing-secret", nil, tn.auth())
	s.mustStatus(r, 200)
	var rotated integrationsBody
	r.decode(t, &rotated)
	if rotated.SigningSecret == nil || *rotated.SigningSecret == first || !domain.ValidSigningSecret(*rotated.SigningSecret) {
		t.Fatalf("rotation: %s", r.Body)
	}
	ws, err := s.sys.store.GetWorkspace(t.Context(), tn.ID)
	if err != nil || ws.SigningSecret != *rotated.SigningSecret {
		t.Fatalf("stored secret is not the rotated one: %v", err)
	}

	// "" goes back to the inbox; other workspaces are untouched.
	r, got = s.integrations(tn, "PATCH", map[string]any{"helpdeskUrl": ""})
	s.mustStatus(r, 200)
	if got.Helpdesk != "inbox" || got.HelpdeskURL != nil || got.EventsURL == nil {
		t.Fatalf("clearing: %s", r.Body)
	}
	r, got = s.integrations(other, "GET", nil)
	if got.HelpdeskURL != nil || got.EventsURL != nil || got.SigningSecretSet {
		t.Fatalf("another workspace sees settings: %s", r.Body)
	}
	if r := s.do("GET", "/api/v2/integrations", nil, nil); r.Status != 401 {
		t.Errorf("no key: %d", r.Status)
	}
}

func TestDeliveryLog(t *testing.T) {
	s := newStack(t, stackOptions{})
	tn, other := s.newTenant(domain.PlanStandard), s.newTenant(domain.PlanStandard)
	s.createAgent(tn, "support")
	// An events URL that no delivery will reach: it is cleared before the
	// worker runs, so the events deliveries fail with a reason.
	r, _ := s.integrations(tn, "PATCH", map[string]any{"eventsUrl": "https://events.example.com/in"})
	s.mustStatus(r, 200)
	var sessions []string
	for i := range 3 {
		session := s.startSession(tn, "support")
		sessions = append(sessions, session)
		r := s.do("POST", "/api/chat/"+session+"/handoff", map[string]any{"name": fmt.Sprintf("Visitor %d", i)}, nil)
		if r.Status/100 != 2 {
			t.Fatalf("handoff: %d %s", r.Status, r.Body)
		}
	}

	list := func(tn tenant, query string) (response, listBody[deliveryBody]) {
		t.Helper()
		r := s.do("GET", "/api/v2/deliveries"+query, nil, tn.auth())
		var out listBody[deliveryBody]
		if r.Status == 200 {
			r.decode(t, &out)
		}
		return r, out
	}
	r, helpdesk := list(tn, "?target=helpdesk")
	s.mustStatus(r, 200)
	if len(helpdesk.Data) != 3 || helpdesk.Meta.HasMore {
		t.Fatalf("helpdesk deliveries: %s", r.Body)
	}
	for i, d := range helpdesk.Data {
		// Newest first: the last handoff's delivery leads.
		if d.ConversationID != sessions[2-i] || d.Type != "handoff.requested" || d.Status != "PENDING" || d.Attempts != 0 ||
			d.NextAttemptAt == nil || d.DeliveredAt != nil || d.LastError != nil || !domain.ValidID(domain.PrefixDelivery, d.ID) {
			t.Errorf("delivery %d = %+v", i, d)
		}
	}
	r, events := list(tn, "?target=events&type=handoff.requested&status=PENDING")
	s.mustStatus(r, 200)
	if len(events.Data) != 3 {
		t.Fatalf("events deliveries: %s", r.Body)
	}
	// Pages of two, with the filter kept in the cursor.
	r, page1 := list(tn, "?target=helpdesk&limit=2")
	if len(page1.Data) != 2 || !page1.Meta.HasMore || page1.Meta.NextCursor == nil {
		t.Fatalf("page 1: %s", r.Body)
	}
	r, page2 := list(tn, "?target=helpdesk&limit=2&cursor="+*page1.Meta.NextCursor)
	if len(page2.Data) != 1 || page2.Meta.HasMore || page2.Data[0].ID != helpdesk.Data[2].ID {
		t.Fatalf("page 2: %s", r.Body)
	}
	for _, q := range []string{
		"?status=pending", "?target=slack", "?type=conversation.deleted", "?limit=0", "?limit=101",
		"?cursor=nonsense", "?target=events&cursor=" + *page1.Meta.NextCursor,
	} {
		if r, _ := list(tn, q); r.Status != 400 || r.errorCode(t) != "VALIDATION_ERROR" {
			t.Errorf("GET /api/v2/deliveries%s: %d %s, want 400 VALIDATION_ERROR", q, r.Status, r.Body)
		}
	}

	// Another workspace sees none of it, and the same 404 as for unknown ids.
	mine := helpdesk.Data[0].ID
	if r, l := list(other, ""); r.Status != 200 || len(l.Data) != 0 {
		t.Errorf("other workspace lists %s", r.Body)
	}
	for _, tt := range []struct{ method, path string }{
		{"GET", "/api/v2/deliveries/" + mine}, {"POST", "/api/v2/deliveries/" + mine + "/retry"},
		{"GET", "/api/v2/deliveries/" + domain.NewID(domain.PrefixDelivery)}, {"GET", "/api/v2/deliveries/not-an-id"},
	} {
		if r := s.do(tt.method, tt.path, nil, other.auth()); r.Status != 404 || r.errorCode(t) != "NOT_FOUND" {
			t.Errorf("%s %s by another workspace: %d %s", tt.method, tt.path, r.Status, r.Body)
		}
	}
	if r := s.do("POST", "/api/v2/deliveries/"+mine+"/retry", nil, tn.auth()); r.Status != 409 || r.errorCode(t) != "CONFLICT" {
		t.Errorf("retry of a PENDING delivery: %d %s", r.Status, r.Body)
	}

	// The events URL goes away; the worker delivers the handoffs to the
	// built-in inbox and fails the events with a reason.
	r, _ = s.integrations(tn, "PATCH", map[string]any{"eventsUrl": ""})
	s.mustStatus(r, 200)
	s.ensureWorker()
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, done := list(tn, "?status=PENDING")
		if len(done.Data) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d deliveries still PENDING", len(done.Data))
		}
		time.Sleep(50 * time.Millisecond)
	}
	r = s.do("GET", "/api/v2/deliveries/"+mine, nil, tn.auth())
	s.mustStatus(r, 200)
	var got deliveryBody
	r.decode(t, &got)
	if got.Status != "DELIVERED" || got.DeliveredAt == nil || got.NextAttemptAt != nil || got.Attempts != 1 ||
		len(got.Log) != 1 || got.Log[0].Attempt != 1 || got.Log[0].StatusCode != nil || got.Log[0].Error != nil {
		t.Fatalf("inbox delivery: %s", r.Body)
	}
	// Each conversation's conversation.created and handoff.requested: the
	// events URL applied to the calls right after it was set.
	r, failed := list(tn, "?target=events&status=FAILED")
	if len(failed.Data) != 6 || failed.Data[0].LastError == nil || !strings.Contains(*failed.Data[0].LastError, "no events URL") {
		t.Fatalf("failed events: %s", r.Body)
	}
	if r := s.do("POST", "/api/v2/deliveries/"+mine+"/retry", nil, tn.auth()); r.Status != 409 {
		t.Errorf("retry of a DELIVERED delivery: %d %s", r.Status, r.Body)
	}
	// A failed delivery can be retried: PENDING again, then attempted.
	retried := failed.Data[0].ID
	r = s.do("POST", "/api/v2/deliveries/"+retried+"/retry", nil, tn.auth())
	s.mustStatus(r, 202)
	var again deliveryBody
	r.decode(t, &again)
	if again.Status != "PENDING" || again.ID != retried {
		t.Fatalf("retried: %s", r.Body)
	}
	deadline = time.Now().Add(20 * time.Second)
	for {
		r := s.do("GET", "/api/v2/deliveries/"+retried, nil, tn.auth())
		r.decode(t, &again)
		if again.Status == "FAILED" && again.Attempts == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the retried delivery was not attempted again: %s", r.Body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestIntegrationChangesApplyAtOnce: the answer engine decides outbound
// events from the caller's workspace, which an API call takes from its
// pod's authentication cache. A new events URL must apply to the very next
// call on the pod that set it, and to other pods as soon as the change is
// announced; before, a pod kept its cached copy for up to the cache's
// lifetime and its conversations were never reported. The cache lifetime is
// a minute here, so only the announcement explains another pod's prompt
// change.
func TestIntegrationChangesApplyAtOnce(t *testing.T) {
	ttl := map[string]string{"CONCIERGE_AUTH_CACHE_TTL": "1m"}
	podA := newStack(t, stackOptions{env: ttl})
	podB := newStack(t, stackOptions{env: map[string]string{
		"CONCIERGE_AUTH_CACHE_TTL": "1m",
		"CONCIERGE_DATABASE_URL":   podA.env["CONCIERGE_DATABASE_URL"],
		"CONCIERGE_REDIS_URL":      podA.env["CONCIERGE_REDIS_URL"],
	}})
	// Each pod listens for announcements on its own; a second listener on
	// each, whose ready says it is subscribed, keeps an early announcement
	// from racing the subscription.
	for _, pod := range []*stack{podA, podB} {
		ready := make(chan struct{})
		go func() { _ = pod.sys.changes.Listen(t.Context(), func() { close(ready) }, pod.sys.forget, func() {}) }()
		<-ready
	}
	tn := podA.newTenant(domain.PlanStandard)
	podA.mustStatus(podA.do("POST", "/api/v2/agents", map[string]any{"slug": "support", "name": "Support"}, tn.auth()), 201)
	created := func(pod *stack) int {
		r := pod.do("GET", "/api/v2/deliveries?type=conversation.created&limit=100", nil, tn.auth())
		pod.mustStatus(r, 200)
		var list struct {
			Data []map[string]any `json:"data"`
		}
		r.decode(t, &list)
		return len(list.Data)
	}
	// Both pods have the workspace cached, without an events URL.
	for _, pod := range []*stack{podA, podB} {
		pod.mustStatus(pod.do("POST", "/api/v2/chat", map[string]any{"message": "hello"}, tn.auth()), 200)
	}
	if n := created(podA); n != 0 {
		t.Fatalf("%d conversation.created events before an events URL was set", n)
	}

	r, _ := podA.integrations(tn, "PATCH", map[string]any{"eventsUrl": "https://events.example.com/in"})
	podA.mustStatus(r, 200)
	podA.mustStatus(podA.do("POST", "/api/v2/chat", map[string]any{"message": "hello again"}, tn.auth()), 200)
	if n := created(podA); n != 1 {
		t.Fatalf("the pod that set the events URL reported %d of 1 new conversations", n)
	}

	// Pod B hears the announcement; its next conversation is reported.
	deadline := time.Now().Add(30 * time.Second)
	for {
		podB.mustStatus(podB.do("POST", "/api/v2/chat", map[string]any{"message": "and again"}, tn.auth()), 200)
		if created(podB) >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("another pod still decides events from its stale copy of the workspace")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
