package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

// The report's presets and outcomes, as the API names them.
var (
	reportPresets  = []string{"today", "yesterday", "last_7_days", "last_30_days", "last_90_days", "month_to_date", "last_month"}
	reportOutcomes = []string{"RESOLVED_CONFIRMED", "RESOLVED_UNCONFIRMED", "RECONTACT", "ABANDONED_AFTER_FALLBACK", "HANDED_OFF", "RESOLVED_BY_PERSON", "UNDECIDED"}
	reportFormats  = []string{"table", "json", "csv"}
)

func newAnalyticsCommand(e *env) *cobra.Command {
	var agent, preset, from, to, format string
	cmd := &cobra.Command{
		Use:   "analytics",
		Short: "Print a report of the workspace's conversations (GET /analytics/report)",
		Long: "Print a report of the conversations that started in a range of days, of every agent or of one (--agent):\n" +
			"conversations, messages, outcomes, fallbacks by reason, handoffs, ratings, reply and resolution\n" +
			"medians, and token usage with its estimated cost. Give --preset (" + strings.Join(reportPresets, ", ") + ";\n" +
			"default last_30_days) or --from and --to (days, 2026-11-01, both included), not both.\n" +
			"--format table (default), json (the API's JSON, with each figure's conversations link) or csv\n" +
			"(one row per day and a total row).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q := url.Values{}
			flags := cmd.Flags()
			if flags.Changed("agent") {
				if strings.TrimSpace(agent) == "" {
					return usagef("--agent must not be empty")
				}
				q.Set("agent", agent)
			}
			if !slices.Contains(reportFormats, format) {
				return usagef("--format must be one of %s, got %q", strings.Join(reportFormats, ", "), format)
			}
			switch {
			case flags.Changed("preset") && (flags.Changed("from") || flags.Changed("to")):
				return usagef("give --preset or --from and --to, not both")
			case flags.Changed("preset"):
				if !slices.Contains(reportPresets, preset) {
					return usagef("--preset must be one of %s, got %q", strings.Join(reportPresets, ", "), preset)
				}
				q.Set("preset", preset)
			case flags.Changed("from") != flags.Changed("to"):
				return usagef("--from and --to go together")
			case flags.Changed("from"):
				for name, day := range map[string]string{"--from": from, "--to": to} {
					if _, err := time.Parse("2006-01-02", day); err != nil {
						return usagef("%s must be a day, as 2026-11-01, got %q", name, day)
					}
				}
				if to < from {
					return usagef("--to must not be before --from")
				}
				q.Set("from", from)
				q.Set("to", to)
			}
			client, err := e.client()
			if err != nil {
				return err
			}
			if format == "csv" {
				body, err := client.get(cmd.Context(), "analytics/report.csv", q, "text/csv")
				if err != nil {
					return err
				}
				return flush(e.stdout.Write(body))
			}
			body, err := client.get(cmd.Context(), "analytics/report", q, "application/json")
			if err != nil {
				return err
			}
			if format == "json" {
				return writeRaw(e.stdout, body)
			}
			var rep reportDoc
			if err := json.Unmarshal(body, &rep); err != nil || rep.From == "" {
				return &badResponseError{URL: client.base.JoinPath("analytics/report").String(), Reason: "body is not a report"}
			}
			return printReport(e.stdout, rep)
		},
	}
	cmd.Flags().StringVar(&agent, "agent", "", "one agent's report (agent slug); every agent's without it")
	cmd.Flags().StringVar(&preset, "preset", "", "a range relative to today (UTC)")
	cmd.Flags().StringVar(&from, "from", "", "the first day, as 2026-11-01 (with --to)")
	cmd.Flags().StringVar(&to, "to", "", "the last day, included (with --from)")
	cmd.Flags().StringVar(&format, "format", "table", "table, json or csv")
	return cmd
}

// get GETs path (relative to the base URL) and returns the body of its 200.
func (c *apiClient) get(ctx context.Context, path string, query url.Values, accept string) ([]byte, error) {
	endpoint := c.base.JoinPath(path)
	shown := endpoint.String()
	endpoint.RawQuery = query.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint.String(), nil)
	if err != nil {
		return nil, &badResponseError{URL: shown, Reason: err.Error()}
	}
	req.Header.Set("Authorization", "Bearer "+c.apiKey)
	req.Header.Set("Accept", accept)
	req.Header.Set("User-Agent", c.userAgent)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, c.transportError(ctx, shown, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return nil, c.transportError(ctx, shown, err)
	}
	if resp.StatusCode >= 400 {
		return nil, decodeAPIError(resp, body)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, &badResponseError{URL: shown, Reason: "status " + resp.Status}
	}
	return body, nil
}

// reportDoc is as much of the API's report as the table shows.
type reportDoc struct {
	Agent      *string       `json:"agent"`
	Preset     *string       `json:"preset"`
	From       string        `json:"from"`
	To         string        `json:"to"`
	Days       int           `json:"days"`
	AsOf       *string       `json:"asOf"`
	Totals     reportFigures `json:"totals"`
	FirstReply reportMedian  `json:"firstReply"`
	Resolution reportMedian  `json:"resolution"`
	Usage      []struct {
		Agent            string  `json:"agent"`
		Model            string  `json:"model"`
		PromptTokens     int64   `json:"promptTokens"`
		CompletionTokens int64   `json:"completionTokens"`
		CostMicros       *int64  `json:"costMicros"`
		Currency         *string `json:"currency"`
	} `json:"usage"`
}

type reportCount struct {
	Count int     `json:"count"`
	Rate  float64 `json:"rate"`
}

type reportFigures struct {
	Conversations   reportCount            `json:"conversations"`
	Messages        reportCount            `json:"messages"`
	Outcomes        map[string]reportCount `json:"outcomes"`
	Fallback        reportCount            `json:"fallback"`
	FallbackReasons map[string]reportCount `json:"fallbackReasons"`
	HandedOff       reportCount            `json:"handedOff"`
	Ratings         struct {
		RatedUp    reportCount `json:"ratedUp"`
		RatedDown  reportCount `json:"ratedDown"`
		ThumbsUp   reportCount `json:"thumbsUp"`
		ThumbsDown reportCount `json:"thumbsDown"`
		CSAT       *float64    `json:"csat"`
	} `json:"ratings"`
}

type reportMedian struct {
	Count         int      `json:"count"`
	MedianSeconds *float64 `json:"medianSeconds"`
}

func printReport(w io.Writer, r reportDoc) error {
	who := "every agent"
	if r.Agent != nil {
		who = "agent " + cell(*r.Agent)
	}
	rng := fmt.Sprintf("%s to %s (%d days", cell(r.From), cell(r.To), r.Days)
	if r.Preset != nil {
		rng += ", " + cell(*r.Preset)
	}
	rng += ")"
	asOf := "not yet computed"
	if r.AsOf != nil {
		asOf = "as of " + timestamp(*r.AsOf)
	}
	if _, err := fmt.Fprintf(w, "Report of %s, %s, %s\n\n", who, rng, asOf); err != nil {
		return flush(0, err)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	pct := func(v float64) string { return strconv.FormatFloat(100*v, 'f', 1, 64) + "%" }
	fmt.Fprintln(tw, "FIGURE\tCOUNT\tRATE")
	t := r.Totals
	fmt.Fprintf(tw, "Conversations\t%d\t\n", t.Conversations.Count)
	fmt.Fprintf(tw, "Messages\t%d\t\n", t.Messages.Count)
	for _, o := range reportOutcomes {
		c := t.Outcomes[o]
		fmt.Fprintf(tw, "Outcome %s\t%d\t%s\n", o, c.Count, pct(c.Rate))
	}
	fmt.Fprintf(tw, "With a fallback\t%d\t%s\n", t.Fallback.Count, pct(t.Fallback.Rate))
	reasons := make([]string, 0, len(t.FallbackReasons))
	for reason := range t.FallbackReasons {
		reasons = append(reasons, reason)
	}
	sort.Strings(reasons)
	for _, reason := range reasons {
		c := t.FallbackReasons[reason]
		fmt.Fprintf(tw, "  Fallback %s\t%d\t%s\n", cell(reason), c.Count, pct(c.Rate))
	}
	fmt.Fprintf(tw, "Handed off\t%d\t%s\n", t.HandedOff.Count, pct(t.HandedOff.Rate))
	fmt.Fprintf(tw, "Rated up\t%d\t%s\n", t.Ratings.RatedUp.Count, pct(t.Ratings.RatedUp.Rate))
	fmt.Fprintf(tw, "Rated down\t%d\t%s\n", t.Ratings.RatedDown.Count, pct(t.Ratings.RatedDown.Rate))
	csat := "-"
	if t.Ratings.CSAT != nil {
		csat = pct(*t.Ratings.CSAT)
	}
	fmt.Fprintf(tw, "Thumbs up / down (CSAT)\t%d / %d\t%s\n", t.Ratings.ThumbsUp.Count, t.Ratings.ThumbsDown.Count, csat)
	median := func(m reportMedian) string {
		if m.MedianSeconds == nil {
			return "-"
		}
		return (time.Duration(*m.MedianSeconds * float64(time.Second))).Round(time.Second).String()
	}
	fmt.Fprintf(tw, "Median first reply\t%d\t%s\n", r.FirstReply.Count, median(r.FirstReply))
	fmt.Fprintf(tw, "Median time to resolution\t%d\t%s\n", r.Resolution.Count, median(r.Resolution))
	if err := tw.Flush(); err != nil {
		return flush(0, err)
	}
	if len(r.Usage) == 0 {
		return flush(fmt.Fprintln(w, "\nNo token usage."))
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT\tMODEL\tPROMPT TOKENS\tCOMPLETION TOKENS\tESTIMATED COST")
	for _, u := range r.Usage {
		cost := "no price"
		if u.CostMicros != nil && u.Currency != nil {
			cost = strconv.FormatFloat(float64(*u.CostMicros)/1e6, 'f', 6, 64) + " " + cell(*u.Currency)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\n", cell(u.Agent), cell(u.Model), u.PromptTokens, u.CompletionTokens, cost)
	}
	return flush(0, tw.Flush())
}
