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
	regexp.MustCompile(`\b(ignore|disregard|forget|override|bypass)\b.{0,40}\b(previous|prior|above|earlier|all|your|the|any)\b.{0,30}\b(instructions?|prompts?|rules|directives|guidelines)\b`),
	regexp.MustCompile(`\b(reveal|print|show|repeat|output|display|tell me|give me|what is|what are|leak)\b.{0,40}\b(system prompt|system message|hidden (instructions?|prompt)|initial (instructions?|prompt)|your (instructions|prompt|rules))\b`),
	regexp.MustCompile(`\byou are (now|no longer)\b.{0,40}\b(dan|unrestricted|unfiltered|jailbroken|developer mode|free of)\b`),
	regexp.MustCompile(`\b(enable|enter|activate|switch to)\b.{0,20}\b(developer|debug|god|jailbreak|dan) mode\b`),
	regexp.MustCompile(`\bpretend (that )?you (have no|are not bound by|don't have)\b.{0,30}\b(rules|restrictions|guidelines|limits)\b`),
	regexp.MustCompile(`(^|\n)\s*(system|assistant)\s*:\s`),
	regexp.MustCompile(`<\|?(im_start|im_end|system|endoftext)\|?>`),
}

// inputVerdict is the outcome of the input guardrails: FallbackNone lets the
// message through.
func checkInput(text string, maxChars int, blockedTopics []string) domain.FallbackReason {
	if !hasContent(text) {
		return domain.FallbackEmptyMessage
	}
	if utf8.RuneCountInString(text) > maxChars {
		return domain.FallbackTooLong
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

// outputFilter sits between the model and the client. It holds back text
// that could be the start of the agent's system prompt and stops the answer
// once a long run of it appears, and it caps the answer's length. Because
// tokens already sent cannot be taken back, it decides before releasing.
type outputFilter struct {
	prompt   string // lower-cased system prompt; "" disables leak checks
	maxChars int

	text     strings.Builder // everything the model produced
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
	f.text.WriteString(delta)
	all := f.text.String()
	pending := all[f.released:]
	hold := 0
	if f.prompt != "" {
		hold = f.promptSuffix(pending)
		if hold >= leakRun {
			f.leaked = true
			return "", true
		}
		if hold < minLeakRun {
			hold = 0
		}
	}
	out := pending[:len(pending)-hold]
	return f.release(out)
}

// flush returns what is still held once the model has finished.
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

// promptSuffix returns the byte length of the longest suffix of s that occurs
// in the system prompt (case-insensitively). Occurrence is monotonic in the
// suffix length, so a binary search needs about log2(len) lookups.
func (f *outputFilter) promptSuffix(s string) int {
	lo, hi := 0, min(len(s), 4*leakRun)
	for lo < hi {
		mid := (lo + hi + 1) / 2
		start := len(s) - mid
		for start > 0 && !utf8.RuneStart(s[start]) {
			start--
		}
		if strings.Contains(f.prompt, strings.ToLower(s[start:])) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}
