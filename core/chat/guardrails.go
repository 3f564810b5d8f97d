package chat

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/conciergehq/concierge/core/domain"
)

// injectionPatterns catch the common ways users try to override an agent's
// instructions. They run on a normalised copy of the message (lower case,
// single spaces), so spacing and case tricks do not slip through.
var injectionPatterns = []*regexp.Regexp{
	regexp.MustCompile(`(?s)\b(ignore|disregard|forget|override|bypass)\b.{0,40}\b(previous|prior|above|earlier|all|your|the|any)\b.{0,30}\b(instructions?|prompts?|rules|directives|guidelines)\b`),
	regexp.MustCompile(`(?s)\b(reveal|print|show|repeat|output|display|leak|dump)\b.{0,40}\b(system prompt|system message|hidden (instructions?|prompt)|initial (instructions?|prompt)|original (instructions?|prompt)|your (instructions|prompt|system prompt))\b`),
	regexp.MustCompile(`(?s)\b(what is|what's|tell me|give me)\b.{0,20}\b(your )?(system prompt|system message|hidden instructions|initial prompt)\b`),
	regexp.MustCompile(`(?s)\byou are (now|no longer)\b.{0,40}\b(dan|unrestricted|unfiltered|jailbroken|developer mode|free of)\b`),
	regexp.MustCompile(`(?s)\b(enable|enter|activate|switch to)\b.{0,20}\b(developer|debug|god|jailbreak|dan) mode\b`),
	regexp.MustCompile(`(?s)\bpretend (that )?you (have no|are not bound by|don't have)\b.{0,30}\b(rules|restrictions|guidelines|limits)\b`),
	// A fake role line only when it goes on to give orders, so a pasted
	// "System: Windows 11" is not mistaken for one.
	regexp.MustCompile(`(^|\n)\s*(system|assistant|developer)\s*:\s*(you\b|ignore|from now on|new instructions|override|forget)`),
	regexp.MustCompile(`<\|?(im_start|im_end|system|endoftext)\|?>`),
}

// checkInput is the outcome of the input guardrails: FallbackNone lets the
// message through. Length is not among them: Start refuses a message over
// the limit before anything is stored.
func checkInput(text string, blockedTopics []string) domain.FallbackReason {
	if !hasContent(text) {
		return domain.FallbackEmptyMessage
	}
	norm := normalise(text)
	for _, p := range injectionPatterns {
		if p.MatchString(norm) {
			return domain.FallbackPromptInjection
		}
	}
	padded := " " + wordsOnly(norm) + " "
	for _, topic := range blockedTopics {
		if t := wordsOnly(normalise(topic)); t != "" && strings.Contains(padded, " "+t+" ") {
			return domain.FallbackBlockedTopic
		}
	}
	return domain.FallbackNone
}

// hasContent reports whether text has a letter or digit: zero-width
// characters, emoji-only or punctuation-only messages carry no question.
func hasContent(text string) bool {
	for _, r := range text {
		if unicode.IsLetter(r) || unicode.IsNumber(r) {
			return true
		}
	}
	return false
}

// normalise lowercases and folds every run of white space (and zero-width
// characters, which hide words from patterns) into one space.
func normalise(text string) string {
	var b strings.Builder
	b.Grow(len(text))
	space := false
	for _, r := range strings.ToLower(text) {
		switch {
		case r == '\u200b' || r == '\u200c' || r == '\u200d' || r == '\ufeff':
			continue
		case r == '\n':
			b.WriteRune('\n')
			space = false
		case unicode.IsSpace(r):
			if !space {
				b.WriteByte(' ')
			}
			space = true
		default:
			b.WriteRune(r)
			space = false
		}
	}
	return b.String()
}

// wordsOnly keeps letters and digits, with single spaces between words, so
// topics match whole words regardless of punctuation.
func wordsOnly(text string) string {
	var b strings.Builder
	space := true
	for _, r := range text {
		if unicode.IsLetter(r) || unicode.IsNumber(r) {
			b.WriteRune(r)
			space = false
		} else if !space {
			b.WriteByte(' ')
			space = true
		}
	}
	return strings.TrimSpace(b.String())
}

// Output filter limits.
const (
	// minLeakRun is the shortest run of system-prompt text worth holding back.
	minLeakRun = 20
	// leakRun is how much of the system prompt in a row counts as revealing it.
	leakRun = 60
)

// outputFilter sits between the model and the client. It follows the
// longest run of system-prompt text ending at the latest character the model
// produced, holds that run back while it could be the start of a recital,
// and stops the answer once the run reaches leakRun: at most minLeakRun
// characters of the prompt can ever reach the client. It also caps the
// answer's length. Tokens already sent cannot be taken back, so it decides
// before releasing.
type outputFilter struct {
	prompt   string // lower-cased system prompt; "" disables leak checks
	maxChars int

	text     strings.Builder // everything the model produced
	runStart int             // byte offset where the current prompt run starts
	released int             // bytes of text already released
	chars    int             // runes released
	leaked   bool
	capped   bool
}

func newOutputFilter(systemPrompt string, maxChars int) *outputFilter {
	p := strings.ToLower(strings.TrimSpace(systemPrompt))
	if utf8.RuneCountInString(p) < leakRun {
		// A prompt shorter than a leak run cannot leak by that measure; short
		// prompts are usually generic ("be kind") anyway.
		p = ""
	}
	return &outputFilter{prompt: p, maxChars: maxChars}
}

// push adds a fragment and returns the text that may be sent now, and
// whether generation should stop (leak or length cap).
func (f *outputFilter) push(delta string) (string, bool) {
	if f.leaked || f.capped {
		return "", true
	}
	if f.prompt == "" {
		f.text.WriteString(delta)
		return f.release(f.text.String()[f.released:])
	}
	for _, r := range delta {
		f.text.WriteRune(r)
		f.extendRun()
		if f.runLen() >= leakRun {
			f.leaked = true
			// Release nothing of the run; what came before it may go.
			end := max(f.runStart, f.released)
			out, _ := f.release(f.text.String()[f.released:end])
			return out, true
		}
	}
	end := f.text.Len()
	if f.runLen() >= minLeakRun {
		end = max(f.runStart, f.released)
	}
	return f.release(f.text.String()[f.released:end])
}

// extendRun moves the run's start forward until the text from it to the end
// occurs in the prompt (case-insensitively). Each character is added and
// dropped at most once, so the whole answer costs O(length) lookups.
func (f *outputFilter) extendRun() {
	text := f.text.String()
	for f.runStart < len(text) && !strings.Contains(f.prompt, strings.ToLower(text[f.runStart:])) {
		_, size := utf8.DecodeRuneInString(text[f.runStart:])
		f.runStart += size
	}
}

func (f *outputFilter) runLen() int { return utf8.RuneCountInString(f.text.String()[f.runStart:]) }

// flush returns what is still held once the model has finished: a short run
// of prompt text at the very end is harmless.
func (f *outputFilter) flush() string {
	if f.leaked || f.capped {
		return ""
	}
	out, _ := f.release(f.text.String()[f.released:])
	return out
}

// release counts out towards the length cap, cutting it on a rune boundary.
func (f *outputFilter) release(out string) (string, bool) {
	n := utf8.RuneCountInString(out)
	if f.chars+n > f.maxChars {
		keep := f.maxChars - f.chars
		cut := 0
		for i := range out {
			if keep == 0 {
				cut = i
				break
			}
			keep--
		}
		out = out[:cut]
		f.capped = true
	}
	f.released += len(out)
	f.chars += utf8.RuneCountInString(out)
	return out, f.capped
}
