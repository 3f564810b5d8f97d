// Package conversationtest is the contract every conversation store
// keeps: one suite of tests that runs against the PostgreSQL store and the
// in-memory one that core packages test with, so the fake's rules cannot
// drift from the real store's. A store's test calls RunStoreContract with
// a function that makes a Harness.
//
// The PostgreSQL store's behaviour is the reference. Where it does more
// than ports.ConversationStore documents, the suite pins it too and says
// so in the case's comment ("Undocumented").
package conversationtest

import (
	"context"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// Store is what a conversation store implements: the store itself and the
// reads of transcripts, keyed questions and interrupted answers.
type Store interface {
	ports.ConversationStore
	ports.Transcript
	ports.KeyedQuestions
	ports.InterruptedAnswers
}

// Harness is one store under test and what a case needs to set it up.
// Cases may share one store (a database): each works in workspaces of its
// own, and filters what is not scoped by workspace (answers in progress).
type Harness struct {
	Store Store
	// NewWorkspace returns the id of a new workspace the store knows
	// (PostgreSQL needs the row), with no conversations.
	NewWorkspace func(t *testing.T) string
	// NewAgent returns a new agent of the workspace with the slug, one a
	// conversation may be created with.
	NewAgent func(t *testing.T, workspaceID, slug string) domain.Agent
	// Outbox returns the ids of the deliveries written for the workspace,
	// in any order.
	Outbox func(t *testing.T, workspaceID string) []string
}

// t0 is a fixed time with nanoseconds, so the cases also check that times
// are kept to PostgreSQL's microseconds.
var t0 = time.Date(2026, 11, 21, 10, 0, 0, 123456789, time.UTC)

// micro is what a store gives back for t.
func micro(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

type contractCase struct {
	name string
	run  func(t *testing.T, f *fixture)
}

// RunStoreContract runs every case of the contract against stores made by
// newHarness, each case as a parallel subtest with a fresh fixture.
func RunStoreContract(t *testing.T, newHarness func(t *testing.T) Harness) {
	t.Helper()
	var cases []contractCase
	for _, group := range [][]contractCase{createCases, appendCases, statusCases, readCases, answerCases} {
		cases = append(cases, group...)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, newFixture(t, newHarness(t)))
		})
	}
}

// fixture is where most cases start: a workspace, its agent "support" and
// one empty conversation of it created at t0.
type fixture struct {
	Harness
	ctx   context.Context
	ws    string
	agent domain.Agent
	conv  domain.Conversation
}

func newFixture(t *testing.T, h Harness) *fixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	f := &fixture{Harness: h, ctx: ctx}
	f.ws = h.NewWorkspace(t)
	f.agent = h.NewAgent(t, f.ws, "support")
	f.conv = f.newConversation(t, f.ws, f.agent, t0)
	return f
}

// newConversation creates an empty conversation of the agent.
func (f *fixture) newConversation(t *testing.T, workspaceID string, agent domain.Agent, at time.Time) domain.Conversation {
	t.Helper()
	c := domain.NewConversation(workspaceID, &agent, "", at)
	if err := f.Store.CreateConversation(f.ctx, &c); err != nil {
		t.Fatalf("CreateConversation: %v", err)
	}
	return c
}

// get reads the fixture's conversation, or the one with the id.
func (f *fixture) get(t *testing.T, id ...string) domain.Conversation {
	t.Helper()
	convID := f.conv.ID
	if len(id) > 0 {
		convID = id[0]
	}
	c, err := f.Store.GetConversation(f.ctx, f.ws, convID)
	if err != nil {
		t.Fatalf("GetConversation: %v", err)
	}
	return c
}

// append stores m under any state, or fails the test.
func (f *fixture) append(t *testing.T, m domain.Message) domain.Message {
	t.Helper()
	stored, created, err := f.Store.AppendMessage(f.ctx, m, "")
	if err != nil || !created {
		t.Fatalf("AppendMessage = %v, %v", created, err)
	}
	return stored
}

// messages reads the conversation's messages, oldest first.
func (f *fixture) messages(t *testing.T, id ...string) []domain.Message {
	t.Helper()
	convID := f.conv.ID
	if len(id) > 0 {
		convID = id[0]
	}
	msgs, err := f.Store.RecentMessages(f.ctx, f.ws, convID, 1000)
	if err != nil {
		t.Fatalf("RecentMessages: %v", err)
	}
	return msgs
}

// roles are the roles of msgs, in order.
func roles(msgs []domain.Message) []domain.Role {
	var out []domain.Role
	for _, m := range msgs {
		out = append(out, m.Role)
	}
	return out
}

// ids are the ids of msgs, in order.
func ids(msgs []domain.Message) []string {
	var out []string
	for _, m := range msgs {
		out = append(out, m.ID)
	}
	return out
}

// outbox is the number of deliveries written for the fixture's workspace,
// or the one given.
func (f *fixture) outbox(t *testing.T, workspaceID ...string) int {
	t.Helper()
	ws := f.ws
	if len(workspaceID) > 0 {
		ws = workspaceID[0]
	}
	return len(f.Outbox(t, ws))
}

func newMessage(workspaceID, conversationID string, role domain.Role, content string, at time.Time) domain.Message {
	return domain.Message{ID: domain.NewID(domain.PrefixMessage), WorkspaceID: workspaceID, ConversationID: conversationID,
		Role: role, Content: content, CreatedAt: at}
}

// msg is a message of the fixture's conversation.
func (f *fixture) msg(role domain.Role, content string, at time.Time) domain.Message {
	return newMessage(f.ws, f.conv.ID, role, content, at)
}

// delivery is a delivery about conv.
func delivery(conv domain.Conversation, typ string) domain.Delivery {
	return domain.NewDelivery(domain.TargetEvents, typ, conv, t0)
}

// statusChange is the move of conv to `to` from any state that may move
// there, with a notice dated at and the deliveries.
func statusChange(conv domain.Conversation, to domain.ConversationStatus, at time.Time, deliveries ...domain.Delivery) domain.StatusChange {
	next := conv
	next.Status = to
	return domain.StatusChange{
		WorkspaceID: conv.WorkspaceID, ConversationID: conv.ID, To: to,
		Notice: domain.NewStatusNotice(next, to, "", at), Deliveries: deliveries,
	}
}

// move applies a change that must apply.
func (f *fixture) move(t *testing.T, change domain.StatusChange) domain.Conversation {
	t.Helper()
	got, changed, err := f.Store.ChangeStatus(f.ctx, change)
	if err != nil || !changed {
		t.Fatalf("ChangeStatus to %s = %v, %v", change.To, changed, err)
	}
	return got
}

// exchange is a question and its reply as the engine stores a turn: the
// reply with citations, token ends, an outcome and a retrieval trace.
func exchange(workspaceID, conversationID string, at time.Time) []domain.Message {
	q := newMessage(workspaceID, conversationID, domain.RoleUser, "How do I reset my password?", at)
	r := newMessage(workspaceID, conversationID, domain.RoleAssistant, "Open Settings, then Security.", at.Add(3*time.Millisecond))
	q.ReplyID = r.ID
	r.Citations = []domain.Citation{{DocumentName: "Passwords", SourceID: "src_1", SourceType: domain.SourceText, Snippet: "Open Settings", Score: 0.75}}
	r.TokenEnds = []int{5, 14, 20, 29}
	r.TokensIn, r.TokensOut, r.Model = 120, 9, "gpt-4o-mini"
	r.OfferHandoff = true
	r.FallbackReason = domain.FallbackNoKnowledge
	r.Trace = &domain.RetrievalTrace{Question: q.Content, Query: q.Content + "\nI cannot sign in",
		QueryNote: "follow-up", Method: "hybrid", TopK: 5, Threshold: 0.25,
		Candidates: []domain.TraceCandidate{{ChunkID: "chk_1", SourceID: "src_1", Score: 0.75, Kept: true}}}
	return []domain.Message{q, r}
}

// asRead is m as a read gives it back: its time as stored, without its
// trace.
func asRead(m domain.Message) domain.Message {
	m.CreatedAt, m.Trace = micro(m.CreatedAt), nil
	return m
}
