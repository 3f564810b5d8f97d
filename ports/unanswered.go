package ports

import (
	"context"
	"time"

	"github.com/conciergehq/concierge/core/domain"
)

// UnansweredStore keeps the unanswered questions and their topics (issue
// 18, items 3 and 4). The store notices unanswered questions itself
// (fallbacks, ratings down, handoffs), whatever path wrote them; grouping
// them is the worker's.
type UnansweredStore interface {
	// GroupPendingQuestions claims up to limit ungrouped questions,
	// skipping any another worker holds, and for each calls choose with
	// the domain.TopicCandidates most recently active open topics of its
	// agent, then adds it to the chosen topic or to a new one (at now), in
	// one transaction. A question already in a topic for another reason
	// joins that topic without counting twice. It returns how many it
	// grouped; fewer than limit means none was left.
	GroupPendingQuestions(ctx context.Context, now time.Time, limit int,
		choose func(domain.UnansweredQuestion, []domain.UnansweredTopic) domain.TopicChoice) (int, error)
	// ListTopics returns a page of q's topics (Examples left empty).
	ListTopics(ctx context.Context, q domain.TopicQuery) (domain.TopicPage, error)
	// GetTopic returns a topic with its domain.TopicExamples newest
	// questions. Returns domain.ErrNotFound unless the topic is the
	// agent's, in the workspace.
	GetTopic(ctx context.Context, workspaceID, agentID, topicID string) (domain.UnansweredTopic, error)
	// AddressTopic marks the topic addressed by the Q&A source sourceID at
	// now and links the source to its newest domain.MaxTopicLinks
	// questions' conversations and messages. Returns domain.ErrNotFound
	// unless the topic is the agent's, in the workspace.
	AddressTopic(ctx context.Context, workspaceID, agentID, topicID, sourceID string, now time.Time) error
	// Question returns the visitor's USER message messageID as a question:
	// its text, and its topic (TopicID "" when it is in none). Returns
	// domain.ErrNotFound unless the message is a USER message of a
	// conversation of the agent, in the workspace.
	Question(ctx context.Context, workspaceID, agentID, conversationID, messageID string) (domain.UnansweredQuestion, error)
	// AddressQuestion links the Q&A source to the visitor's USER message
	// messageID of the agent's conversation, and marks the message's topic
	// addressed, if it is in one; it returns that topic's id or "".
	// Returns domain.ErrNotFound unless the message is a USER message of a
	// conversation of the agent, in the workspace.
	AddressQuestion(ctx context.Context, workspaceID, agentID, conversationID, messageID, sourceID string, now time.Time) (string, error)
}
