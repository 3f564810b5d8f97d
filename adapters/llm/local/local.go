// Package local is the embedded language model: an extractive answerer that
// needs no network and no weights, and gives the same answer to the same
// request every time. It is the default model, the one `make run` uses on a
// fresh machine.
//
// It answers the last "user" message of the request (tool rounds after it
// are ignored) from req.Knowledge only, and never invents anything: every
// answer is quoted from the knowledge it was given.
//
//   - Words are compared after normalisation: lowercased, punctuation and
//     English stopwords dropped, lightly stemmed ("returns", "returned" and
//     "returning" meet), with a short list of support synonyms ("delivery"
//     for "shipping") counting half. In a message that tells a story before
//     asking ("I ordered last week. How long does shipping take?"), words
//     outside its questions count half.
//   - The question's focus is what it asks about: the content words of
//     its questions that are not generic in support questions ("how
//     much", "cost", "account", "get") nor describe the situation ("keep",
//     "right away", "different"), numbers, times or amounts. Words of the
//     clause that asks ("where does it keep my password?" after "When I
//     run docker login,") must each be found in the knowledge, directly,
//     by synonym or within one edit of a word of five letters or more (two
//     for long words: "pasword", "instal" and "authentification" are
//     forgiven); if one is in none of the passages ("Do you ship to
//     Canada?" over a shipping policy that does not name Canada), Content
//     is "", unless req.Answerability (retrieval's judgement that the
//     passages answer) is 0.75 or more: the word is then more likely put
//     otherwise ("evict" for "revoke") than absent. The noun after
//     "which" or "what" is exempt: "Which countries do you ship to?" is
//     answered by a list. Those words must also be found together: the
//     passages an answer quotes must hold them between them (all but a
//     fifth of them, rounded down), else Content is "" ("Do recovery
//     codes expire?" is not answered from a page about recovery codes
//     when only a page about invitations says "expire"), and the answer
//     starts in a passage that holds them on its own when one does; a
//     req.Answerability of 0.75 or more lifts this too. A message that asks nothing
//     is held to this only when it is as short as a search ("shipping
//     canada"), not when it tells a story.
//   - If the question of a Q&A chunk matches the user's well (weighted F1
//     overlap of 0.65 or more), the answer is that chunk's answer text,
//     whole, citing that chunk. A question written in a text chunk (a FAQ
//     page: "Can I change my address?" then the answer) is matched the same
//     way and answered with the sentences that follow it.
//   - Otherwise every sentence of the chunks is scored by the question's
//     words it contains, weighted like IDF across the sentences, with
//     bonuses for question bigrams, for the kind of answer asked for (a
//     duration for "how long", an amount for "how much") and for words also
//     found in the sentence's context (document name, Q&A question, section
//     heading), which also earns half credit for words found only there.
//     Only sentences that contain the focus may be quoted: one of its most
//     specific words (weighted like IDF, within 80% of the heaviest), in
//     the sentence or its section's heading, or 60% of its weight; and a
//     question about a price ("how much does it cost") is answered only by
//     sentences with an amount. A sentence's score is weighted by its
//     chunk's Score relative to the best chunk's, squared: retrieval
//     weighed the whole passage, which one sentence cannot. The words of
//     a web address (a Markdown link's target, a bare URL) do not count.
//     The answer quotes the best sentence, the next sentence of its
//     paragraph when that one refers back to it ("However, ...", "This
//     ..."), or the next two whatever they say when the best one only
//     says again what the message describes or announces what follows
//     ("The following example shows ..."), and sentences that add to it,
//     three at most, at most
//     Options.MaxAnswerChars bytes, grouped by chunk and in their original
//     order; ties go to the better-ranked chunk. Completion.Cited lists the quoted chunks' IDs,
//     deduplicated, in order of use. A chunk's first line naming its
//     section path ("Billing > Invoices") is context, never quoted.
//   - When Knowledge is empty, the question has no content word (small talk
//     such as "hi" or "thanks"), or no sentence covers enough of the question
//     (30% of the weight of its four heaviest words), Content is "" and Cited
//     is nil: the engine then answers with the agent's fallback message. The
//     engine relies on this contract.
//
// Knowledge is data: the model only quotes it and never follows it. It never
// quotes a sentence that looks like a prompt injection ("ignore previous
// instructions", "system prompt"), nor one that overlaps req.System, which it
// reads for no other purpose.
//
// The model never calls tools, even when req.Tools offers some: it answers
// from the Knowledge it was given, so Completion.ToolCalls is always empty.
//
// Content is streamed to onDelta in word-sized fragments (a word with its
// punctuation and the whitespace after it) that concatenate exactly to
// Content. Usage is an estimate: one token per four characters (runes),
// rounded up, for the system prompt, each message, tool call, tool spec and
// knowledge chunk, plus four tokens of framing per message and per chunk.
//
// A Model is immutable after New and safe for concurrent use; each call
// works on its own memory.
package local

import (
	"context"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// Options configures a Model. The zero value is ready to use.
type Options struct {
	// TokenDelay is waited between streamed fragments, to let demos and
	// tests behave like a slow remote model. 0, the default, streams at once.
	TokenDelay time.Duration
	// MaxAnswerChars caps an extracted answer, in bytes (default 600). A Q&A
	// answer is used whole, only cut by the request's MaxTokens.
	MaxAnswerChars int
	// Related returns synonyms of a word (the retriever's WordNet table),
	// so a question's focus is found in passages that say it in other
	// words; nil uses the model's small built-in groups only.
	Related func(word string) []string
	// Known reports whether a lowercase word is a dictionary word (the
	// retriever's WordNet table). A question word the knowledge lacks, that
	// is no dictionary word and is one edit from a filler word ("anyting"),
	// is taken for that word misspelt; nil takes no word for one.
	Known func(word string) bool
}

// DefaultMaxAnswerChars is the cap of an extracted answer when
// Options.MaxAnswerChars is 0.
const DefaultMaxAnswerChars = 600

// Model is the embedded extractive model.
type Model struct {
	opts Options
}

var _ ports.LLM = (*Model)(nil)

// New returns a Model with opts, defaults filled in.
func New(opts Options) *Model {
	if opts.MaxAnswerChars <= 0 {
		opts.MaxAnswerChars = DefaultMaxAnswerChars
	}
	if opts.TokenDelay < 0 {
		opts.TokenDelay = 0
	}
	return &Model{opts: opts}
}

// ModelName is the embedded model's name in stored replies and the price
// table, where it costs nothing.
const ModelName = "local"

// Complete answers the request's last user message from req.Knowledge,
// streaming the answer to onDelta (which may be nil). Content is "" when
// nothing relevant was found. It returns ctx.Err() if ctx ends before the
// answer is fully streamed, and the error of onDelta if that fails; in both
// cases the Completion holds what was streamed so far, its citations and its
// usage. It never returns tool calls and never fails otherwise.
func (m *Model) Complete(ctx context.Context, req ports.CompletionRequest, onDelta func(string) error) (ports.Completion, error) {
	comp := ports.Completion{Usage: domain.Usage{PromptTokens: promptTokens(req)}, Model: ModelName}
	if err := ctx.Err(); err != nil {
		return comp, err
	}
	maxChars, qaMaxChars := m.opts.MaxAnswerChars, 0
	if req.MaxTokens > 0 {
		qaMaxChars = 4 * req.MaxTokens
		maxChars = min(maxChars, qaMaxChars)
	}
	content, cited := answer(lastUserMessage(req.Messages), req.Knowledge, req.System, maxChars, qaMaxChars, m.opts.Related, m.opts.Known, req.Answerability)
	if content != "" {
		comp.Cited = cited
	}
	sent, err := m.stream(ctx, content, onDelta)
	comp.Content = content[:sent]
	comp.Usage.CompletionTokens = estimateTokens(comp.Content)
	return comp, err
}

// lastUserMessage is the question: the last "user" turn, even when tool
// rounds follow it.
func lastUserMessage(msgs []ports.LLMMessage) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" {
			return msgs[i].Content
		}
	}
	return ""
}

// stream sends content to onDelta one word at a time and returns how many
// bytes were delivered.
func (m *Model) stream(ctx context.Context, content string, onDelta func(string) error) (int, error) {
	var timer *time.Timer
	if m.opts.TokenDelay > 0 {
		timer = time.NewTimer(m.opts.TokenDelay)
		defer timer.Stop()
	}
	sent := 0
	for sent < len(content) {
		if err := ctx.Err(); err != nil {
			return sent, err
		}
		// The pace applies between fragments: the first one goes at once, so
		// benchmarks of the service's time to first token measure the service.
		if timer != nil && sent > 0 {
			timer.Reset(m.opts.TokenDelay)
			select {
			case <-ctx.Done():
				return sent, ctx.Err()
			case <-timer.C:
			}
		}
		end := nextToken(content, sent)
		if onDelta != nil {
			if err := onDelta(content[sent:end]); err != nil {
				return sent, err
			}
		}
		sent = end
	}
	return sent, nil
}

// nextToken returns the end of the fragment starting at i: a run of
// non-space characters (a word with its punctuation) and the whitespace
// after it.
func nextToken(s string, i int) int {
	inSpace := false
	for i < len(s) {
		r, n := rune(s[i]), 1
		if r >= utf8.RuneSelf {
			r, n = utf8.DecodeRuneInString(s[i:])
		}
		space := unicode.IsSpace(r)
		if inSpace && !space {
			return i
		}
		inSpace = inSpace || space
		i += n
	}
	return i
}

// estimateTokens estimates the tokens of s: one per four runes, rounded up.
func estimateTokens(s string) int {
	return (utf8.RuneCountInString(s) + 3) / 4
}

// framingTokens is the estimated per-message (and per-chunk) overhead.
const framingTokens = 4

// promptTokens estimates what the request would cost a real model: the system
// prompt, every message and every knowledge chunk with its names.
func promptTokens(req ports.CompletionRequest) int {
	n := estimateTokens(req.System)
	for _, msg := range req.Messages {
		n += framingTokens + estimateTokens(msg.Content)
		for _, call := range msg.ToolCalls {
			n += estimateTokens(call.Name) + estimateTokens(call.Arguments)
		}
	}
	for _, t := range req.Tools {
		n += estimateTokens(t.Name) + estimateTokens(t.Description) + (len(t.Parameters)+3)/4
	}
	for i := range req.Knowledge {
		c := &req.Knowledge[i]
		n += framingTokens + estimateTokens(c.DocumentName) + estimateTokens(c.Question) + estimateTokens(c.Text)
	}
	return n
}
