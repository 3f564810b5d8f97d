package wire

import (
	"encoding/csv"
	"io"
	"strconv"
	"strings"

	"github.com/conciergehq/concierge/core/conversation"
	"github.com/conciergehq/concierge/core/domain"
)

// ReportCSVHeader is the header row of a report's CSV: the day ("total" on
// the last row), the agent ("" for every agent), then the counts of the
// report's figures and their rates. The duration medians and the token
// usage are the range's and fill only the total row: tokens summed over
// the report's agents and models, and the estimated cost when every model
// used has a price in one currency (empty otherwise; the JSON report
// breaks usage down by agent and model).
func ReportCSVHeader() []string {
	h := []string{"day", "agent", "conversations", "messages"}
	for _, o := range ReportOutcomes() {
		name := "outcome_" + strings.ToLower(string(o))
		h = append(h, name, name+"_rate")
	}
	h = append(h, "fallback_conversations", "fallback_rate")
	for _, r := range conversation.FallbackReasons {
		h = append(h, "fallback_"+strings.ToLower(string(r)))
	}
	return append(h, "handed_off", "handoff_rate", "rated_up", "rated_down", "thumbs_up", "thumbs_down", "csat",
		"first_reply_median_seconds", "resolution_median_seconds",
		"prompt_tokens", "completion_tokens", "estimated_cost", "cost_currency")
}

// WriteReportCSV writes rep as CSV to w: the header, one row per day of
// the range, then the total row. Every cell that a spreadsheet would read
// as a formula is neutralised (CSVCell).
func WriteReportCSV(w io.Writer, rep domain.Report, agentSlug string) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(ReportCSVHeader()); err != nil {
		return err
	}
	row := func(day string, f domain.ReportFigures, totalOnly ...string) []string {
		r := []string{CSVCell(day), CSVCell(agentSlug), strconv.Itoa(f.Conversations), strconv.Itoa(f.Messages)}
		for _, o := range ReportOutcomes() {
			n := f.Outcomes[o]
			if o == domain.OutcomeUndecided {
				n = f.Undecided
			}
			r = append(r, strconv.Itoa(n), share(f.Rate(n)))
		}
		r = append(r, strconv.Itoa(f.FallbackConversations), share(f.Rate(f.FallbackConversations)))
		for _, reason := range conversation.FallbackReasons {
			r = append(r, strconv.Itoa(f.FallbacksByReason[reason]))
		}
		csat := ""
		if v, ok := f.CSAT(); ok {
			csat = share(v)
		}
		r = append(r, strconv.Itoa(f.HandedOff), share(f.Rate(f.HandedOff)), strconv.Itoa(f.RatedUp), strconv.Itoa(f.RatedDown),
			strconv.Itoa(f.ThumbsUp), strconv.Itoa(f.ThumbsDown), csat)
		if len(totalOnly) == 0 {
			totalOnly = make([]string, 6)
		}
		return append(r, totalOnly...)
	}
	for _, d := range rep.Days {
		if err := cw.Write(row(FormatDay(d.Day), d.ReportFigures)); err != nil {
			return err
		}
	}
	median := func(d domain.DurationFigure) string {
		if d.Count == 0 {
			return ""
		}
		return strconv.FormatFloat(d.Median.Seconds(), 'f', -1, 64)
	}
	prompt, completion, cost, currency := usageTotals(rep.Usage)
	if err := cw.Write(row("total", rep.Totals, median(rep.FirstReply), median(rep.Resolution), prompt, completion, cost, currency)); err != nil {
		return err
	}
	cw.Flush()
	return cw.Error()
}

// usageTotals sums a report's token usage, and its estimated cost (in
// units of the currency, to the micro) when every model used is priced in
// the same currency; cost and currency are "" otherwise.
func usageTotals(usage []domain.UsageFigure) (prompt, completion, cost, currency string) {
	var p, c, micros int64
	priced := true
	for _, u := range usage {
		p, c = p+u.PromptTokens, c+u.CompletionTokens
		switch {
		case u.CostMicros < 0 || (currency != "" && u.CostCurrency != currency):
			priced = false
		default:
			micros, currency = micros+u.CostMicros, u.CostCurrency
		}
	}
	prompt, completion = strconv.FormatInt(p, 10), strconv.FormatInt(c, 10)
	if !priced || currency == "" {
		return prompt, completion, "", ""
	}
	return prompt, completion, strconv.FormatFloat(float64(micros)/1e6, 'f', 6, 64), CSVCell(currency)
}

func share(v float64) string { return strconv.FormatFloat(v, 'f', 4, 64) }

// CSVCell neutralises a text cell a spreadsheet would run as a formula
// (starting with =, +, -, @, a tab or a carriage return) by prefixing a
// single quote, as OWASP advises for CSV injection. Numbers are written
// by the report itself and never pass here.
func CSVCell(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}
