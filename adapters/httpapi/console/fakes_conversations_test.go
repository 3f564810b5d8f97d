package console_test

import (
	"context"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/conciergehq/concierge/adapters/httpapi/console"
	"github.com/conciergehq/concierge/core/chat"
	"github.com/conciergehq/concierge/core/conversation"
	"github.com/conciergehq/concierge/core/domain"
)

// Conversations: fakeConversations keeps conversations, messages and
// traces in memory with conversation.Service's rules: ids checked, every
// read scoped by workspace (a foreign id is ErrNotFound), an unknown agent
// filter ErrNotFound, an unknown status a ValidationError, keyset pages.
type fakeConversations struct {
	mu     sync.Mutex
	agents *fakeAgents
	convs  []domain.Conversation // newest activity first
	msgs   map[string][]domain.Message
	traces map[string]domain.RetrievalTrace // by message id
	// lists records the filters List was called with.
	lists []conversation.ListFilter
}

func newFakeConversations(agents *fakeAgents) *fakeConversations {
	return &fakeConversations{agents: agents, msgs: map[string][]domain.Message{}, traces: map[string]domain.RetrievalTrace{}}
}

// add stores a conversation (as the newest) with its messages; an answer
// with a Trace has it stored as the trace call returns it.
func (f *fakeConversations) add(c domain.Conversation, msgs ...domain.Message) domain.Conversation {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c.ID == "" {
		c.ID = domain.NewID(domain.PrefixSession)
	}
	if c.Channel == "" {
		c.Channel = domain.ChannelChat
	}
	if c.Status == "" {
		c.Status = domain.StatusAI
	}
	if c.LastActivityAt.IsZero() {
		c.LastActivityAt, c.CreatedAt = fakeNow, fakeNow
	}
	f.convs = append([]domain.Conversation{c}, f.convs...)
	f.appendLocked(c.ID, msgs...)
	return c
}

func (f *fakeConversations) appendLocked(convID string, msgs ...domain.Message) {
	for _, m := range msgs {
		if m.ID == "" {
			m.ID = domain.NewID(domain.PrefixMessage)
		}
		if m.CreatedAt.IsZero() {
			m.CreatedAt = fakeNow
		}
		m.ConversationID = convID
		if m.Trace != nil {
			f.traces[m.ID] = *m.Trace
			m.Trace = nil // read by MessageTrace only, as the store does
		}
		f.msgs[convID] = append(f.msgs[convID], m)
	}
	for i := range f.convs {
		if f.convs[i].ID == convID {
			f.convs[i].MessageCount = len(f.msgs[convID])
			if n := len(msgs); n > 0 {
				f.convs[i].LastMessage = domain.Preview(msgs[n-1].Content, 100)
			}
		}
	}
}

func (f *fakeConversations) List(_ context.Context, ws string, filter conversation.ListFilter, page domain.PageRequest) (domain.Page[domain.Conversation], error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists = append(f.lists, filter)
	switch filter.Status {
	case "", domain.StatusAI, domain.StatusHandoffRequested, domain.StatusHuman, domain.StatusResolved:
	default:
		return domain.Page[domain.Conversation]{}, domain.InvalidField("status", "must be one of AI, HANDOFF_REQUESTED, HUMAN, RESOLVED")
	}
	if !filter.ActiveFrom.IsZero() && !filter.ActiveBefore.IsZero() && !filter.ActiveFrom.Before(filter.ActiveBefore) {
		return domain.Page[domain.Conversation]{}, domain.InvalidField("activeBefore", "must be after the start of the range")
	}
	// The fallback, rating and query checks of core/conversation, by
	// their field names.
	switch {
	case filter.Fallback != "" && filter.Fallback != domain.FallbackFilterSome && filter.Fallback != domain.FallbackFilterNone:
		return domain.Page[domain.Conversation]{}, domain.InvalidField("fallback", "must be yes or no")
	case filter.Rating != "" && filter.Rating != domain.RatingUp && filter.Rating != domain.RatingDown:
		return domain.Page[domain.Conversation]{}, domain.InvalidField("rating", "must be up or down")
	case filter.Query != "" && (utf8.RuneCountInString(filter.Query) < domain.MinConversationQueryLength ||
		utf8.RuneCountInString(filter.Query) > domain.MaxConversationQueryLength):
		return domain.Page[domain.Conversation]{}, domain.InvalidField("q", "must be 3 to 200 characters")
	}
	if filter.AgentSlug != "" {
		if _, err := f.agents.Get(context.Background(), ws, filter.AgentSlug); err != nil {
			return domain.Page[domain.Conversation]{}, err
		}
	}
	var all []domain.Conversation
	for _, c := range f.convs {
		if c.WorkspaceID == ws && (filter.AgentSlug == "" || c.AgentSlug == filter.AgentSlug) && (filter.Status == "" || c.Status == filter.Status) &&
			(filter.ActiveFrom.IsZero() || !c.LastActivityAt.Before(filter.ActiveFrom)) && (filter.ActiveBefore.IsZero() || c.LastActivityAt.Before(filter.ActiveBefore)) &&
			f.matches(c, filter) {
			all = append(all, c)
		}
	}
	return pageOf(all, page, func(c domain.Conversation) domain.Position { return domain.Position{Time: c.LastActivityAt, ID: c.ID} }), nil
}

// matches checks the fallback, rating and query filters on the
// conversation's messages and contact.
func (f *fakeConversations) matches(c domain.Conversation, filter conversation.ListFilter) bool {
	fallback, up, down := false, false, false
	lower := strings.ToLower(filter.Query)
	found := filter.Query == "" || strings.Contains(strings.ToLower(c.ContactName+" "+c.ContactEmail), lower)
	for _, m := range f.msgs[c.ID] {
		fallback = fallback || m.FallbackReason != domain.FallbackNone
		if m.Feedback != nil {
			up, down = up || m.Feedback.Rating == domain.RatingUp, down || m.Feedback.Rating == domain.RatingDown
		}
		found = found || (m.Role != domain.RoleSystem && strings.Contains(strings.ToLower(m.Content), lower))
	}
	return found && (filter.Fallback == "" || fallback == (filter.Fallback == domain.FallbackFilterSome)) &&
		(filter.Rating != domain.RatingUp || up) && (filter.Rating != domain.RatingDown || down)
}

// pageOf cuts a page after page.After (by id) of at most page.Limit.
func pageOf[T any](all []T, page domain.PageRequest, pos func(T) domain.Position) domain.Page[T] {
	start := 0
	if page.After != nil {
		for i, x := range all {
			if pos(x).ID == page.After.ID {
				start = i + 1
			}
		}
	}
	limit := page.Limit
	if limit == 0 {
		limit = domain.DefaultPageLimit
	}
	rest := all[start:]
	if len(rest) <= limit {
		return domain.Page[T]{Items: rest}
	}
	next := pos(rest[limit-1])
	return domain.Page[T]{Items: rest[:limit], HasMore: true, Next: &next}
}

func (f *fakeConversations) find(ws, id string) (domain.Conversation, bool) {
	if !domain.ValidID(domain.PrefixSession, id) {
		return domain.Conversation{}, false
	}
	for _, c := range f.convs {
		if c.ID == id && c.WorkspaceID == ws {
			return c, true
		}
	}
	return domain.Conversation{}, false
}

func (f *fakeConversations) Get(_ context.Context, ws, id string, page domain.PageRequest) (domain.Conversation, domain.Page[domain.Message], error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.find(ws, id)
	if !ok {
		return domain.Conversation{}, domain.Page[domain.Message]{}, domain.NotFound("conversation")
	}
	return c, pageOf(f.msgs[id], page, func(m domain.Message) domain.Position { return domain.Position{Time: m.CreatedAt, ID: m.ID} }), nil
}

func (f *fakeConversations) MessageTrace(_ context.Context, ws, convID, msgID string) (domain.RetrievalTrace, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.find(ws, convID); !ok {
		return domain.RetrievalTrace{}, domain.NotFound("message")
	}
	for _, m := range f.msgs[convID] {
		if t, ok := f.traces[msgID]; ok && m.ID == msgID {
			return t, nil
		}
	}
	return domain.RetrievalTrace{}, domain.NotFound("message")
}

// fakeChat answers as the engine would from the caller's side: it checks
// the message, resolves the session in the request's workspace (or the
// agent of a new one), and stores the question and an answer citing
// cited, with a trace; a question containing "unknown" gets the fallback.
//
// A request with an IdempotencyKey is answered once, as the engine does:
// the same key and request again replays the answer (runs counts only
// real answers), another request with the key is a conflict, and a key
// whose answer is still being written is domain.ErrAnswerInProgress.
type fakeChat struct {
	mu       sync.Mutex
	convs    *fakeConversations
	agents   *fakeAgents
	requests []chat.Request
	// cited is the document the answers cite.
	cited string
	// keyed holds the keyed requests by workspace and key; runs counts
	// the answers generated.
	keyed map[string]*keyedAsk
	runs  int
}

type keyedAsk struct {
	hash string
	// answer is nil while the answer is being written.
	answer *domain.Answer
}

type fakeTurn struct {
	f    *fakeChat
	conv domain.Conversation
	q    string
	// key is where the answer is kept for a retry ("" without a key);
	// replay is the answer a retry gets.
	key    string
	replay *domain.Answer
}

// keyedRequest looks a keyed request up as the engine's answeredBefore
// does; a new one is marked as being answered.
func (f *fakeChat) keyedRequest(ws string, req chat.Request) (*fakeTurn, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.keyed == nil {
		f.keyed = map[string]*keyedAsk{}
	}
	k, hash := ws+"|"+req.IdempotencyKey, req.AgentSlug+"|"+req.Session.ID+"|"+req.Message
	switch got, ok := f.keyed[k]; {
	case !ok:
		f.keyed[k] = &keyedAsk{hash: hash}
		return nil, nil
	case got.hash != hash:
		return nil, &domain.ConflictError{Message: "key used with another request", Details: map[string]string{"Idempotency-Key": "was used with a different request"}}
	case got.answer == nil:
		return nil, domain.ErrAnswerInProgress
	default:
		return &fakeTurn{f: f, replay: got.answer}, nil
	}
}

func (f *fakeChat) Start(ctx context.Context, req chat.Request) (console.Turn, error) {
	f.mu.Lock()
	f.requests = append(f.requests, req)
	f.mu.Unlock()
	if err := domain.ValidateMessageText(req.Message, domain.MaxMessageLength); err != nil {
		return nil, err
	}
	if req.Session.Workspace == nil {
		return nil, domain.InvalidField("sessionId", "is required")
	}
	ws := req.Session.Workspace.ID
	if req.IdempotencyKey != "" {
		if err := domain.ValidateIdempotencyKey(req.IdempotencyKey); err != nil {
			return nil, err
		}
		replay, err := f.keyedRequest(ws, req)
		if err != nil || replay != nil {
			return replay, err
		}
	}
	key := ""
	if req.IdempotencyKey != "" {
		key = ws + "|" + req.IdempotencyKey
	}
	if req.Session.ID != "" {
		f.convs.mu.Lock()
		c, ok := f.convs.find(ws, req.Session.ID)
		f.convs.mu.Unlock()
		if !ok {
			return nil, domain.NotFound("session")
		}
		return &fakeTurn{f: f, conv: c, q: req.Message, key: key}, nil
	}
	a, err := f.agents.Get(ctx, ws, req.AgentSlug)
	if err != nil {
		return nil, err
	}
	c := f.convs.add(domain.Conversation{WorkspaceID: ws, AgentID: a.ID, AgentSlug: a.Slug, Channel: req.Channel})
	return &fakeTurn{f: f, conv: c, q: req.Message, key: key}, nil
}

// Run stores the question and the answer and, when emit is set, emits
// them as the engine's stream does: the USER message, the answer's text in
// two tokens, then done.
func (t *fakeTurn) Run(_ context.Context, emit chat.Emit) (domain.Answer, error) {
	if t.replay != nil {
		if emit != nil {
			emit(domain.SessionEvent{Type: domain.EventDone, SessionID: t.replay.SessionID, Answer: t.replay})
		}
		return *t.replay, nil
	}
	reply := domain.Message{ID: domain.NewID(domain.PrefixMessage), Role: domain.RoleAssistant, Content: "You asked: " + t.q, CreatedAt: fakeNow.Add(time.Second),
		Citations: []domain.Citation{{DocumentName: t.f.cited, SourceID: "src_1", SourceType: domain.SourceText, Snippet: "snippet of " + t.f.cited, Score: 0.82}},
		Trace: &domain.RetrievalTrace{Question: t.q, Query: t.q, Method: "hybrid", Verdict: domain.VerdictAnswer, Answerability: 0.9, Threshold: 0.3,
			Candidates: []domain.TraceCandidate{{DocumentName: t.f.cited, Relevance: 0.9, Kept: true, Reason: domain.TraceKept}}}}
	if strings.Contains(t.q, "unknown") {
		reply.Content, reply.Citations, reply.FallbackReason = "Sorry, I do not know.", nil, domain.FallbackNoKnowledge
	}
	question := domain.Message{ID: domain.NewID(domain.PrefixMessage), ConversationID: t.conv.ID, Role: domain.RoleUser, Content: t.q, CreatedAt: fakeNow}
	t.f.convs.mu.Lock()
	t.f.convs.appendLocked(t.conv.ID, question, reply)
	t.f.convs.mu.Unlock()
	answer := domain.Answer{SessionID: t.conv.ID, UserMessage: question, Reply: reply, IsFallback: reply.FallbackReason != "", FallbackReason: reply.FallbackReason}
	t.f.mu.Lock()
	t.f.runs++
	if t.key != "" {
		t.f.keyed[t.key].answer = &answer
	}
	t.f.mu.Unlock()
	if emit != nil {
		msg := question
		emit(domain.MessageEvent(msg))
		half := len(reply.Content) / 2
		emit(domain.SessionEvent{Type: domain.EventToken, SessionID: t.conv.ID, MessageID: reply.ID, Seq: 1, Content: reply.Content[:half]})
		emit(domain.SessionEvent{Type: domain.EventToken, SessionID: t.conv.ID, MessageID: reply.ID, Seq: 2, Content: reply.Content[half:]})
		emit(domain.SessionEvent{Type: domain.EventDone, SessionID: t.conv.ID, MessageID: reply.ID, Seq: 3, Answer: &answer})
	}
	return answer, nil
}
