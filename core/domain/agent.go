package domain

import (
	"regexp"
	"strings"
	"time"
)

// Agent answers end users on behalf of a workspace. Its slug is unique within
// the workspace; Seq orders agents by creation so "the first agent" is stable.
type Agent struct {
	ID          string
	WorkspaceID string
	Slug        string
	Name        string
	Config      AgentConfig
	// KnowledgeVersion changes whenever the agent's indexed knowledge does;
	// retrieval caches compare it with what they hold.
	KnowledgeVersion int64
	Seq              int64
	CreatedAt        time.Time
	UpdatedAt        time.Time
}

// AgentConfig is what the answer engine uses. Only a published agent answers
// on public channels.
type AgentConfig struct {
	SystemPrompt       string
	WelcomeMessage     string
	SuggestedQuestions []string
	FallbackMessage    string
	Published          bool
	// Model picks the language model: "" for the deployment's default, a
	// provider ("local", "openai"), or provider:model ("openai:gpt-4o-mini").
	Model string
	// BlockedTopics are words or phrases the agent refuses to discuss.
	BlockedTopics []string
	// RetrievalTopK is how many chunks of knowledge an answer may use.
	RetrievalTopK int
	// RetrievalThreshold drops chunks whose relevance, in [0, 1], is lower.
	RetrievalThreshold float64
}

// Limits on agent fields.
const (
	MaxSlugLength             = 64
	MaxAgentNameLength        = 200
	MaxSystemPromptLength     = 20000
	MaxWelcomeMessageLength   = 2000
	MaxFallbackMessageLength  = 2000
	MaxSuggestedQuestions     = 10
	MaxSuggestedQuestionChars = 300
	MaxBlockedTopics          = 50
	MaxBlockedTopicChars      = 100
	MaxModelChars             = 100
	MaxRetrievalTopK          = 20
)

// Retrieval defaults for agents that do not set them. The threshold was
// chosen on the evaluation set in testdata/eval (see docs/benchmarks.md).
const (
	DefaultRetrievalTopK      = 5
	DefaultRetrievalThreshold = 0.2
)

// DefaultFallbackMessage is used when an agent sets none.
const DefaultFallbackMessage = "Sorry, I don't have an answer to that. Would you like to talk to a person?"

var slugPattern = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$`)

// ValidateSlug checks a slug: 1 to 64 lowercase letters, digits and inner hyphens.
func ValidateSlug(slug string) error {
	if slug == "" {
		return InvalidField("slug", "is required")
	}
	if !slugPattern.MatchString(slug) {
		return InvalidField("slug", "must be 1 to 64 lowercase letters, digits or hyphens, starting and ending with a letter or digit")
	}
	return nil
}

// Validate checks the agent's own invariants and normalises its fields.
func (a *Agent) Validate() error {
	if err := ValidateSlug(a.Slug); err != nil {
		return err
	}
	a.Name = strings.TrimSpace(a.Name)
	if a.Name == "" {
		return InvalidField("name", "is required")
	}
	if len([]rune(a.Name)) > MaxAgentNameLength {
		return InvalidField("name", "must be at most 200 characters")
	}
	return a.Config.Validate()
}

// Validate checks the configuration's limits.
func (c *AgentConfig) Validate() error {
	switch {
	case len([]rune(c.SystemPrompt)) > MaxSystemPromptLength:
		return InvalidField("systemPrompt", "must be at most 20000 characters")
	case len([]rune(c.WelcomeMessage)) > MaxWelcomeMessageLength:
		return InvalidField("welcomeMessage", "must be at most 2000 characters")
	case len([]rune(c.FallbackMessage)) > MaxFallbackMessageLength:
		return InvalidField("fallbackMessage", "must be at most 2000 characters")
	case len(c.SuggestedQuestions) > MaxSuggestedQuestions:
		return InvalidField("suggestedQuestions", "must have at most 10 entries")
	}
	questions := c.SuggestedQuestions[:0:0]
	for _, q := range c.SuggestedQuestions {
		q = strings.TrimSpace(q)
		if q == "" {
			return InvalidField("suggestedQuestions", "must not contain blank entries")
		}
		if len([]rune(q)) > MaxSuggestedQuestionChars {
			return InvalidField("suggestedQuestions", "entries must be at most 300 characters")
		}
		questions = append(questions, q)
	}
	c.SuggestedQuestions = questions
	if len(c.BlockedTopics) > MaxBlockedTopics {
		return InvalidField("blockedTopics", "must have at most 50 entries")
	}
	topics := c.BlockedTopics[:0:0]
	for _, t := range c.BlockedTopics {
		t = strings.TrimSpace(t)
		if t == "" || len([]rune(t)) > MaxBlockedTopicChars {
			return InvalidField("blockedTopics", "entries must be 1 to 100 characters")
		}
		topics = append(topics, t)
	}
	c.BlockedTopics = topics
	c.Model = strings.TrimSpace(c.Model)
	if len(c.Model) > MaxModelChars || strings.ContainsAny(c.Model, " \t\n") {
		return InvalidField("model", "must be a provider such as local or openai, optionally with :model")
	}
	if c.RetrievalTopK == 0 {
		c.RetrievalTopK = DefaultRetrievalTopK
	}
	if c.RetrievalTopK < 1 || c.RetrievalTopK > MaxRetrievalTopK {
		return InvalidField("retrievalTopK", "must be between 1 and 20")
	}
	// NaN fails both comparisons, so it is refused too.
	if !(c.RetrievalThreshold >= 0 && c.RetrievalThreshold <= 1) {
		return InvalidField("retrievalThreshold", "must be between 0 and 1")
	}
	return nil
}

// ModelChoice splits Model into provider and model name.
func (c *AgentConfig) ModelChoice() (provider, model string) {
	provider, model, _ = strings.Cut(c.Model, ":")
	return provider, model
}

// EffectiveFallbackMessage returns the agent's fallback or the default one.
func (c *AgentConfig) EffectiveFallbackMessage() string {
	if strings.TrimSpace(c.FallbackMessage) == "" {
		return DefaultFallbackMessage
	}
	return c.FallbackMessage
}
