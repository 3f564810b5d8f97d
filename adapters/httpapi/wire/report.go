package wire

import (
	"github.com/conciergehq/concierge/core/conversation"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/core/report"
)

// ReportDTO is a report (issue 18) as GET /api/v2/analytics/report answers
// it and the console shows it: every figure with the link to the
// conversations behind it (Link decides where links point).
type ReportDTO struct {
	// Agent is the agent's slug, nil for every agent.
	Agent *string `json:"agent"`
	// Preset is the preset asked for (or the default), nil for a range of
	// explicit days.
	Preset *string `json:"preset"`
	// From and To are the first and the last day, both included.
	From string `json:"from"`
	To   string `json:"to"`
	Days int    `json:"days"`
	// AsOf is when the rollups were last brought up to date; nil before
	// the first sweep.
	AsOf       *string           `json:"asOf"`
	Totals     ReportFiguresDTO  `json:"totals"`
	Series     []ReportDayDTO    `json:"series"`
	FirstReply ReportDurationDTO `json:"firstReply"`
	Resolution ReportDurationDTO `json:"resolution"`
	Usage      []ReportUsageDTO  `json:"usage"`
}

// ReportCountDTO is a count and the list of conversations behind it.
type ReportCountDTO struct {
	Count         int    `json:"count"`
	Conversations string `json:"conversations"`
}

// ReportRateDTO is a count of conversations, its share of the
// conversations, and the list of them.
type ReportRateDTO struct {
	Count         int     `json:"count"`
	Rate          float64 `json:"rate"`
	Conversations string  `json:"conversations"`
}

// ReportFiguresDTO are the figures of a range or of one day.
type ReportFiguresDTO struct {
	Conversations ReportCountDTO `json:"conversations"`
	// Messages counts messages; its list is their conversations.
	Messages ReportCountDTO `json:"messages"`
	// Outcomes has every outcome and UNDECIDED, zeros included.
	Outcomes map[string]ReportRateDTO `json:"outcomes"`
	Fallback ReportRateDTO            `json:"fallback"`
	// FallbackReasons has the reasons that occurred.
	FallbackReasons map[string]ReportRateDTO `json:"fallbackReasons"`
	HandedOff       ReportRateDTO            `json:"handedOff"`
	Ratings         ReportRatingsDTO         `json:"ratings"`
}

// ReportRatingsDTO are the thumbs: conversations with an answer rated up
// or down, the ratings themselves (answers), and CSAT, the share of
// ratings that are up (nil when there are none).
type ReportRatingsDTO struct {
	RatedUp    ReportRateDTO  `json:"ratedUp"`
	RatedDown  ReportRateDTO  `json:"ratedDown"`
	ThumbsUp   ReportCountDTO `json:"thumbsUp"`
	ThumbsDown ReportCountDTO `json:"thumbsDown"`
	CSAT       *float64       `json:"csat"`
}

// ReportDayDTO is one day of the series.
type ReportDayDTO struct {
	Day string `json:"day"`
	ReportFiguresDTO
}

// ReportDurationDTO is a median: how many conversations have the duration,
// its median in seconds (nil when none), and the conversations it is
// drawn from.
type ReportDurationDTO struct {
	Count         int      `json:"count"`
	MedianSeconds *float64 `json:"medianSeconds"`
	Conversations string   `json:"conversations"`
}

// ReportUsageDTO is one agent's and model's tokens and estimated cost, in
// millionths of the currency (nil when the price table has no price).
type ReportUsageDTO struct {
	Agent            string  `json:"agent"`
	Model            string  `json:"model"`
	PromptTokens     int64   `json:"promptTokens"`
	CompletionTokens int64   `json:"completionTokens"`
	CostMicros       *int64  `json:"costMicros"`
	Currency         *string `json:"currency"`
	Conversations    string  `json:"conversations"`
}

// ReportOutcomes are the outcome columns of a report, in order:
// domain.Outcomes, then UNDECIDED.
func ReportOutcomes() []domain.Outcome {
	return append(append([]domain.Outcome{}, domain.Outcomes...), domain.OutcomeUndecided)
}

// Report maps rep to its DTO. preset is the preset asked for ("" for
// explicit days), agents names agent ids by slug (for usage rows of every
// agent; an id it lacks is shown as is), and link writes the URL of a
// conversation list.
func Report(rep domain.Report, agentSlug string, preset domain.ReportPreset, agents map[string]string, link func(conversation.ListFilter) string) ReportDTO {
	rng := rep.Query.Range
	out := ReportDTO{
		Agent: OptionalString(agentSlug), Preset: OptionalString(string(preset)),
		From: FormatDay(rng.From), To: FormatDay(rng.To.AddDate(0, 0, -1)), Days: rng.Days(),
		Totals: reportFigures(rep.Totals, agentSlug, rng, link),
		Series: make([]ReportDayDTO, 0, len(rep.Days)),
		Usage:  make([]ReportUsageDTO, 0, len(rep.Usage)),
	}
	if !rep.AsOf.IsZero() {
		asOf := Time(rep.AsOf)
		out.AsOf = &asOf
	}
	for _, d := range rep.Days {
		out.Series = append(out.Series, ReportDayDTO{Day: FormatDay(d.Day), ReportFiguresDTO: reportFigures(d.ReportFigures, agentSlug, report.DayRange(d), link)})
	}
	duration := func(d domain.DurationFigure, kind report.FigureKind) ReportDurationDTO {
		dto := ReportDurationDTO{Count: d.Count, Conversations: link(report.ListFilter(agentSlug, rng, report.Figure{Kind: kind}))}
		if d.Count > 0 {
			s := d.Median.Seconds()
			dto.MedianSeconds = &s
		}
		return dto
	}
	out.FirstReply = duration(rep.FirstReply, report.FigureFirstReply)
	out.Resolution = duration(rep.Resolution, report.FigureResolution)
	for _, u := range rep.Usage {
		slug := agents[u.AgentID]
		if slug == "" {
			slug = u.AgentID
		}
		if agentSlug != "" {
			slug = agentSlug
		}
		dto := ReportUsageDTO{Agent: slug, Model: u.Model, PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens,
			Conversations: link(report.ListFilter(slug, rng, report.Figure{Kind: report.FigureConversations}))}
		if u.CostMicros >= 0 {
			cost, currency := u.CostMicros, u.CostCurrency
			dto.CostMicros, dto.Currency = &cost, &currency
		}
		out.Usage = append(out.Usage, dto)
	}
	return out
}

func reportFigures(f domain.ReportFigures, agentSlug string, rng domain.ReportRange, link func(conversation.ListFilter) string) ReportFiguresDTO {
	to := func(fig report.Figure) string { return link(report.ListFilter(agentSlug, rng, fig)) }
	rate := func(n int, fig report.Figure) ReportRateDTO {
		return ReportRateDTO{Count: n, Rate: f.Rate(n), Conversations: to(fig)}
	}
	all := to(report.Figure{Kind: report.FigureConversations})
	out := ReportFiguresDTO{
		Conversations:   ReportCountDTO{Count: f.Conversations, Conversations: all},
		Messages:        ReportCountDTO{Count: f.Messages, Conversations: all},
		Outcomes:        make(map[string]ReportRateDTO, len(domain.Outcomes)+1),
		Fallback:        rate(f.FallbackConversations, report.Figure{Kind: report.FigureFallback}),
		FallbackReasons: make(map[string]ReportRateDTO, len(f.FallbacksByReason)),
		HandedOff:       rate(f.HandedOff, report.Figure{Kind: report.FigureHandedOff}),
	}
	for _, o := range ReportOutcomes() {
		n := f.Outcomes[o]
		if o == domain.OutcomeUndecided {
			n = f.Undecided
		}
		out.Outcomes[string(o)] = rate(n, report.Figure{Kind: report.FigureOutcome, Outcome: o})
	}
	for r, n := range f.FallbacksByReason {
		if n > 0 && r != domain.FallbackNone {
			out.FallbackReasons[string(r)] = rate(n, report.Figure{Kind: report.FigureFallbackReason, Reason: r})
		}
	}
	up, down := report.Figure{Kind: report.FigureRatedUp}, report.Figure{Kind: report.FigureRatedDown}
	out.Ratings = ReportRatingsDTO{RatedUp: rate(f.RatedUp, up), RatedDown: rate(f.RatedDown, down),
		ThumbsUp: ReportCountDTO{Count: f.ThumbsUp, Conversations: to(up)}, ThumbsDown: ReportCountDTO{Count: f.ThumbsDown, Conversations: to(down)}}
	if csat, ok := f.CSAT(); ok {
		out.Ratings.CSAT = &csat
	}
	return out
}
