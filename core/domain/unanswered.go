package domain

import (
	"math"
	"sort"
	"strings"
	"time"
	"unicode"
)

// Unanswered questions (issue 18, item 3): a visitor's question the agent
// failed on, grouped with similar ones into topics the team can answer
// (item 4, "improve an answer"). docs/unanswered.md explains them.

// UnansweredReason is why a question counts as unanswered.
type UnansweredReason string

// Reasons, as the API names them.
const (
	// ReasonFallback: the agent's answer was its fallback, for any reason
	// but HUMAN_ACTIVE (a person owned the conversation: nothing failed).
	ReasonFallback UnansweredReason = "FALLBACK"
	// ReasonRatedDown: the visitor rated the answer down.
	ReasonRatedDown UnansweredReason = "RATED_DOWN"
	// ReasonHandedOff: after the question the conversation was handed to
	// people (a handoff request or a member taking over).
	ReasonHandedOff UnansweredReason = "HANDED_OFF"
)

// UnansweredReasons lists every reason, in the order screens show them.
var UnansweredReasons = []UnansweredReason{ReasonFallback, ReasonRatedDown, ReasonHandedOff}

// TopicStatus is whether the team has answered a topic.
type TopicStatus string

// Topic statuses.
const (
	TopicOpen      TopicStatus = "OPEN"
	TopicAddressed TopicStatus = "ADDRESSED"
)

// PrefixTopic starts unanswered topic ids.
const PrefixTopic = "utp_"

// UnansweredQuestion is one visitor question the agent failed on, for one
// reason. The same question failing for two reasons (a fallback, then a
// handoff) is two rows of one question: the topic counts it once.
type UnansweredQuestion struct {
	WorkspaceID    string
	AgentID        string
	ConversationID string
	// MessageID is the visitor's USER message.
	MessageID string
	Reason    UnansweredReason
	Text      string
	AskedAt   time.Time
	// TopicID is "" until the worker groups the question.
	TopicID string
}

// UnansweredTopic is a group of similar unanswered questions of one agent.
type UnansweredTopic struct {
	ID          string
	WorkspaceID string
	AgentID     string
	// Label is the topic's most representative question so far.
	Label string
	// Count is how many distinct questions the topic holds; Reasons counts
	// them per reason (a question may count under two).
	Count       int
	Reasons     map[UnansweredReason]int
	FirstSeenAt time.Time
	LastSeenAt  time.Time
	Status      TopicStatus
	// SourceID is the Q&A source that answered the topic; "" while open.
	SourceID    string
	AddressedAt time.Time
	// Examples are a few of its questions, newest first (detail reads only).
	Examples []UnansweredQuestion
	// Terms is the topic's term profile: for each term, how many of its
	// questions hold it. Grouping reads it; screens do not.
	Terms map[string]int
}

// TopicOrder orders a topic list.
type TopicOrder string

// Topic orders: newest activity first, or most questions first.
const (
	TopicsRecent  TopicOrder = "recent"
	TopicsLargest TopicOrder = "largest"
)

// TopicQuery asks for one page of an agent's topics.
type TopicQuery struct {
	WorkspaceID string
	AgentID     string
	Order       TopicOrder
	// Status filters by status; "" lists both.
	Status TopicStatus
	Limit  int
	// After is the last topic of the previous page: its LastSeenAt (recent)
	// or Count (largest), and its ID. Nil for the first page.
	After *TopicPosition
}

// TopicPosition is a keyset position in a topic list.
type TopicPosition struct {
	LastSeenAt time.Time
	Count      int
	ID         string
}

// TopicPage is one page of topics.
type TopicPage struct {
	Items   []UnansweredTopic
	HasMore bool
	Next    *TopicPosition
}

// TopicAnswer is the team's answer to a topic or to one answer of a
// conversation: the question as the Q&A source will hold it, and the
// answer.
type TopicAnswer struct {
	Question string
	Answer   string
}

// Validate checks an answer before a source is made of it.
func (a *TopicAnswer) Validate() error {
	if err := validateTexts(textField{"question", a.Question}, textField{"answer", a.Answer}); err != nil {
		return err
	}
	a.Question, a.Answer = strings.TrimSpace(a.Question), strings.TrimSpace(a.Answer)
	fields := map[string]string{}
	if a.Question == "" {
		fields["question"] = "is required"
	} else if len([]rune(a.Question)) > MaxQuestionLength {
		fields["question"] = "must be at most 2000 characters"
	}
	if a.Answer == "" {
		fields["answer"] = "is required"
	} else if len([]rune(a.Answer)) > MaxAnswerLength {
		fields["answer"] = "must be at most 20000 characters"
	}
	if len(fields) > 0 {
		msg := "question and answer are required"
		if len(fields) == 1 {
			for f, why := range fields {
				msg = f + " " + why
			}
		}
		return &ValidationError{Message: msg, Fields: fields}
	}
	return nil
}

// Grouping. A question joins the open topic of its agent it is most
// similar to (TopicSimilarity), if that similarity reaches
// TopicMatchThreshold; otherwise it starts a topic. Only the
// TopicCandidates most recently active open topics are compared, so one
// assignment costs the same at ten topics or a hundred thousand.
const (
	// TopicMatchThreshold was chosen on the tuning half of
	// testdata/unanswered_pairs.tsv (see unanswered_test.go and
	// docs/unanswered.md for both halves' figures).
	TopicMatchThreshold = 0.55
	// TopicCandidates bounds the open topics one question is compared to.
	TopicCandidates = 200
	// TopicExamples is how many example questions a topic shows.
	TopicExamples = 5
	// MaxTopicTerms bounds a topic's term profile: the terms most of its
	// questions share are what matches; a long tail of one-off words
	// (numbers, names) only makes the profile heavier to read.
	MaxTopicTerms = 40
	// MaxTopicLinks bounds the conversations a new Q&A source is linked to.
	MaxTopicLinks = 100
)

// QuestionTerms are a question's terms for grouping: its content words
// (TopicWords: stop words and generic support words out), folded to a
// crude stem and to one word per synonym group, so "refunds", "refunded"
// and "money back" meet. Sorted, without duplicates.
func QuestionTerms(text string) []string {
	lower := strings.ToLower(text)
	for phrase, to := range termPhrases {
		if strings.Contains(lower, phrase) {
			lower = strings.ReplaceAll(lower, phrase, " "+to+" ")
		}
	}
	seen := map[string]bool{}
	for w := range TopicWords(lower) {
		if genericSupportWords[w] {
			continue
		}
		w = stem(w)
		if s, ok := termSynonyms[w]; ok {
			w = s
		}
		if genericSupportWords[w] || len(w) < 3 {
			continue
		}
		seen[w] = true
	}
	out := make([]string, 0, len(seen))
	for w := range seen {
		out = append(out, w)
	}
	sort.Strings(out)
	return out
}

// TopicSimilarity is the cosine between a question's terms (each weighing
// 1) and a topic's profile (each term weighing the share of the topic's
// questions that hold it): 1 when the topic's every question has exactly
// the question's terms, 0 when they share none. A topic of one question
// gives |A∩B| / sqrt(|A|·|B|).
func TopicSimilarity(terms []string, profile map[string]int) float64 {
	if len(terms) == 0 || len(profile) == 0 {
		return 0
	}
	var dot, norm float64
	for _, n := range profile {
		norm += float64(n) * float64(n)
	}
	for _, t := range terms {
		dot += float64(profile[t])
	}
	if dot == 0 {
		return 0
	}
	return dot / (math.Sqrt(float64(len(terms))) * math.Sqrt(norm))
}

// QuestionSimilarity is TopicSimilarity between two questions.
func QuestionSimilarity(a, b string) float64 {
	profile := map[string]int{}
	for _, t := range QuestionTerms(b) {
		profile[t] = 1
	}
	return TopicSimilarity(QuestionTerms(a), profile)
}

// BestTopic returns the index of the candidate most similar to terms and
// its similarity, or -1 when none reaches TopicMatchThreshold (or terms is
// empty: a question with no content word starts no match).
func BestTopic(terms []string, candidates []UnansweredTopic) (int, float64) {
	best, bestSim := -1, 0.0
	for i, c := range candidates {
		if sim := TopicSimilarity(terms, c.Terms); sim >= TopicMatchThreshold && sim > bestSim {
			best, bestSim = i, sim
		}
	}
	return best, bestSim
}

// stem folds common English endings: "refunds", "refunded", "refunding"
// are "refund"; "shipping" and "shipped" are "ship". Crude on purpose:
// both sides of a comparison are folded alike.
func stem(w string) string {
	for _, suf := range []string{"ing", "ed", "es", "s"} {
		if strings.HasSuffix(w, suf) && len(w)-len(suf) >= 3 && !strings.HasSuffix(w, "ss") {
			w = strings.TrimSuffix(w, suf)
			// "shipp" -> "ship", "cancell" -> "cancel".
			if n := len(w); n >= 4 && w[n-1] == w[n-2] && !unicode.IsDigit(rune(w[n-1])) {
				w = w[:n-1]
			}
			return w
		}
	}
	return w
}

// genericSupportWords are words nearly every support question holds; they
// make unrelated questions look alike ("my account", "an issue").
var genericSupportWords = map[string]bool{
	"account": true, "problem": true, "issue": true, "issu": true, "work": true, "working": true,
	"anything": true, "thing": true, "today": true, "time": true, "possible": true, "way": true,
	"customer": true, "support": true, "service": true, "info": true, "information": true,
	"trying": true, "try": true, "tri": true, "really": true, "wonder": true, "wondering": true,
	"find": true, "going": true, "right": true, "sure": true, "there": true, "happen": true,
}

// termPhrases rewrite multi-word expressions before splitting.
var termPhrases = map[string]string{
	"money back": "refund", "log in": "login", "sign in": "login", "signin": "login",
	"log on": "login", "sign up": "signup", "e-mail": "email", "opening hours": "hours",
	"open hours": "hours", "credit card": "card", "debit card": "card",
}

// termSynonyms fold words that mean the same in support questions to one
// term (after stemming).
var termSynonyms = map[string]string{
	"reimburs": "refund", "reimbursement": "refund", "repay": "refund",
	"cost": "price", "fee": "price", "pric": "price", "charg": "price", "charge": "price",
	"deliver": "ship", "delivery": "ship", "shipment": "ship", "postage": "ship", "arriv": "ship", "arrive": "ship",
	"parcel": "package", "packag": "package",
	"cancell": "cancel", "cancelation": "cancel", "cancellation": "cancel", "terminat": "cancel", "terminate": "cancel",
	"subscription": "plan", "membership": "plan",
	"passwords": "password", "passcode": "password", "pwd": "password",
	"mail": "email", "emails": "email",
	"purchas": "order", "purchase": "order", "bought": "order", "buy": "order",
	"exchang": "return", "exchange": "return",
	"locat": "address", "location": "address",
	"pay": "payment", "paid": "payment", "paying": "payment",
	"invoic": "invoice", "receipt": "invoice", "bill": "invoice", "billing": "invoice",
	"broke": "broken", "damag": "broken", "damaged": "broken", "defect": "broken", "defective": "broken",
	"delet": "delete", "remov": "delete", "remove": "delete",
}

// TopicChoice is grouping's decision for one question: its terms, and the
// candidate it joins (Index, with Score its similarity), or -1 for a new
// topic.
type TopicChoice struct {
	Terms []string
	Index int
	Score float64
}

// ChooseTopic groups q among candidates (an agent's recently active open
// topics): the best match at TopicMatchThreshold or above, else a new
// topic.
//
// A question with no content word ("hi", "??") has nothing to compare: it
// joins an open topic without terms whose label is the same text (case and
// spaces aside), so a hundred "hello"s make one topic, not a hundred.
func ChooseTopic(q UnansweredQuestion, candidates []UnansweredTopic) TopicChoice {
	terms := QuestionTerms(q.Text)
	if len(terms) == 0 {
		text := strings.Join(strings.Fields(strings.ToLower(q.Text)), " ")
		for i, c := range candidates {
			if len(c.Terms) == 0 && strings.Join(strings.Fields(strings.ToLower(c.Label)), " ") == text {
				return TopicChoice{Terms: terms, Index: i, Score: 1}
			}
		}
		return TopicChoice{Terms: terms, Index: -1}
	}
	i, score := BestTopic(terms, candidates)
	return TopicChoice{Terms: terms, Index: i, Score: score}
}

// LabelScore is how well a question represents a topic whose profile
// already counts it: the label is the question with the best score so
// far.
func LabelScore(terms []string, profile map[string]int) float64 {
	return TopicSimilarity(terms, profile)
}

// AddToProfile returns profile with terms counted once more, pruned to
// the MaxTopicTerms most frequent terms (ties to the alphabetically
// first, so every worker prunes alike).
func AddToProfile(profile map[string]int, terms []string) map[string]int {
	out := make(map[string]int, len(profile)+len(terms))
	for k, v := range profile {
		out[k] = v
	}
	for _, t := range terms {
		out[t]++
	}
	if len(out) <= MaxTopicTerms {
		return out
	}
	keys := make([]string, 0, len(out))
	for k := range out {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if out[keys[i]] != out[keys[j]] {
			return out[keys[i]] > out[keys[j]]
		}
		return keys[i] < keys[j]
	})
	for _, k := range keys[MaxTopicTerms:] {
		delete(out, k)
	}
	return out
}
