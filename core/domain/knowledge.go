package domain

import "time"

// Document is the text of one file or web page, extracted for indexing. Text
// is Markdown-like: headings are lines starting with '#', so the chunker can
// keep each chunk under its heading path.
type Document struct {
	// Title names the document: the file name, the page's <title> or its
	// first heading.
	Title string
	// URL is the page's address for web sources, after redirects; "" for files.
	URL  string
	Text string
}

// ChunkDraft is one piece of a document, ready to embed and store.
type ChunkDraft struct {
	// Ordinal is the chunk's position in its source, from 0.
	Ordinal int
	// Heading is the heading path above the chunk, "Install > Linux", or "".
	Heading string
	// Text is the chunk's content; its first line repeats the heading path
	// when there is one, so retrieval and the model see the context.
	Text string
	// Tokens is Text's length in the tokenizer's tokens.
	Tokens int
	// URL is the page the chunk came from (web sources).
	URL string
}

// CrawlLimits bound a website crawl.
type CrawlLimits struct {
	// MaxPages caps the pages visited (fetched successfully).
	MaxPages int
	// MaxDepth caps the link distance from the start page; sitemap entries
	// are depth 1.
	MaxDepth int
}

// StoredChunk is a chunk as the index job stores it.
type StoredChunk struct {
	ChunkDraft
	ID string
	// Question is set on the chunk of a Q&A source, whose Text is the answer.
	Question string
	// ContentHash identifies what was embedded, so identical text is embedded
	// once per workspace and embedder.
	ContentHash string
	// Vector is the L2-normalised embedding; nil when the text embeds to nothing.
	Vector []float32
	// Questions are the questions a language model wrote that the chunk
	// answers, searched along with its heading (see knowledge.QuestionWriter);
	// none unless the deployment writes them.
	Questions []string
	// QuestionsBy names the writer of Questions (IndexResult.QuestionsBy);
	// "" when none was asked or it failed, so a later indexing asks again.
	QuestionsBy string
}

// IndexResult is what indexing a source produced.
type IndexResult struct {
	ContentHash string
	Embedder    string
	// QuestionsBy names the question writer the chunks were indexed with
	// (model, questions per chunk, prompt version); "" when none.
	QuestionsBy string
	ChunkCount  int
	TokenCount  int
	PageCount   int
	// Note tells the source's owner about a partial result (a crawl cut
	// short by its time budget); it becomes the READY source's statusReason.
	Note string
	At   time.Time
}

// SourceRef names a source and the indexing generation a job is for.
type SourceRef struct {
	WorkspaceID string
	SourceID    string
	Generation  int
}

// RetrievalTrace records how one retrieval ranked an agent's knowledge, for
// admins tuning their agent: every chunk considered, its scores and why it
// was kept or dropped.
type RetrievalTrace struct {
	// Question is the user's message as asked; Query is the text actually
	// searched. They differ when a follow-up ("and how much is express?")
	// was widened with the conversation's earlier questions, which
	// QueryNote then says.
	Question  string
	Query     string
	QueryNote string
	// Method is "hybrid", "keyword" or "vector": the legs that ran.
	Method string
	// Note explains a degraded method ("the index is loading: keyword search
	// in PostgreSQL only").
	Note             string
	Embedder         string
	KnowledgeVersion int64
	TopK             int
	// Threshold is the least answerability the agent answers with.
	Threshold float64
	// Focus are the question's content words with their weight; Missing
	// those of them the best passage lacks.
	Focus   []FocusTerm
	Missing []string
	// Answerability is the estimated chance, in [0, 1], that the knowledge
	// answers the question; Verdict is what the retrieval decided from it.
	Answerability float64
	Verdict       string
	// AnswerFeatures are what Answerability was computed from (the best
	// candidate's page coverage, a name or number it lacks...),
	// named by AnswerFeatureNames: why the retrieval answered or fell back.
	AnswerFeatureNames []string
	AnswerFeatures     []float64
	// FeatureNames name the values of each candidate's Features.
	FeatureNames []string
	Candidates   []TraceCandidate
}

// FocusTerm is one content word of a question as retrieval weighed it.
type FocusTerm struct {
	Word string
	// Weight is its specificity, in [0, 1]: 1 for a word no passage holds,
	// less for words many passages hold or that any question may use.
	Weight float64
	// InKnowledge says whether any passage holds it; Typo that it was
	// matched to a passage word one letter away.
	InKnowledge, Typo bool
}

// Verdicts of a retrieval trace.
const (
	VerdictAnswer        = "answer: the best evidence addresses the question"
	VerdictNotAnswerable = "fallback: the best evidence does not address the question"
	VerdictNothingFound  = "fallback: no passage matches the question"
)

// TraceCandidate is one chunk a retrieval considered. Ranks count from 1; 0
// means the leg did not find the chunk.
type TraceCandidate struct {
	ChunkID      string
	SourceID     string
	DocumentName string
	KeywordRank  int
	KeywordScore float64
	VectorRank   int
	VectorScore  float64
	// Score is the score the final order uses; Relevance is it calibrated
	// into [0, 1], the chance that the passage is from a page that answers
	// the question. Features are what the reranker scored, named by the
	// trace's FeatureNames.
	Score     float64
	Relevance float64
	Features  []float64
	// Missing are the question's specific words the passage lacks.
	Missing []string
	// MatchedQuestion is the question written for the chunk at index time
	// (Chunk.Questions) that shares most of the visitor's words, "" when
	// none shares any: why a passage in other words was found.
	MatchedQuestion string
	Kept            bool
	// Reason says why the chunk was kept or dropped.
	Reason string
}

// Reasons of trace candidates.
const (
	TraceKept           = "kept: among the top results"
	TraceBelowThreshold = "dropped: score below the agent's threshold"
	TraceFarBelowBest   = "dropped: far less relevant than the best passage"
	TraceBeyondTopK     = "dropped: beyond the agent's top-k"
	TraceNotAnswerable  = "dropped: the knowledge does not answer the question"
)
