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
// report's figures and their rates. The duration medians are the range's
// and fill only the total row; token usage is not in the CSV (it has no
// days), see the JSON report.
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
		"first_reply_median_seconds", "resolution_median_seconds")
}

// WriteReportCSV writes rep as CSV to w: the header, one row per day of
// the range, then the total row. Every cell that a spreadsheet would read
// as a formula is neutralised (CSVCell).
func WriteReportCSV(w io.Writer, rep domain.Report, agentSlug string) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(ReportCSVHeader()); err != nil {
		return err
	}
	row := func(day string, f domain.ReportFigures, firstReply, resolution string) []string {
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
		return append(r, strconv.Itoa(f.HandedOff), share(f.Rate(f.HandedOff)), strconv.Itoa(f.RatedUp), strconv.Itoa(f.RatedDown),
			strconv.Itoa(f.ThumbsUp), strconv.Itoa(f.ThumbsDown), csat, firstReply, resolution)
	}
	for _, d := range rep.Days {
		if err := cw.Write(row(FormatDay(d.Day), d.ReportFigures, "", "")); err != nil {
			return err
		}
	}
	median := func(d domain.DurationFigure) string {
		if d.Count == 0 {
			return ""
		}
		return strconv.FormatFloat(d.Median.Seconds(), 'f', -1, 64)
	}
	if err := cw.Write(row("total", rep.Totals, median(rep.FirstReply), median(rep.Resolution))); err != nil {
		return err
	}
	cw.Flush()
	return cw.Error()
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
