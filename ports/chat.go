package ports

import (
	"context"
	"time"

	"github.com/conciergehq/concierge/core/domain"
)

// LLMMessage is one turn of the conversation as the model sees it.
type LLMMessage struct {
	// Role is "user", "assistant" or "tool".
	Role    string
	Content string
	// ToolCalls are the calls an assistant turn asked for.
	ToolCalls []domain.ToolCall
	// ToolCallID names the call a "tool" turn answers.
	ToolCallID string
}

// ToolSpec offers the model a tool.
type ToolSpec struct {
	Name        string
	Description string
	// Parameters is the JSON Schema of the arguments object.
	Parameters []byte
}

// CompletionRequest is one model turn.
type CompletionRequest struct {
	// Model overrides the adapter's configured model; "" keeps it.
	Model string
	// System is the agent's system prompt with the engine's rules.
	System string
	// Messages is recent history, the user's message last, then any tool rounds.
	Messages []LLMMessage
	// Knowledge is the retrieved context, best first. Adapters present it to
	// the model as quoted data, numbered [1], [2], ... in this order, never as
	// instructions.
	Knowledge []domain.Chunk
	// Tools may be called; empty means the model must answer directly.
	Tools []ToolSpec
	// MaxTokens caps the answer (0: the adapter's default).
	MaxTokens int
	// Answerability is retrieval's estimate, in [0, 1], that Knowledge
	// answers the question (domain.RetrievalTrace.Answerability), or 0
	// when retrieval made no such judgement. A model may lean on it when
	// the passages put the question's words otherwise.
	Answerability float64
}

// Completion is what the model produced in one turn.
type Completion struct {
	Content   string
	ToolCalls []domain.ToolCall
	// Cited lists the ids of Knowledge chunks the answer relies on. The engine
	// keeps only ids that were actually retrieved for this answer.
	Cited []string
	// Declined is true when the model said, instead of answering, that the
	// Knowledge passages do not answer the question. ToolCalls is then
	// empty: a decline is never a tool the engine runs. Content is whatever
	// the model produced before it decided (usually nothing); it has been
	// passed to onDelta already, so the caller decides whether text already
	// shown stands.
	Declined bool
	Usage    domain.Usage
	// Model names the model that produced it, as the price table
	// (CONCIERGE_LLM_PRICES) names it: the request's Model, or the
	// adapter's configured one.
	Model string
}

// LLM generates answers.
type LLM interface {
	// Complete runs one model turn, calling onDelta with each fragment of
	// Content in order as it is produced; the fragments concatenate to
	// Content. An error from onDelta stops generation and is returned.
	// Returns an error wrapping domain.ErrUnavailable when the provider cannot
	// be reached or keeps failing, domain.ErrRateLimited when it throttles us
	// after retries, and domain.ErrInvalidInput when it refuses the request.
	// Provider error text is never part of the returned message.
	// An adapter that can let the model decline in a structured way (a
	// tool or a response format it parses) offers it when the request
	// carries Knowledge and reports it as Completion.Declined, never as a
	// tool call or as text.
	Complete(ctx context.Context, req CompletionRequest, onDelta func(string) error) (Completion, error)
}

// RetrievalQuery asks for an agent's knowledge about some text.
type RetrievalQuery struct {
	WorkspaceID string
	AgentID     string
	Text        string
	// Context is earlier text a follow-up leans on (the conversation's
	// previous questions): searched along with Text, but what the question
	// is about comes from Text alone, so a word of Context that the
	// knowledge lacks never makes the question unanswerable. Usually "".
	Context string
	// Limit is the agent's top-k; 0 uses the retriever's default.
	Limit int
	// Threshold drops chunks whose relevance (in [0, 1]) is below it.
	Threshold float64
	// KnowledgeVersion is the agent's knowledge version as the caller read
	// it; a cached index older than this is not used.
	KnowledgeVersion int64
	// Trace, when not nil, receives what the retrieval considered.
	Trace *domain.RetrievalTrace
}

// Retriever finds knowledge.
type Retriever interface {
	// Retrieve returns up to q.Limit chunks of the agent's READY sources that
	// match q.Text, best first. Finding nothing is not an error.
	Retrieve(ctx context.Context, q RetrievalQuery) ([]domain.Chunk, error)
}

// KeyedQuestions finds chat questions by their Idempotency-Key, so a retried
// request gets the answer it already has instead of asking again.
type KeyedQuestions interface {
	// KeyedQuestion returns the question stored in the workspace under the
	// scoped key (domain.Message.IdempotencyKey), and its reply when that
	// is stored (nil while the answer is in progress). Returns
	// domain.ErrNotFound when no question has the key.
	KeyedQuestion(ctx context.Context, workspaceID, key string) (question domain.Message, reply *domain.Message, err error)
}

// InterruptedAnswers finds answers whose generation stopped without storing
// them (their process died) and closes them.
type InterruptedAnswers interface {
	// AnswersStartedBefore returns answers in progress that started before
	// t, oldest first, at most limit.
	AnswersStartedBefore(ctx context.Context, t time.Time, limit int) ([]domain.AnswerInProgress, error)
	// CloseAnswer stores reply, the outcome of the interrupted answer a
	// (reply.ID is a.ReplyID), with its deliveries, ends the answer in
	// progress and releases its question's Idempotency-Key, so that a retry
	// asks again, in one transaction. closed is false and nothing is
	// written when the reply was stored meanwhile (the answer finished
	// after all) or the conversation is gone; the answer in progress is
	// ended either way.
	CloseAnswer(ctx context.Context, a domain.AnswerInProgress, reply domain.Message, deliveries ...domain.Delivery) (closed bool, err error)
}
