package domain

import (
	"errors"
	"slices"
	"testing"
	"time"
)

// The whole state machine, every pair of states: what PRODUCT.md and the
// API guide promise (docs/api.md, "Handoff and conversation states").
func TestConversationStatusTransitions(t *testing.T) {
	const (
		ai  = StatusAI
		req = StatusHandoffRequested
		hum = StatusHuman
		res = StatusResolved
	)
	allowed := map[[2]ConversationStatus]bool{
		{ai, req}: true, {ai, hum}: true, {ai, res}: true,
		{req, hum}: true, {req, ai}: true, {req, res}: true,
		{hum, ai}: true, {hum, res}: true,
		{res, ai}: true, {res, req}: true, {res, hum}: true,
	}
	all := []ConversationStatus{ai, req, hum, res, "", "CLOSED"}
	for _, from := range all {
		for _, to := range all {
			want := allowed[[2]ConversationStatus{from, to}]
			if got := from.CanMoveTo(to); got != want {
				t.Errorf("%q.CanMoveTo(%q) = %v, want %v", from, to, got, want)
			}
		}
	}
	// A person who owns the conversation cannot be asked for again.
	if hum.CanMoveTo(req) {
		t.Error("HUMAN -> HANDOFF_REQUESTED must be refused")
	}
	for _, s := range all {
		if s.CanMoveTo(s) {
			t.Errorf("%q -> itself is a move", s)
		}
	}
}

func TestStatusesFrom(t *testing.T) {
	tests := []struct {
		to   ConversationStatus
		want []ConversationStatus
	}{
		{StatusAI, []ConversationStatus{StatusHandoffRequested, StatusHuman, StatusResolved}},
		{StatusHandoffRequested, []ConversationStatus{StatusAI, StatusResolved}},
		{StatusHuman, []ConversationStatus{StatusAI, StatusHandoffRequested, StatusResolved}},
		{StatusResolved, []ConversationStatus{StatusAI, StatusHandoffRequested, StatusHuman}},
		{"CLOSED", nil},
	}
	for _, tt := range tests {
		if got := StatusesFrom(tt.to); !slices.Equal(got, tt.want) {
			t.Errorf("StatusesFrom(%s) = %v, want %v", tt.to, got, tt.want)
		}
	}
}

func TestStatusValidAndHumanOwned(t *testing.T) {
	tests := []struct {
		s            ConversationStatus
		valid, owned bool
	}{
		{StatusAI, true, false},
		{StatusHandoffRequested, true, true},
		{StatusHuman, true, true},
		{StatusResolved, true, false},
		{"", false, false},
		{"human", false, false},
	}
	for _, tt := range tests {
		if tt.s.Valid() != tt.valid || tt.s.HumanOwned() != tt.owned {
			t.Errorf("%q: Valid %v HumanOwned %v, want %v %v", tt.s, tt.s.Valid(), tt.s.HumanOwned(), tt.valid, tt.owned)
		}
	}
}

func TestNewHandoffContact(t *testing.T) {
	long := func(n int) string { return string(make([]rune, n)) }
	tests := []struct {
		name, email, note string
		badField          string
	}{
		{"", "", "", ""},
		{"  Ada  ", " ada@example.com ", " call me ", ""},
		{"", "not an email", "", "email"},
		{"", "Ada <ada@example.com>", "", "email"},
		{"", "a@" + long(300), "", "email"},
		{long(201), "", "", "name"},
		{"", "", long(2001), "note"},
	}
	for _, tt := range tests {
		c, err := NewHandoffContact(tt.name, tt.email, tt.note)
		if tt.badField == "" {
			if err != nil {
				t.Errorf("NewHandoffContact(%q, %q, %q): %v", tt.name, tt.email, tt.note, err)
			}
			if tt.name != "" && (c.Name != "Ada" || c.Email != "ada@example.com" || c.Note != "call me") {
				t.Errorf("contact %+v, want the fields trimmed", c)
			}
			continue
		}
		var verr *ValidationError
		if !errors.As(err, &verr) || verr.Fields[tt.badField] == "" {
			t.Errorf("NewHandoffContact(%q, %q, %q) = %v, want a reason for %s", tt.name, tt.email, tt.note, err, tt.badField)
		}
	}
}

// Which moves and messages are delivered where: the rules every path that
// changes a conversation shares.
func TestStatusDeliveries(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	plain := &Workspace{ID: "ws_1"}
	withEvents := &Workspace{ID: "ws_1", EventsURL: "https://hooks.example/e"}
	contact := &HandoffContact{Name: "Ada"}
	transcript := []Message{{ID: "msg_1", Role: RoleUser, Content: "help"}}
	tests := []struct {
		ws       *Workspace
		from, to ConversationStatus
		want     []string
	}{
		{plain, StatusAI, StatusHandoffRequested, []string{"helpdesk:handoff.requested"}},
		{withEvents, StatusResolved, StatusHandoffRequested, []string{"helpdesk:handoff.requested", "events:handoff.requested"}},
		{withEvents, StatusHandoffRequested, StatusHuman, nil},
		{withEvents, StatusAI, StatusHuman, nil},
		{withEvents, StatusHuman, StatusResolved, []string{"helpdesk:handoff.resolved", "events:handoff.resolved"}},
		{plain, StatusHandoffRequested, StatusAI, []string{"helpdesk:handoff.resolved"}},
		{withEvents, StatusAI, StatusResolved, nil},
		{withEvents, StatusResolved, StatusAI, nil},
	}
	for _, tt := range tests {
		conv := Conversation{ID: "ses_1", WorkspaceID: "ws_1", Status: tt.to}
		var got []string
		for _, d := range StatusDeliveries(tt.ws, conv, tt.from, contact, transcript, now) {
			got = append(got, string(d.Target)+":"+d.Type)
			if d.Status != DeliveryPending || d.ConversationID != "ses_1" || d.WorkspaceID != "ws_1" || !d.NextAttemptAt.Equal(now) {
				t.Errorf("%s -> %s: delivery %+v is not a pending delivery of the conversation due now", tt.from, tt.to, d)
			}
			if requested := d.Type == EventHandoffRequested; requested != (d.Contact != nil && len(d.Transcript) == 1) {
				t.Errorf("%s -> %s: %s carries contact %v and %d transcript messages", tt.from, tt.to, d.Type, d.Contact, len(d.Transcript))
			}
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s -> %s (events URL %q): %v, want %v", tt.from, tt.to, tt.ws.EventsURL, got, tt.want)
		}
	}
}

func TestMessageDeliveries(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	plain := &Workspace{ID: "ws_1"}
	withEvents := &Workspace{ID: "ws_1", EventsURL: "https://hooks.example/e"}
	tests := []struct {
		ws     *Workspace
		status ConversationStatus
		role   Role
		want   []string
	}{
		{plain, StatusAI, RoleUser, nil},
		{plain, StatusHandoffRequested, RoleUser, []string{"helpdesk"}},
		{plain, StatusHuman, RoleUser, []string{"helpdesk"}},
		{plain, StatusHuman, RoleHuman, nil},
		{withEvents, StatusHuman, RoleUser, []string{"helpdesk", "events"}},
		{withEvents, StatusAI, RoleAssistant, []string{"events"}},
		{withEvents, StatusHuman, RoleHuman, []string{"events"}},
		{withEvents, StatusHuman, RoleSystem, nil},
	}
	for _, tt := range tests {
		conv := Conversation{ID: "ses_1", WorkspaceID: "ws_1", Status: tt.status}
		m := Message{ID: "msg_1", Role: tt.role}
		var got []string
		for _, d := range MessageDeliveries(tt.ws, conv, m, now) {
			got = append(got, string(d.Target))
			if d.Type != EventMessageCreated || d.Message == nil || d.Message.ID != "msg_1" {
				t.Errorf("delivery %+v, want message.created of the message", d)
			}
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s message in %s (events URL %q): %v, want %v", tt.role, tt.status, tt.ws.EventsURL, got, tt.want)
		}
	}
	if d := ConversationDeliveries(plain, Conversation{}, now); d != nil {
		t.Errorf("conversation.created without an events URL: %+v", d)
	}
	if d := ConversationDeliveries(withEvents, Conversation{ID: "ses_1"}, now); len(d) != 1 || d[0].Type != EventConversationCreated || d[0].Target != TargetEvents {
		t.Errorf("conversation.created with an events URL: %+v", d)
	}
}

func TestNewStatusNotice(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	conv := Conversation{ID: "ses_1", WorkspaceID: "ws_1"}
	for _, to := range []ConversationStatus{StatusAI, StatusHandoffRequested, StatusHuman, StatusResolved} {
		n := NewStatusNotice(conv, to, "", now)
		if n.Role != RoleSystem || n.Status != to || n.Content == "" || n.ConversationID != "ses_1" || n.WorkspaceID != "ws_1" ||
			!ValidID(PrefixMessage, n.ID) || !n.CreatedAt.Equal(now) {
			t.Errorf("notice of %s = %+v", to, n)
		}
	}
	if n := NewStatusNotice(conv, StatusHuman, "Marta", now); n.Content != "Marta joined the conversation." {
		t.Errorf("notice with author = %q", n.Content)
	}
}
