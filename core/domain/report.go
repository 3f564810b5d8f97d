package domain

import "time"

// Reports (issue 18): what the agent resolved and failed, per workspace and
// agent, over a range of days. docs/outcomes.md explains every figure.
//
// One rule keeps every figure checkable: a report counts the conversations
// that STARTED in its range (created_at, UTC days), outside the console's
// playground, and every figure about them (their messages, outcomes,
// fallbacks, ratings, tokens) belongs to the day the conversation started,
// even when it happened later. So a number in a report is always a set of
// conversations a list can show (ConversationFilter's StartedFrom and
// StartedBefore with the figure's own filter), and a day's figures only
// grow or shift between outcomes as its conversations go on.

// ReportMaxDays bounds a report's range.
const ReportMaxDays = 366

// ReportRange is a range of whole UTC days: From is a midnight, To the
// midnight after the range's last day.
type ReportRange struct {
	From, To time.Time
}

// Days is how many days the range spans.
func (r ReportRange) Days() int { return int(r.To.Sub(r.From) / (24 * time.Hour)) }

// ReportPreset names a range relative to today (UTC).
type ReportPreset string

// Presets. "last_7_days" ends with today: today and the six days before.
const (
	PresetToday         ReportPreset = "today"
	PresetYesterday     ReportPreset = "yesterday"
	PresetLast7Days     ReportPreset = "last_7_days"
	PresetLast30Days    ReportPreset = "last_30_days"
	PresetLast90Days    ReportPreset = "last_90_days"
	PresetMonthToDate   ReportPreset = "month_to_date"
	PresetLastMonth     ReportPreset = "last_month"
	DefaultReportPreset              = PresetLast30Days
)

// ReportPresets lists the presets in the order screens offer them.
var ReportPresets = []ReportPreset{PresetToday, PresetYesterday, PresetLast7Days,
	PresetLast30Days, PresetLast90Days, PresetMonthToDate, PresetLastMonth}

// Range returns the preset's days as of now. An unknown preset is an
// InvalidField("preset", ...).
func (p ReportPreset) Range(now time.Time) (ReportRange, error) {
	now = now.UTC()
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	tomorrow := today.AddDate(0, 0, 1)
	switch p {
	case PresetToday:
		return ReportRange{From: today, To: tomorrow}, nil
	case PresetYesterday:
		return ReportRange{From: today.AddDate(0, 0, -1), To: today}, nil
	case PresetLast7Days:
		return ReportRange{From: today.AddDate(0, 0, -6), To: tomorrow}, nil
	case PresetLast30Days:
		return ReportRange{From: today.AddDate(0, 0, -29), To: tomorrow}, nil
	case PresetLast90Days:
		return ReportRange{From: today.AddDate(0, 0, -89), To: tomorrow}, nil
	case PresetMonthToDate:
		return ReportRange{From: today.AddDate(0, 0, 1-today.Day()), To: tomorrow}, nil
	case PresetLastMonth:
		first := today.AddDate(0, 0, 1-today.Day())
		return ReportRange{From: first.AddDate(0, -1, 0), To: first}, nil
	}
	return ReportRange{}, InvalidField("preset", "must be one of today, yesterday, last_7_days, last_30_days, last_90_days, month_to_date, last_month")
}

// NewReportRange checks an explicit range of days, from its first day to
// its last day, both included, as callers write it ("from=2026-11-01&
// to=2026-11-30"). Both must be UTC midnights; to may not precede from,
// and the range may not exceed ReportMaxDays.
func NewReportRange(first, last time.Time) (ReportRange, error) {
	isMidnight := func(t time.Time) bool {
		t = t.UTC()
		return t.Hour() == 0 && t.Minute() == 0 && t.Second() == 0 && t.Nanosecond() == 0
	}
	switch {
	case first.IsZero() || !isMidnight(first):
		return ReportRange{}, InvalidField("from", "must be a day, as 2026-11-01")
	case last.IsZero() || !isMidnight(last):
		return ReportRange{}, InvalidField("to", "must be a day, as 2026-11-30")
	case last.Before(first):
		return ReportRange{}, InvalidField("to", "must not be before from")
	}
	r := ReportRange{From: first.UTC(), To: last.UTC().AddDate(0, 0, 1)}
	if r.Days() > ReportMaxDays {
		return ReportRange{}, InvalidField("to", "a report spans at most 366 days")
	}
	return r, nil
}

// ReportQuery asks for one workspace's report; AgentID "" is every agent.
type ReportQuery struct {
	WorkspaceID string
	AgentID     string
	Range       ReportRange
}

// ReportFigures are the counts of one set of conversations (a range, or
// one day of it). Each count is of conversations unless its name says
// otherwise, so each links to a conversation list.
type ReportFigures struct {
	// Conversations started (not in the playground).
	Conversations int
	// Messages is how many messages those conversations hold, the
	// visitor's, the agent's and people's (notes excluded): a count of
	// messages, not conversations.
	Messages int
	// Outcomes counts the decided conversations by outcome; Undecided
	// those not decided yet (still within 24 h of quiet, or never asked
	// anything).
	Outcomes  map[Outcome]int
	Undecided int
	// FallbackConversations had at least one fallback answer;
	// FallbacksByReason counts conversations with at least one fallback
	// answer of each reason (a conversation can count under several).
	FallbackConversations int
	FallbacksByReason     map[FallbackReason]int
	// HandedOff were ever handed to people (a handoff requested, or a
	// member took over).
	HandedOff int
	// RatedUp and RatedDown have at least one answer rated so; ThumbsUp
	// and ThumbsDown count the ratings themselves (answers), for CSAT.
	RatedUp, RatedDown   int
	ThumbsUp, ThumbsDown int
}

// Rate is n as a share of the figures' conversations, 0 when there are none.
func (f ReportFigures) Rate(n int) float64 {
	if f.Conversations == 0 {
		return 0
	}
	return float64(n) / float64(f.Conversations)
}

// CSAT is the share of rated answers rated up; ok is false when no answer
// was rated.
func (f ReportFigures) CSAT() (share float64, ok bool) {
	if f.ThumbsUp+f.ThumbsDown == 0 {
		return 0, false
	}
	return float64(f.ThumbsUp) / float64(f.ThumbsUp+f.ThumbsDown), true
}

// DurationFigure is the median of one duration over the conversations that
// have it. Medians come from rolled-up histograms, so Median is exact to
// the histogram's bucket (docs/outcomes.md gives the buckets).
type DurationFigure struct {
	// Count is how many conversations have the duration.
	Count int
	// Median is zero when Count is.
	Median time.Duration
}

// UsageFigure is one agent's and model's token use in a report, with its
// estimated cost from the configured price table.
type UsageFigure struct {
	AgentID          string
	Model            string
	PromptTokens     int64
	CompletionTokens int64
	// CostMicros is the estimated cost in millionths of CostCurrency; -1
	// when the price table has no price for the model.
	CostMicros   int64
	CostCurrency string
}

// ReportDay is one day's figures, for charts.
type ReportDay struct {
	Day time.Time
	ReportFigures
}

// Report answers a ReportQuery.
type Report struct {
	Query ReportQuery
	// Totals over the whole range; Days one entry per day of the range,
	// in order, days without conversations included (zeros).
	Totals ReportFigures
	Days   []ReportDay
	// FirstReply is the time from a conversation's first handoff request
	// (or take-over) to the first message a person wrote to the visitor;
	// Resolution from a conversation's start to its last move to RESOLVED.
	FirstReply DurationFigure
	Resolution DurationFigure
	// Usage is the LLM tokens the range's conversations cost, by agent and
	// model, largest first.
	Usage []UsageFigure
	// AsOf is when the rollups behind the report were last brought up to
	// date: figures may lag events by up to the worker's sweep interval.
	AsOf time.Time
}

// ModelPrice is what a model's tokens cost, in millionths of Currency per
// million tokens (so 0.15 USD per million prompt tokens is 150000).
type ModelPrice struct {
	PromptMicrosPerMillion     int64
	CompletionMicrosPerMillion int64
	Currency                   string
}

// PriceTable prices models by name, from configuration
// (CONCIERGE_LLM_PRICES); the embedded local model costs nothing.
type PriceTable map[string]ModelPrice

// Cost estimates tokens of model in micros of the model's currency; -1 and
// "" when the table has no price for it.
func (t PriceTable) Cost(model string, prompt, completion int64) (micros int64, currency string) {
	p, ok := t[model]
	if !ok {
		return -1, ""
	}
	// Rounded up per call of Cost: an estimate should not undercount.
	total := prompt*p.PromptMicrosPerMillion + completion*p.CompletionMicrosPerMillion
	return (total + 999_999) / 1_000_000, p.Currency
}
