package domain

import (
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Agent answers end users on behalf of a workspace. Its slug is unique within
// the workspace; Seq orders agents by creation so "the first agent" is stable.
type Agent struct {
	ID          string
	WorkspaceID string
	Slug        string
	// WidgetSlug is the agent's claim on the service-wide address
	// /chat/{slug}: its slug when it was the first agent anywhere to take
	// that address, "" when another agent held it (see WidgetAddress).
	WidgetSlug string
	Name       string
	Config     AgentConfig
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
	// RetrievalThreshold is the least answerability, in [0, 1], the agent
	// answers with; below it the agent falls back.
	RetrievalThreshold float64
	// PrimaryColor is the widget's accent colour, "#rrggbb" in lowercase.
	PrimaryColor string
	// AvatarURL is the image the widget shows in its header: "" or an
	// absolute https URL (the page is https; http would be mixed content).
	AvatarURL string
	// AllowedOrigins are the sites that may embed the widget in a frame,
	// each "scheme://host[:port]" in lowercase; empty allows every site.
	AllowedOrigins []string
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
	MaxAvatarURLLength        = 2048
	MaxAllowedOrigins         = 20
)

// DefaultPrimaryColor is the widget's accent colour when an agent sets none.
const DefaultPrimaryColor = "#2563eb"

// Retrieval defaults for agents that do not set them. The threshold is the
// least answerability (the reranker's calibrated chance that the knowledge
// answers the question) an agent answers with; it was chosen on the tuning
// halves of the evaluation sets in testdata/eval (docs/benchmarks.md).
const (
	DefaultRetrievalTopK      = 5
	DefaultRetrievalThreshold = 0.35
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
	if err := validateTexts(textField{"name", a.Name}); err != nil {
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
	fields := []textField{{"systemPrompt", c.SystemPrompt}, {"welcomeMessage", c.WelcomeMessage}, {"fallbackMessage", c.FallbackMessage},
		{"model", c.Model}, {"primaryColor", c.PrimaryColor}, {"avatarUrl", c.AvatarURL}}
	for _, q := range c.SuggestedQuestions {
		fields = append(fields, textField{"suggestedQuestions", q})
	}
	for _, t := range c.BlockedTopics {
		fields = append(fields, textField{"blockedTopics", t})
	}
	for _, o := range c.AllowedOrigins {
		fields = append(fields, textField{"allowedOrigins", o})
	}
	if err := validateTexts(fields...); err != nil {
		return err
	}
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
	if err := validateModel(c.Model); err != nil {
		return err
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
	return c.validateWidget()
}

// modelNamePattern is what a model name after "openai:" may look like: the
// names OpenAI-compatible servers use ("gpt-4o-mini",
// "meta-llama/Llama-3.1-8B-Instruct", "llama3:8b", "org@model+v2").
var modelNamePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:/@+-]*$`)

// validateModel checks an agent's model choice: empty (the deployment's
// default), "local", "openai", or "openai:<model name>". Anything else was
// accepted once and then silently answered by the default model; now it
// is refused when it is set.
func validateModel(model string) error {
	if model == "" {
		return nil
	}
	const want = "must be local, openai or openai:<model name> (letters, digits and . _ : / @ + -)"
	provider, name, named := strings.Cut(model, ":")
	switch {
	case len(model) > MaxModelChars:
		return InvalidField("model", "must be at most 100 characters")
	case provider == "local" && !named:
		return nil
	case provider == "openai" && !named:
		return nil
	case provider == "openai" && modelNamePattern.MatchString(name):
		return nil
	default:
		return InvalidField("model", want)
	}
}

var colorPattern = regexp.MustCompile(`^#[0-9a-fA-F]{6}$`)

// validateWidget checks and normalises what the widget shows and who may
// frame it. The origins end up in a Content-Security-Policy header, so
// anything but a plain scheme, host and port is refused, never escaped.
func (c *AgentConfig) validateWidget() error {
	c.PrimaryColor = strings.TrimSpace(c.PrimaryColor)
	if c.PrimaryColor == "" {
		c.PrimaryColor = DefaultPrimaryColor
	}
	if !colorPattern.MatchString(c.PrimaryColor) {
		return InvalidField("primaryColor", "must be a colour in the form #rrggbb")
	}
	c.PrimaryColor = strings.ToLower(c.PrimaryColor)

	c.AvatarURL = strings.TrimSpace(c.AvatarURL)
	if c.AvatarURL != "" {
		if len(c.AvatarURL) > MaxAvatarURLLength {
			return InvalidField("avatarUrl", "must be at most 2048 characters")
		}
		u, err := url.Parse(c.AvatarURL)
		if err != nil || !strings.EqualFold(u.Scheme, "https") || u.Host == "" || u.User != nil || !validHost(u.Hostname()) {
			return InvalidField("avatarUrl", "must be an absolute https:// URL")
		}
	}

	if len(c.AllowedOrigins) > MaxAllowedOrigins {
		return InvalidField("allowedOrigins", "must have at most 20 entries")
	}
	origins := make([]string, 0, len(c.AllowedOrigins))
	seen := make(map[string]bool, len(c.AllowedOrigins))
	for _, raw := range c.AllowedOrigins {
		origin, err := NormalizeOrigin(raw)
		if err != nil {
			return err
		}
		if !seen[origin] {
			seen[origin] = true
			origins = append(origins, origin)
		}
	}
	if len(origins) == 0 {
		origins = nil
	}
	c.AllowedOrigins = origins
	return nil
}

// NormalizeOrigin checks an origin that may embed the widget and returns it
// as scheme://host[:port] in lowercase. Paths, queries, fragments, user
// info and wildcards are refused: the origin goes into a CSP
// frame-ancestors list verbatim.
func NormalizeOrigin(raw string) (string, error) {
	bad := InvalidField("allowedOrigins", "entries must be origins such as https://www.example.com or http://localhost:3000 (scheme, host and optional port, nothing else)")
	raw = strings.TrimSpace(raw)
	if raw == "" || len(raw) > 300 {
		return "", bad
	}
	u, err := url.Parse(raw)
	if err != nil || u.User != nil || u.Opaque != "" || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" ||
		(u.Path != "" && u.Path != "/") {
		return "", bad
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "https" && scheme != "http" {
		return "", bad
	}
	host := strings.ToLower(u.Hostname())
	if !validHost(host) {
		return "", bad
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]" // an IPv6 literal keeps its brackets
	}
	if port := u.Port(); port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port {
			return "", bad
		}
		host += ":" + port
	} else if strings.HasSuffix(u.Host, ":") {
		return "", bad
	}
	return scheme + "://" + host, nil
}

// validHost accepts a DNS name (letters, digits, inner hyphens, dots) or
// an IP address.
func validHost(host string) bool {
	if host == "" || len(host) > 253 {
		return false
	}
	if net.ParseIP(host) != nil {
		return true
	}
	for _, label := range strings.Split(strings.TrimSuffix(host, "."), ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
				return false
			}
		}
	}
	return true
}

// EffectivePrimaryColor returns the agent's colour, or the default for
// agents stored before they had one.
func (c *AgentConfig) EffectivePrimaryColor() string {
	if c.PrimaryColor == "" {
		return DefaultPrimaryColor
	}
	return c.PrimaryColor
}

// WidgetAddress is the {slug} of the agent's widget page /chat/{slug}: its
// claimed widget slug, or its id when another agent holds that address.
// Ids contain '_', which slugs never do, so the two cannot collide.
func (a *Agent) WidgetAddress() string {
	if a.WidgetSlug != "" {
		return a.WidgetSlug
	}
	return a.ID
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
