package webhook_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/conciergehq/concierge/adapters/helpdesk/webhook"
	"github.com/conciergehq/concierge/adapters/httpapi/openapi"
	"github.com/conciergehq/concierge/core/domain"
)

// The body a receiver gets is the one the OpenAPI document describes
// (components.schemas.DeliveryEnvelope, used by webhooks.delivery).
func TestBodyMatchesTheOpenAPISchema(t *testing.T) {
	t.Parallel()
	raw, err := openapi.Document()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := openapi3.NewLoader().LoadFromData(raw)
	if err != nil {
		t.Fatal(err)
	}
	schema := doc.Components.Schemas["DeliveryEnvelope"]
	if schema == nil || doc.Webhooks["delivery"] == nil {
		t.Fatal("the OpenAPI document does not describe the delivery body")
	}
	handoff := handoffDelivery()
	reply := handoff
	m := domain.Message{ID: "msg_0000000000000000000000000c", Role: domain.RoleHuman, Content: "On it", AuthorName: "Grace", CreatedAt: t0}
	reply.Type, reply.Message, reply.Contact, reply.Transcript = domain.EventMessageCreated, &m, nil, nil
	notice := handoff
	n := domain.Message{ID: "msg_0000000000000000000000000d", Role: domain.RoleSystem, Content: "Resolved", Status: domain.StatusResolved, CreatedAt: t0.Add(time.Second)}
	notice.Type, notice.Message, notice.Contact, notice.Transcript = domain.EventHandoffResolved, &n, nil, nil
	bare := domain.NewDelivery(domain.TargetEvents, domain.EventConversationCreated, domain.Conversation{ID: "ses_x", Channel: domain.ChannelChat, Status: domain.StatusAI}, t0)
	for _, d := range []domain.Delivery{handoff, reply, notice, bare} {
		body, err := webhook.Body(d)
		if err != nil {
			t.Fatal(err)
		}
		var value any
		if err := json.Unmarshal(body, &value); err != nil {
			t.Fatal(err)
		}
		if err := schema.Value.VisitJSON(value, openapi3.EnableJSONSchema2020()); err != nil {
			t.Errorf("%s body does not match DeliveryEnvelope: %v\n%s", d.Type, err, body)
		}
	}
}
