package openapi_test

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/conciergehq/concierge/adapters/httpapi/openapi"
)

func loadDocument(t *testing.T) *openapi3.T {
	t.Helper()
	raw, err := openapi.Document()
	if err != nil {
		t.Fatalf("Document: %v", err)
	}
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(raw)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	return doc
}

func TestDocumentIsValidOpenAPI31(t *testing.T) {
	doc := loadDocument(t)
	if !doc.IsOpenAPI31OrLater() || doc.OpenAPI != "3.1.0" {
		t.Fatalf("openapi = %q, want 3.1.0", doc.OpenAPI)
	}
	if err := doc.Validate(context.Background(), openapi3.EnableExamplesValidation()); err != nil {
		t.Fatalf("document does not validate: %v", err)
	}
}

// TestSchemaExamplesMatch checks the 3.1 `examples` of every schema, which
// doc.Validate leaves alone, so a stale example cannot mislead a reader.
func TestSchemaExamplesMatch(t *testing.T) {
	doc := loadDocument(t)
	checked := 0
	var walk func(name string, s *openapi3.SchemaRef, seen map[*openapi3.Schema]bool)
	walk = func(name string, s *openapi3.SchemaRef, seen map[*openapi3.Schema]bool) {
		if s == nil || s.Value == nil || seen[s.Value] {
			return
		}
		seen[s.Value] = true
		for i, example := range s.Value.Examples {
			checked++
			if err := s.Value.VisitJSON(example, openapi3.EnableJSONSchema2020(), openapi3.VisitAsResponse()); err != nil {
				t.Errorf("%s: example %d does not match its schema: %v", name, i, err)
			}
		}
		for prop, sub := range s.Value.Properties {
			walk(name+"."+prop, sub, seen)
		}
		for i, sub := range s.Value.AllOf {
			walk(name+".allOf["+strconv.Itoa(i)+"]", sub, seen)
		}
	}
	for name, s := range doc.Components.Schemas {
		walk(name, s, map[*openapi3.Schema]bool{})
	}
	if checked < 5 {
		t.Fatalf("only %d examples checked; the walk is broken", checked)
	}
}

func TestDocumentIsJSON(t *testing.T) {
	raw, err := openapi.Document()
	if err != nil {
		t.Fatalf("Document: %v", err)
	}
	var top map[string]any
	if err := json.Unmarshal(raw, &top); err != nil {
		t.Fatalf("Document is not JSON: %v", err)
	}
	if top["openapi"] != "3.1.0" {
		t.Fatalf("openapi = %#v, want \"3.1.0\"", top["openapi"])
	}
	for _, key := range []string{"info", "paths", "components", "security"} {
		if _, ok := top[key]; !ok {
			t.Errorf("top-level %q missing", key)
		}
	}

	// Callers get their own copy, so one handler cannot corrupt another's.
	raw[0] = 'X'
	again, err := openapi.Document()
	if err != nil || again[0] != '{' {
		t.Fatalf("Document shares its buffer between calls")
	}
}

// guideOperation matches "`METHOD /path`" as the API guide writes operations.
var guideOperation = regexp.MustCompile("`(GET|POST|PUT|PATCH|DELETE) (/[^`\\s]*)`")

func TestDocumentCoversAPIGuide(t *testing.T) {
	guide, err := os.ReadFile("../../../docs/api.md")
	if err != nil {
		t.Fatalf("read API guide: %v", err)
	}
	doc := loadDocument(t)
	found := map[string]bool{}
	for _, m := range guideOperation.FindAllStringSubmatch(string(guide), -1) {
		method, path := m[1], m[2]
		found[method+" "+path] = true
		item := doc.Paths.Value(path)
		if item == nil {
			t.Errorf("%s %s (in docs/api.md) is not in the OpenAPI document", method, path)
			continue
		}
		if item.GetOperation(method) == nil {
			t.Errorf("%s %s (in docs/api.md): path documented without this method", method, path)
		}
	}
	// Guard the extraction itself: if the guide's formatting changed and the
	// regexp matched nothing, the loop above would pass vacuously.
	for _, want := range []string{
		"GET /api/v2/agents", "POST /api/v2/agents", "GET /api/v2/agents/{slug}", "PATCH /api/v2/agents/{slug}",
		"DELETE /api/v2/agents/{slug}", "POST /api/v2/agents/{slug}/sources", "GET /api/v2/agents/{slug}/sources",
		"DELETE /api/v2/agents/{slug}/sources/{id}", "GET /api/v2/conversations", "GET /api/v2/conversations/{id}",
		"GET /api/v2/openapi.json", "POST /api/v1/sessions", "POST /api/webhooks/inbound", "GET /healthz", "GET /readyz",
		"POST /api/chat/{sessionId}/message",
	} {
		if !found[want] {
			t.Errorf("docs/api.md no longer names %s in the expected form", want)
		}
	}
}

func TestDocumentOperations(t *testing.T) {
	doc := loadDocument(t)
	type want struct {
		planned  bool
		security string // "bearer", "webhookSecret" or "" for none
	}
	ops := map[string]want{
		"GET /api/v2/agents":                                        {security: "bearer"},
		"POST /api/v2/agents":                                       {security: "bearer"},
		"GET /api/v2/agents/{slug}":                                 {security: "bearer"},
		"PATCH /api/v2/agents/{slug}":                               {security: "bearer"},
		"DELETE /api/v2/agents/{slug}":                              {security: "bearer"},
		"POST /api/v2/agents/{slug}/sources":                        {security: "bearer"},
		"GET /api/v2/agents/{slug}/sources":                         {security: "bearer"},
		"DELETE /api/v2/agents/{slug}/sources/{id}":                 {security: "bearer"},
		"GET /api/v2/agents/{slug}/sources/{id}":                    {security: "bearer"},
		"POST /api/v2/agents/{slug}/sources/{id}/reindex":           {security: "bearer"},
		"POST /api/v2/agents/{slug}/retrieve":                       {security: "bearer"},
		"GET /api/v2/agents/{slug}/unanswered-topics":               {security: "bearer"},
		"GET /api/v2/agents/{slug}/unanswered-topics/{id}":          {security: "bearer"},
		"POST /api/v2/agents/{slug}/unanswered-topics/{id}/answer":  {security: "bearer"},
		"GET /api/v2/conversations/{id}/messages/{messageId}/trace": {security: "bearer"},
		"GET /api/v2/conversations":                                 {security: "bearer"},
		"GET /api/v2/conversations/{id}":                            {security: "bearer"},
		"GET /api/v2/openapi.json":                                  {},
		"POST /api/v2/chat":                                         {security: "bearer"},
		"POST /api/v1/sessions":                                     {security: "bearer"},
		"POST /api/chat/{sessionId}/message":                        {},
		"GET /api/chat/{sessionId}/events":                          {},
		"GET /api/v2/conversations/{id}/events":                     {security: "bearer"},
		"GET /api/v2/events":                                        {security: "bearer"},
		"POST /api/chat/{sessionId}/handoff":                        {},
		"GET /api/chat/{sessionId}/poll":                            {},
		"POST /api/v2/conversations/{id}/messages":                  {security: "bearer"},
		"POST /api/v2/conversations/{id}/status":                    {security: "bearer"},
		"PUT /api/v2/conversations/{id}/assignee":                   {security: "bearer"},
		"POST /api/v2/conversations/{id}/suggested-reply":           {security: "bearer"},
		"GET /api/chat/{sessionId}/availability":                    {},
		"POST /api/webhooks/inbound":                                {security: "webhookSecret"},
		"GET /api/v2/integrations":                                  {security: "bearer"},
		"PATCH /api/v2/integrations":                                {security: "bearer"},
		"POST /api/v2/integrations/signing-secret":                  {security: "bearer"},
		"GET /api/v2/deliveries":                                    {security: "bearer"},
		"GET /api/v2/deliveries/{id}":                               {security: "bearer"},
		"POST /api/v2/deliveries/{id}/retry":                        {security: "bearer"},
		"GET /api/v2/saved-replies":                                 {security: "bearer"},
		"POST /api/v2/saved-replies":                                {security: "bearer"},
		"GET /api/v2/saved-replies/{id}":                            {security: "bearer"},
		"PATCH /api/v2/saved-replies/{id}":                          {security: "bearer"},
		"DELETE /api/v2/saved-replies/{id}":                         {security: "bearer"},
		"POST /api/widget/{slug}/sessions":                          {},
		"POST /api/chat/{sessionId}/messages/{messageId}/feedback":  {},
		"GET /api/v2/feedback":                                      {security: "bearer"},
		"GET /api/v2/analytics/report":                              {security: "bearer"},
		"GET /api/v2/analytics/report.csv":                          {security: "bearer"},
		"GET /healthz":                                              {},
		"GET /readyz":                                               {},
	}
	seen := 0
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			key := method + " " + path
			w, ok := ops[key]
			if !ok {
				t.Errorf("%s is documented but not expected by this test", key)
				continue
			}
			seen++
			t.Run(key, func(t *testing.T) {
				if _, planned := op.Extensions["x-status"]; planned != w.planned {
					t.Errorf("x-status present = %v, want %v", planned, w.planned)
				}
				if w.planned && op.Extensions["x-status"] != "planned" {
					t.Errorf("x-status = %v, want planned", op.Extensions["x-status"])
				}
				if got := securityOf(doc, op); got != w.security {
					t.Errorf("security = %q, want %q", got, w.security)
				}
				checkResponses(t, op)
				checkRequestBody(t, op)
			})
		}
	}
	if seen != len(ops) {
		t.Errorf("document has %d of the %d expected operations", seen, len(ops))
	}
}

func securityOf(doc *openapi3.T, op *openapi3.Operation) string {
	reqs := doc.Security
	if op.Security != nil {
		reqs = *op.Security
	}
	var names []string
	for _, req := range reqs {
		for name := range req {
			names = append(names, name)
		}
	}
	return strings.Join(names, ",")
}

// checkResponses enforces the conventions every operation shares: a request id
// on every response, the Error schema on every error, Retry-After on 429, and
// only error codes that exist for the status.
func checkResponses(t *testing.T, op *openapi3.Operation) {
	t.Helper()
	for status, ref := range op.Responses.Map() {
		resp := ref.Value
		if h := resp.Headers["X-Request-Id"]; h == nil || !h.Value.Required {
			t.Errorf("%s: X-Request-Id header missing or optional", status)
		}
		if status == "429" {
			if h := resp.Headers["Retry-After"]; h == nil || !h.Value.Required {
				t.Errorf("429: Retry-After header missing or optional")
			}
		}
		if status[0] != '4' && status[0] != '5' || op.OperationID == "readyz" {
			continue
		}
		media := resp.Content.Get("application/json")
		if media == nil || media.Schema == nil {
			t.Errorf("%s: no application/json schema", status)
			continue
		}
		if !refersTo(media.Schema, "#/components/schemas/Error") {
			t.Errorf("%s: error response does not use the Error schema", status)
		}
	}
}

func refersTo(s *openapi3.SchemaRef, ref string) bool {
	if s.Ref == ref {
		return true
	}
	for _, sub := range s.Value.AllOf {
		if refersTo(sub, ref) {
			return true
		}
	}
	return false
}

// checkRequestBody makes sure every request schema rejects unknown fields, as
// the server does.
func checkRequestBody(t *testing.T, op *openapi3.Operation) {
	t.Helper()
	if op.RequestBody == nil {
		return
	}
	media := op.RequestBody.Value.Content.Get("application/json")
	if media == nil {
		t.Fatalf("request body is not application/json")
	}
	var check func(s *openapi3.Schema, where string)
	check = func(s *openapi3.Schema, where string) {
		if len(s.OneOf) > 0 {
			for i, sub := range s.OneOf {
				check(sub.Value, where+".oneOf["+strconv.Itoa(i)+"]")
			}
			return
		}
		if s.AdditionalProperties.Has == nil || *s.AdditionalProperties.Has {
			t.Errorf("request body %s allows unknown fields", where)
		}
	}
	check(media.Schema.Value, "schema")
}

func TestRequestSchemasRejectUnknownFields(t *testing.T) {
	doc := loadDocument(t)
	tests := []struct {
		schema string
		body   string
		valid  bool
	}{
		{"AgentCreate", `{"slug":"support","name":"Support"}`, true},
		{"AgentCreate", `{"slug":"support","name":"Support","colour":"red"}`, false},
		{"AgentCreate", `{"slug":"Not A Slug","name":"Support"}`, false},
		{"AgentUpdate", `{"published":false}`, true},
		{"AgentUpdate", `{"slug":"renamed"}`, false},
		{"SourceCreate", `{"type":"text","name":"Refunds","content":"30 days."}`, true},
		{"SourceCreate", `{"type":"qa","question":"Refunds?","answer":"30 days."}`, true},
		{"SourceCreate", `{"type":"qa","question":"Refunds?","answer":"30 days.","content":"x"}`, false},
		{"SourceCreate", `{"type":"text","name":"Refunds"}`, false},
		{"SourceCreate", `{"type":"pdf","name":"Refunds","content":"x"}`, false},
		{"InboundEvent", `{"event":"chat.message","sessionId":"ses_1","message":"hi"}`, true},
		{"InboundEvent", `{"event":"chat.message","sessionId":"ses_1"}`, false},
		{"InboundEvent", `{"event":"order.shipped"}`, true},
		{"InboundEvent", `{"event":"chat.message","sessionId":"ses_1","message":"hi","extra":1}`, false},
		{"ChatRequest", `{"agent":"support","message":"hi","stream":true}`, true},
		{"ChatRequest", `{"agent":"support"}`, false},
		{"SessionCreate", `{}`, true},
		{"SessionCreate", `{"slug":"support","agent":"support"}`, false},
		{"HandoffRequest", `{}`, true},
		{"HandoffRequest", `{"name":"Ada","email":"ada@example.com","note":"call me"}`, true},
		{"HandoffRequest", `{"phone":"123"}`, false},
		{"HumanMessageCreate", `{"role":"HUMAN","content":"Hi","authorName":"Marta"}`, true},
		{"HumanMessageCreate", `{"role":"ASSISTANT","content":"Hi"}`, false},
		{"HumanMessageCreate", `{"role":"HUMAN"}`, false},
		{"StatusChange", `{"status":"RESOLVED"}`, true},
		{"StatusChange", `{"status":"CLOSED"}`, false},
		{"IntegrationsUpdate", `{"helpdeskUrl":"https://desk.example.com/in","eventsUrl":""}`, true},
		{"IntegrationsUpdate", `{}`, true},
		{"IntegrationsUpdate", `{"signingSecret":"whsec_x"}`, false},
		{"AgentCreate", `{"slug":"s","name":"S","primaryColor":"#2563EB","avatarUrl":"https://x.test/a.png","allowedOrigins":["https://x.test"]}`, true},
		{"AgentCreate", `{"slug":"s","name":"S","primaryColor":"blue"}`, false},
		{"AgentUpdate", `{"allowedOrigins":[]}`, true},
		{"AgentUpdate", `{"widgetUrl":"https://x.test/chat/s"}`, false},
		{"SessionMessageRequest", `{"message":"hi","stream":true}`, true},
		{"SessionMessageRequest", `{"message":"hi","stream":"yes"}`, false},
		{"WidgetSessionCreate", `{}`, true},
		{"WidgetSessionCreate", `{"slug":"support"}`, false},
		{"FeedbackRequest", `{"rating":"up","comment":"thanks"}`, true},
		{"FeedbackRequest", `{"rating":null}`, true},
		{"FeedbackRequest", `{"comment":"no rating"}`, false},
		{"FeedbackRequest", `{"rating":"meh"}`, false},
		{"FeedbackRequest", `{"rating":"up","stars":5}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.schema+" "+tt.body, func(t *testing.T) {
			var value any
			if err := json.Unmarshal([]byte(tt.body), &value); err != nil {
				t.Fatal(err)
			}
			err := doc.Components.Schemas[tt.schema].Value.VisitJSON(value, openapi3.EnableJSONSchema2020(), openapi3.VisitAsRequest())
			if (err == nil) != tt.valid {
				t.Errorf("valid = %v, want %v (err: %v)", err == nil, tt.valid, err)
			}
		})
	}
}

func TestErrorStatusesDocumented(t *testing.T) {
	doc := loadDocument(t)
	for _, name := range []string{"BadRequest", "Unauthorized", "PlanUpgradeRequired", "NotFound", "Conflict",
		"PayloadTooLarge", "UnsupportedMediaType", "TooManyRequests", "InternalError", "Unavailable"} {
		if doc.Components.Responses[name] == nil {
			t.Errorf("components.responses.%s missing", name)
		}
	}
}
