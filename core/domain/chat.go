package domain

// Chunk is a piece of an agent's knowledge found by retrieval. Retrieved text
// is data for the model, never instructions.
type Chunk struct {
	// ID identifies the chunk; for text and Q&A sources stored whole, it is
	// the source id.
	ID           string
	SourceID     string
	SourceType   SourceType
	DocumentName string
	URL          string
	// Heading is the heading path above the chunk ("Install > Linux"),
	// which Text's first line repeats; "" for a chunk without one (a Q&A
	// pair, a text source without headings, a document's preamble), whose
	// first line is the start of its text.
	Heading string
	Text    string
	// Question is set for Q&A sources, whose Text is the answer.
	Question string
	// Questions were written by a language model at index time: questions
	// the chunk answers, which retrieval matches like a title. They are not
	// knowledge and never go to the model answering.
	Questions []string
	// Score ranks chunks of one retrieval, higher is better; scales differ
	// between retrievers.
	Score float64
}

// Citation turns a chunk into the citation of an answer that used it.
func (c Chunk) Citation(snippet string) Citation {
	return Citation{DocumentName: c.DocumentName, SourceID: c.SourceID, SourceType: c.SourceType, URL: c.URL, Snippet: snippet, Score: c.Score}
}

// FallbackReason says why an answer is the agent's fallback message.
type FallbackReason string

// Fallback reasons. The guardrail reasons come from input checks; the others
// from retrieval, the model or tools.
const (
	FallbackNone         FallbackReason = ""
	FallbackNoKnowledge  FallbackReason = "NO_RELEVANT_KNOWLEDGE"
	FallbackEmptyMessage FallbackReason = "GUARDRAIL_EMPTY"
	// FallbackTooLong is no longer given: a message over the limit is
	// refused with a ValidationError before anything is stored. Replies
	// stored before that change still carry it.
	FallbackTooLong         FallbackReason = "GUARDRAIL_TOO_LONG"
	FallbackPromptInjection FallbackReason = "GUARDRAIL_PROMPT_INJECTION"
	FallbackBlockedTopic    FallbackReason = "GUARDRAIL_BLOCKED_TOPIC"
	FallbackModelError      FallbackReason = "MODEL_ERROR"
	// FallbackModelDeclined marks an answer whose model said, in the
	// structured way its adapter offers (ports.Completion.Declined), that
	// the retrieved passages do not answer the question, before it said
	// anything else.
	FallbackModelDeclined FallbackReason = "MODEL_DECLINED"
	FallbackToolError     FallbackReason = "TOOL_ERROR"
	FallbackHumanActive   FallbackReason = "HUMAN_ACTIVE"
	// FallbackInterrupted marks a reply stored for an answer whose
	// generation stopped (its process died): its content is what reached
	// the visitor, and its stream ended with an error event.
	FallbackInterrupted FallbackReason = "INTERRUPTED"
)

// ToolCall is the model asking to run one of the tools it was offered.
type ToolCall struct {
	ID   string
	Name string
	// Arguments is the JSON object the model produced, unvalidated.
	Arguments string
}

// Usage counts the tokens one answer cost.
type Usage struct {
	PromptTokens     int
	CompletionTokens int
}

// Answer is the outcome of one chat turn.
type Answer struct {
	SessionID      string
	UserMessage    Message
	Reply          Message
	IsFallback     bool
	FallbackReason FallbackReason
	OfferHandoff   bool
	Usage          Usage
}
