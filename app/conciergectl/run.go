package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/spf13/cobra"
)

// Exit codes; the package comment and --help document them.
const (
	exitOK       = 0
	exitOther    = 1
	exitUsage    = 2
	exitAuth     = 3
	exitPlan     = 4
	exitNetwork  = 5
	exitNotFound = 6
)

const (
	envAPIKey      = "CONCIERGE_API_KEY"
	envAPIURL      = "CONCIERGE_API_URL"
	defaultAPIURL  = "http://127.0.0.1:8080/api/v2"
	defaultTimeout = 30 * time.Second
	// allPageLimit is the page size --all asks for when --limit is not given:
	// the API's maximum, to follow as few cursors as possible.
	allPageLimit = 100
	// lastMessageWidth keeps the conversations table readable on a terminal.
	lastMessageWidth = 50
)

const helpFooter = `Environment:
  CONCIERGE_API_KEY   API key of the workspace (required; create one in the
                      workspace admin area, API keys section)
  CONCIERGE_API_URL   API base URL ending in /api/v2
                      (default ` + defaultAPIURL + `)

Exit codes:
  0  success
  1  other error: an API error not listed below, an unexpected response, interrupted
  2  usage: bad flags or arguments, CONCIERGE_API_KEY missing, bad CONCIERGE_API_URL
  3  authentication failed: API key missing, invalid or revoked (401)
  4  plan: the workspace's plan lacks API access (403 PLAN_UPGRADE_REQUIRED)
  5  network: connection refused, DNS failure or timeout
  6  not found (404)
`

// failure is any other error this program itself runs into (exit code 1).
type failure struct{ msg string }

func (e *failure) Error() string { return e.msg }

// usageError is a mistake in the command line or the environment.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{msg: fmt.Sprintf(format, args...)} }

// run executes one command line and returns the process exit code.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if args == nil {
		// cobra reads os.Args when given nil; run must only see its arguments.
		args = []string{}
	}
	root := newRootCommand(getenv, stdout, stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	code, msg := describeError(err)
	fmt.Fprintf(stderr, "conciergectl: %s\n", sanitize(msg))
	if code == exitUsage {
		fmt.Fprintln(stderr, "Run 'conciergectl --help' for usage.")
	}
	return code
}

// describeError is the one place that maps failures to exit codes.
func describeError(err error) (int, string) {
	var (
		usage *usageError
		api   *apiError
		netw  *networkError
		bad   *badResponseError
		fail  *failure
	)
	switch {
	case errors.As(err, &usage):
		return exitUsage, usage.msg
	case errors.As(err, &api):
		switch {
		case api.Status == 401:
			return exitAuth, api.Error()
		case api.Status == 403 && api.Code == "PLAN_UPGRADE_REQUIRED":
			return exitPlan, api.Error()
		case api.Status == 404:
			return exitNotFound, api.Error()
		default:
			return exitOther, api.Error()
		}
	case errors.As(err, &netw):
		return exitNetwork, netw.Error()
	case errors.As(err, &bad):
		return exitOther, bad.Error()
	case errors.As(err, &fail):
		return exitOther, fail.msg
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return exitOther, "interrupted"
	default:
		// Everything else comes from cobra parsing the command line.
		return exitUsage, err.Error()
	}
}

// env is what commands read from the process, passed in rather than global.
type env struct {
	getenv  func(string) string
	stdout  io.Writer
	stderr  io.Writer
	timeout *time.Duration
}

func newRootCommand(getenv func(string) string, stdout, stderr io.Writer) *cobra.Command {
	e := &env{getenv: getenv, stdout: stdout, stderr: stderr, timeout: new(time.Duration)}
	root := &cobra.Command{
		Use:           "conciergectl",
		Short:         "Command-line client of the Concierge API v2",
		Long:          "conciergectl lists the agents and conversations of a Concierge workspace, and reports on them, through the API v2.\n\n" + helpFooter,
		Version:       version(),
		Args:          cobra.ArbitraryArgs,
		RunE:          requireSubcommand,
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.CompletionOptions.DisableDefaultCmd = true
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{msg: err.Error()} })
	root.PersistentFlags().DurationVar(e.timeout, "timeout", defaultTimeout, "HTTP timeout of each request")

	agents := &cobra.Command{
		Use:   "agents",
		Short: "Work with the workspace's agents",
		Args:  cobra.ArbitraryArgs,
		RunE:  requireSubcommand,
	}
	agents.AddCommand(newAgentsListCommand(e))

	conversations := &cobra.Command{
		Use:   "conversations",
		Short: "Work with conversations",
		Args:  cobra.ArbitraryArgs,
		RunE:  requireSubcommand,
	}
	conversations.AddCommand(newConversationsListCommand(e))

	root.AddCommand(agents, conversations, newAnalyticsCommand(e))
	return root
}

// requireSubcommand answers a group command run on its own, or followed by an
// unknown word: cobra would print help and succeed, hiding typos from scripts.
func requireSubcommand(cmd *cobra.Command, args []string) error {
	var names []string
	for _, sub := range cmd.Commands() {
		if sub.IsAvailableCommand() {
			names = append(names, sub.Name())
		}
	}
	if len(args) == 0 {
		return usagef("%s needs a command: %s", cmd.CommandPath(), strings.Join(names, ", "))
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2 // cobra's default, applied only on its own code path
	}
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "; did you mean " + strings.Join(s, " or ") + "?"
	}
	return &usageError{msg: msg}
}

// listFlags are the flags every list command shares.
type listFlags struct {
	json   bool
	limit  int
	cursor string
	all    bool
}

func (f *listFlags) register(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&f.json, "json", false, "print the raw JSON page (with --all: one {\"data\": [...]} object)")
	cmd.Flags().IntVar(&f.limit, "limit", 0, "page size, 1 to 100 (server default 20; 100 with --all)")
	cmd.Flags().StringVar(&f.cursor, "cursor", "", "start at this cursor (meta.nextCursor of a previous page)")
	cmd.Flags().BoolVar(&f.all, "all", false, "follow meta.nextCursor until the last page")
}

// query validates the flags and returns the list's query parameters.
func (f *listFlags) query(cmd *cobra.Command) (url.Values, error) {
	q := url.Values{}
	switch {
	case cmd.Flags().Changed("limit"):
		if f.limit < 1 || f.limit > 100 {
			return nil, usagef("--limit must be between 1 and 100, got %d", f.limit)
		}
		q.Set("limit", strconv.Itoa(f.limit))
	case f.all:
		q.Set("limit", strconv.Itoa(allPageLimit))
	}
	if cmd.Flags().Changed("cursor") && strings.TrimSpace(f.cursor) == "" {
		return nil, usagef("--cursor must not be empty")
	}
	if f.cursor != "" {
		q.Set("cursor", f.cursor)
	}
	return q, nil
}

func newAgentsListCommand(e *env) *cobra.Command {
	var flags listFlags
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List agents (SLUG, NAME, PUBLISHED, CREATED), in creation order",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q, err := flags.query(cmd)
			if err != nil {
				return err
			}
			return e.list(cmd.Context(), "agents", q, flags, printAgents)
		},
	}
	flags.register(cmd)
	return cmd
}

func newConversationsListCommand(e *env) *cobra.Command {
	var (
		flags  listFlags
		agent  string
		status string
		// The conversation states the API filters on.
		conversationStatuses = []string{"AI", "HANDOFF_REQUESTED", "HUMAN", "RESOLVED"}
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List conversations, most recent activity first",
		Long: "List conversations (ID, AGENT, CHANNEL, STATUS, LAST ACTIVITY, LAST MESSAGE), most recent activity first.\n" +
			"--status is one of " + strings.Join(conversationStatuses, ", ") + ".",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q, err := flags.query(cmd)
			if err != nil {
				return err
			}
			if cmd.Flags().Changed("agent") {
				if agent == "" {
					return usagef("--agent must not be empty")
				}
				q.Set("agent", agent)
			}
			if cmd.Flags().Changed("status") {
				s := strings.ToUpper(strings.TrimSpace(status))
				if !slices.Contains(conversationStatuses, s) {
					return usagef("--status must be one of %s, got %q", strings.Join(conversationStatuses, ", "), status)
				}
				q.Set("status", s)
			}
			return e.list(cmd.Context(), "conversations", q, flags, printConversations)
		},
	}
	flags.register(cmd)
	cmd.Flags().StringVar(&agent, "agent", "", "only this agent's conversations (agent slug)")
	cmd.Flags().StringVar(&status, "status", "", "only conversations in this state")
	return cmd
}

// renderer writes list items as a table. It returns a *failure for an item it
// cannot decode or when writing fails.
type renderer func(w io.Writer, items []json.RawMessage) error

// list fetches one page, or every page with --all, and prints it.
func (e *env) list(ctx context.Context, path string, q url.Values, flags listFlags, render renderer) error {
	client, err := e.client()
	if err != nil {
		return err
	}
	page, raw, err := client.list(ctx, path, q)
	if err != nil {
		return err
	}
	if !flags.all {
		if flags.json {
			return writeRaw(e.stdout, raw)
		}
		if err := render(e.stdout, page.Data); err != nil {
			return err
		}
		if page.Meta.HasMore && page.Meta.NextCursor != nil {
			fmt.Fprintf(e.stderr, "conciergectl: more results; next page: --cursor %s (or --all)\n", sanitize(*page.Meta.NextCursor))
		}
		return nil
	}

	items := page.Data
	seen := map[string]bool{}
	for page.Meta.HasMore {
		next := page.Meta.NextCursor
		if next == nil || *next == "" {
			return &badResponseError{URL: client.base.JoinPath(path).String(), Reason: "hasMore is true but nextCursor is empty"}
		}
		// A server bug that hands out the same cursor again must not make
		// --all loop forever.
		if seen[*next] {
			return &badResponseError{URL: client.base.JoinPath(path).String(), Reason: "the server repeated a cursor"}
		}
		seen[*next] = true
		q.Set("cursor", *next)
		if page, _, err = client.list(ctx, path, q); err != nil {
			return err
		}
		items = append(items, page.Data...)
	}
	if flags.json {
		out, err := json.Marshal(struct {
			Data []json.RawMessage `json:"data"`
		}{Data: items})
		if err != nil {
			return &failure{msg: "unexpected response: " + err.Error()}
		}
		return writeRaw(e.stdout, out)
	}
	return render(e.stdout, items)
}

// client builds the API client from the environment and flags.
func (e *env) client() (*apiClient, error) {
	key := strings.TrimSpace(e.getenv(envAPIKey))
	if key == "" {
		return nil, usagef("%s is not set; create an API key in the workspace admin area (API keys) and export %s=<key>", envAPIKey, envAPIKey)
	}
	base, err := parseBaseURL(e.getenv(envAPIURL))
	if err != nil {
		return nil, err
	}
	if *e.timeout <= 0 {
		return nil, usagef("--timeout must be positive, got %s", *e.timeout)
	}
	return newAPIClient(base, key, "conciergectl/"+version(), *e.timeout), nil
}

// parseBaseURL accepts an absolute http(s) URL whose path ends in /api/v2,
// with or without a trailing slash; empty means the local default.
func parseBaseURL(raw string) (*url.URL, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		raw = defaultAPIURL
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, usagef("%s must be an http:// or https:// URL ending in /api/v2, got %q", envAPIURL, raw)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, usagef("%s must not have a query or fragment, got %q", envAPIURL, raw)
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	// Requiring the version segment catches the common mistake of giving the
	// bare host, which would otherwise surface as a confusing 404.
	if !strings.HasSuffix(u.Path, "/api/v2") {
		return nil, usagef("%s must end in /api/v2 (for example %s), got %q", envAPIURL, defaultAPIURL, raw)
	}
	return u, nil
}

func writeRaw(w io.Writer, b []byte) error {
	if len(b) == 0 || b[len(b)-1] != '\n' {
		b = append(b, '\n')
	}
	if _, err := w.Write(b); err != nil {
		return &failure{msg: "writing output: " + err.Error()}
	}
	return nil
}

type agentItem struct {
	Slug      string `json:"slug"`
	Name      string `json:"name"`
	Published bool   `json:"published"`
	CreatedAt string `json:"createdAt"`
}

func printAgents(w io.Writer, items []json.RawMessage) error {
	agents, err := decodeItems[agentItem](items, "agent")
	if err != nil {
		return err
	}
	if len(agents) == 0 {
		return flush(fmt.Fprintln(w, "No agents."))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SLUG\tNAME\tPUBLISHED\tCREATED")
	for _, a := range agents {
		published := "no"
		if a.Published {
			published = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", cell(a.Slug), cell(a.Name), published, timestamp(a.CreatedAt))
	}
	return flush(0, tw.Flush())
}

type conversationItem struct {
	ID             string `json:"id"`
	Agent          string `json:"agent"`
	Channel        string `json:"channel"`
	Status         string `json:"status"`
	LastActivityAt string `json:"lastActivityAt"`
	LastMessage    string `json:"lastMessage"`
}

func printConversations(w io.Writer, items []json.RawMessage) error {
	conversations, err := decodeItems[conversationItem](items, "conversation")
	if err != nil {
		return err
	}
	if len(conversations) == 0 {
		return flush(fmt.Fprintln(w, "No conversations."))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tAGENT\tCHANNEL\tSTATUS\tLAST ACTIVITY\tLAST MESSAGE")
	for _, c := range conversations {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", cell(c.ID), cell(c.Agent), cell(c.Channel), cell(c.Status),
			timestamp(c.LastActivityAt), truncate(cell(c.LastMessage), lastMessageWidth))
	}
	return flush(0, tw.Flush())
}

// decodeItems decodes the raw items of a page for the table view.
func decodeItems[T any](items []json.RawMessage, what string) ([]T, error) {
	out := make([]T, 0, len(items))
	for i, raw := range items {
		var v T
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, &failure{msg: fmt.Sprintf("unexpected response: item %d is not a valid %s: %v", i, what, err)}
		}
		out = append(out, v)
	}
	return out, nil
}

// flush turns a failed write to stdout (a closed pipe, a full disk) into a
// failure, so it is not mistaken for a usage error.
func flush(_ int, err error) error {
	if err != nil {
		return &failure{msg: "writing output: " + err.Error()}
	}
	return nil
}

// timestamp shows an API time compactly in UTC; anything unparsable is shown as sent.
func timestamp(s string) string {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return cell(s)
	}
	return t.UTC().Format("2006-01-02 15:04 UTC")
}

// cell makes server text safe for one table cell: whitespace runs (tabs and
// newlines would break the columns) become one space, and other control
// characters are dropped so no terminal escape sequence reaches the screen.
func cell(s string) string {
	var b strings.Builder
	space := false
	for _, r := range s {
		switch {
		case unicode.IsSpace(r):
			space = true
			continue
		case unicode.IsControl(r):
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
	}
	return b.String()
}

// sanitize keeps a one-line message one line and free of control characters.
func sanitize(s string) string { return cell(s) }

// truncate shortens s to at most n characters, marking the cut with "…".
func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// version is the module version when built with `go install ...@vX`, else "dev".
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}
