package chat

import (
	"context"
	"errors"
	"strings"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// Suggestion is a reply the agent drafts for a member to edit and send
// (Suggest). It is never stored, published or delivered.
type Suggestion struct {
	Draft     string
	Citations []domain.Citation
	// Fallback is true when the draft is the agent's fallback message:
	// nothing relevant was retrieved, the visitor's question hit a
	// guardrail, or the model declined or failed. FallbackReason says which.
	Fallback       bool
	FallbackReason domain.FallbackReason
}

// draftRoles are the messages a draft's context may hold. It is an
// allow-list on purpose: internal notes (and any role added later) never
// reach the model unless they are added here.
var draftRoles = map[domain.Role]bool{domain.RoleUser: true, domain.RoleAssistant: true, domain.RoleHuman: true}

// Suggest drafts a reply to a conversation's visitor from the knowledge of
// the conversation's agent, for a member of the workspace: the visitor's
// latest question, with the conversation's recent USER, ASSISTANT and
// HUMAN messages as context, goes through the same retrieval, guardrails,
// model and citation checks as an answer, with no tools (a tool may act,
// and a draft must not). Nothing is stored, published or delivered: the
// member edits the draft and sends it as a reply of their own.
//
// Drafting needs the handoff feature, like the replies it drafts: returns
// a domain.PlanError without it, domain.ErrNotFound for an unknown id or a
// conversation of another workspace, and a domain.ConflictError when the
// conversation has no visitor message to reply to.
func (s *Service) Suggest(ctx context.Context, ws *domain.Workspace, conversationID string) (Suggestion, error) {
	if !domain.ValidID(domain.PrefixSession, conversationID) {
		return Suggestion{}, domain.NotFound("conversation")
	}
	conv, err := s.conversations.GetConversation(ctx, ws.ID, conversationID)
	if err != nil {
		return Suggestion{}, err
	}
	if err := ws.Require(domain.FeatureHandoff); err != nil {
		return Suggestion{}, err
	}
	agent, err := s.agents.GetAgentByID(ctx, ws.ID, conv.AgentID)
	if err != nil {
		return Suggestion{}, err
	}
	// Notes and notices may crowd the latest messages: read more than the
	// model is given, then keep what it may see.
	recent, err := s.conversations.RecentMessages(ctx, ws.ID, conv.ID, 3*s.limits.HistoryMessages)
	if err != nil {
		return Suggestion{}, err
	}
	history, question, ok := draftContext(recent, s.limits.HistoryMessages)
	if !ok {
		return Suggestion{}, &domain.ConflictError{Message: "the conversation has no visitor message to reply to yet"}
	}

	if d := smallTalkDraft(question.Content); d != "" {
		return Suggestion{Draft: d, Citations: []domain.Citation{}}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.limits.Timeout)
	defer cancel()
	draft, cited, chunks, reason := s.draft(ctx, &agent, history, question)
	if reason != domain.FallbackNone {
		return Suggestion{Draft: agent.Config.EffectiveFallbackMessage(), Citations: []domain.Citation{}, Fallback: true, FallbackReason: reason}, nil
	}
	return Suggestion{Draft: draft, Citations: citations(chunks, cited)}, nil
}

// personHereReply is a member's answer to "are you a bot?" and "can I
// talk to a human?": the member sending it is that person.
const personHereReply = "You're talking to a person from the support team now. How can I help?"

// smallTalkDraft is the draft for a visitor's message that asks nothing of
// the knowledge (small talk, "ok", "no thanks"), written as a person of the
// team would, or "" when the message is to be searched. A greeting gets
// the plain greeting, not the agent's welcome message, which introduces
// the agent.
func smallTalkDraft(message string) string {
	switch domain.ClassifySmallTalk(message) {
	case domain.Greeting:
		return defaultGreetingReply
	case domain.Thanks:
		return thanksReply
	case domain.Farewell:
		return farewellReply
	case domain.AskedIfBot, domain.AskedForPerson:
		return personHereReply
	}
	switch domain.ClassifyAcknowledgement(message) {
	case domain.SaysNo, domain.SaysOK:
		return ackReply
	}
	return ""
}

// draftContext keeps the messages a draft may see (draftRoles) and splits
// them at the visitor's latest question: up to limit messages before it,
// and the question. ok is false when the visitor has asked nothing.
func draftContext(recent []domain.Message, limit int) (history []domain.Message, question domain.Message, ok bool) {
	kept := make([]domain.Message, 0, len(recent))
	for _, m := range recent {
		if draftRoles[m.Role] {
			kept = append(kept, m)
		}
	}
	last := -1
	for i := len(kept) - 1; i >= 0; i-- {
		if kept[i].Role == domain.RoleUser {
			last = i
			break
		}
	}
	if last < 0 {
		return nil, domain.Message{}, false
	}
	history = kept[:last]
	if len(history) > limit {
		history = history[len(history)-limit:]
	}
	return history, kept[last], true
}

// draft runs retrieval and one model turn for the question, and returns
// the text, the chunk ids it cited and the chunks retrieved, or why there
// is no draft.
func (s *Service) draft(ctx context.Context, agent *domain.Agent, history []domain.Message, question domain.Message) (string, []string, []domain.Chunk, domain.FallbackReason) {
	if verdict := checkInput(question.Content, agent.Config.BlockedTopics); verdict != domain.FallbackNone {
		return "", nil, nil, verdict
	}
	text := searchText{question: question.Content, query: question.Content}
	if isFollowUp(question.Content) {
		var earlier int
		if text.query, earlier = followUpQuery(question.Content, history); earlier > 0 {
			text.context = strings.TrimPrefix(text.query, question.Content+"\n")
		}
	}
	r := <-s.retrieveAsync(ctx, agent, text)
	if r.err != nil {
		s.log.ErrorContext(ctx, "retrieval for a suggested reply failed", "sessionId", question.ConversationID, "error", r.err)
		return "", nil, nil, domain.FallbackModelError
	}
	if len(r.chunks) == 0 {
		return "", nil, nil, domain.FallbackNoKnowledge
	}
	llm, model := s.modelFor(ctx, agent)
	req := ports.CompletionRequest{
		Model: model,
		System: systemPrompt(agent) + "- You are drafting a reply that a person of the support team will read, edit and send " +
			"to the customer as their own; write it to the customer.\n",
		Messages:  append(historyForModel(history), ports.LLMMessage{Role: "user", Content: question.Content}),
		Knowledge: r.chunks,
	}
	if r.trace != nil && r.trace.Verdict != "" {
		req.Answerability = r.trace.Answerability
	}
	filter := newOutputFilter(agent.Config.SystemPrompt, s.limits.MaxAnswerChars)
	var out strings.Builder
	comp, err := llm.Complete(ctx, req, func(delta string) error {
		text, stop := filter.push(delta)
		out.WriteString(text)
		if stop {
			return errStopped
		}
		return nil
	})
	switch {
	case err != nil && !errors.Is(err, errStopped):
		s.log.WarnContext(ctx, "model failed on a suggested reply", "sessionId", question.ConversationID, "error", err)
		return "", nil, nil, domain.FallbackModelError
	case comp.Declined:
		return "", nil, nil, domain.FallbackModelDeclined
	}
	out.WriteString(filter.flush())
	draft := out.String()
	switch {
	case filter.leaked:
		draft += leakNotice(draft)
	case filter.capped:
		draft += "…"
	}
	if strings.TrimSpace(draft) == "" {
		return "", nil, nil, domain.FallbackNoKnowledge
	}
	return draft, comp.Cited, r.chunks, domain.FallbackNone
}

// modelFor is the agent's model, or the default one when the agent names
// a provider this deployment has not configured.
func (s *Service) modelFor(ctx context.Context, agent *domain.Agent) (ports.LLM, string) {
	provider, model := agent.Config.ModelChoice()
	if llm := s.models[provider]; llm != nil {
		return llm, model
	}
	if provider != "" {
		s.log.WarnContext(ctx, "agent names an unconfigured model; using the default", "agent", agent.Slug, "model", agent.Config.Model)
	}
	return s.models[s.defaultModel], ""
}
