package deployments

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/conciergehq/concierge/adapters/metrics"
)

const (
	rulesPath     = "prometheus/alerts.yml"
	ruleTestsPath = "prometheus/alerts_test.yml"
	dashboardPath = "grafana/concierge.json"
	runbookPath   = "../docs/operations.md"
)

type ruleFile struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []rule `json:"rules"`
	} `json:"groups"`
}

type rule struct {
	Alert       string            `json:"alert,omitempty"`
	Record      string            `json:"record,omitempty"`
	Expr        string            `json:"expr"`
	For         *string           `json:"for,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

func readRules(t *testing.T) []rule {
	t.Helper()
	var f ruleFile
	if err := yaml.UnmarshalStrict(readFile(t, rulesPath), &f); err != nil {
		t.Fatalf("%s: %v", rulesPath, err)
	}
	var rules []rule
	for _, g := range f.Groups {
		rules = append(rules, g.Rules...)
	}
	if len(rules) == 0 {
		t.Fatalf("%s holds no rules", rulesPath)
	}
	return rules
}

// dashboard is the part of a Grafana dashboard the tests read.
type dashboard struct {
	UID    string  `json:"uid"`
	Title  string  `json:"title"`
	Panels []panel `json:"panels"`
}

type panel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource *struct {
		UID string `json:"uid"`
	} `json:"datasource"`
	GridPos struct{ H, W, X, Y int } `json:"gridPos"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // a collapsed row's panels
}

func readDashboard(t *testing.T) dashboard {
	t.Helper()
	var d dashboard
	if err := json.Unmarshal(readFile(t, dashboardPath), &d); err != nil {
		t.Fatalf("%s: %v", dashboardPath, err)
	}
	return d
}

// allPanels flattens rows.
func (d dashboard) allPanels() []panel {
	var out []panel
	for _, p := range d.Panels {
		out = append(out, p)
		out = append(out, p.Panels...)
	}
	return out
}

func (d dashboard) exprs() []string {
	var out []string
	for _, p := range d.allPanels() {
		for _, t := range p.Targets {
			out = append(out, t.Expr)
		}
	}
	return out
}

// checkDashboard returns what is wrong with a dashboard's structure.
func checkDashboard(d dashboard) []string {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if d.UID == "" || d.Title == "" {
		add("the dashboard needs a uid and a title")
	}
	ids := map[int]bool{}
	graphs := 0
	for _, p := range d.allPanels() {
		if ids[p.ID] {
			add("panel id %d is used twice", p.ID)
		}
		ids[p.ID] = true
		if p.Title == "" {
			add("panel %d has no title", p.ID)
		}
		if p.GridPos.W <= 0 || p.GridPos.H <= 0 || p.GridPos.X+p.GridPos.W > 24 {
			add("panel %q: gridPos %+v is off the 24-column grid", p.Title, p.GridPos)
		}
		if p.Type == "row" {
			continue
		}
		graphs++
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
			add("panel %q: its datasource must be the ${datasource} variable, so the dashboard imports anywhere", p.Title)
		}
		if len(p.Targets) == 0 {
			add("panel %q has no query", p.Title)
		}
		for _, t := range p.Targets {
			if t.Expr == "" || t.RefID == "" {
				add("panel %q: a target without expr or refId", p.Title)
			}
		}
	}
	if graphs == 0 {
		add("the dashboard has no panels")
	}
	return problems
}

func TestDashboard(t *testing.T) {
	d := readDashboard(t)
	for _, p := range checkDashboard(d) {
		t.Error(p)
	}
	// The same checks refuse a broken dashboard.
	broken := readDashboard(t)
	last := len(broken.Panels) - 1
	broken.Panels[last].ID = broken.Panels[0].ID
	broken.Panels[last].Datasource = nil
	broken.Panels[last].Targets[0].Expr = ""
	problems := checkDashboard(broken)
	for _, want := range []string{"is used twice", "must be the ${datasource} variable", "a target without expr"} {
		if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, want) }) {
			t.Errorf("a broken dashboard: problems %q, want one containing %q", problems, want)
		}
	}
}

var (
	metricName   = regexp.MustCompile(`\bconcierge_[a-z_]+`)
	seriesSuffix = regexp.MustCompile(`_(bucket|sum|count)$`)
)

// metricNames extracts the metric families PromQL expressions name: a
// histogram's _bucket, _sum and _count series count as their family.
func metricNames(exprs []string) []string {
	var out []string
	for _, e := range exprs {
		for _, n := range metricName.FindAllString(e, -1) {
			n = seriesSuffix.ReplaceAllString(n, "")
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	slices.Sort(out)
	return out
}

// unexported returns the names that are not exported.
func unexported(names, exported []string) []string {
	var out []string
	for _, n := range names {
		if !slices.Contains(exported, n) {
			out = append(out, n)
		}
	}
	return out
}

// TestMetricNamesExported checks every metric the alert rules and the
// dashboard query is one Concierge exports, and that the dashboard shows
// every metric exported.
func TestMetricNamesExported(t *testing.T) {
	exported := metrics.Names()
	var ruleExprs []string
	for _, r := range readRules(t) {
		ruleExprs = append(ruleExprs, r.Expr)
	}
	dashExprs := readDashboard(t).exprs()
	for _, src := range []struct {
		name  string
		exprs []string
	}{{rulesPath, ruleExprs}, {dashboardPath, dashExprs}} {
		names := metricNames(src.exprs)
		if len(names) == 0 {
			t.Errorf("%s names no concierge_ metric", src.name)
		}
		for _, n := range unexported(names, exported) {
			t.Errorf("%s queries %s, which Concierge does not export", src.name, n)
		}
	}
	var ours []string // the Go and process collectors' families need no panel each
	for _, n := range exported {
		if strings.HasPrefix(n, "concierge_") {
			ours = append(ours, n)
		}
	}
	if len(ours) == 0 {
		t.Fatal("no concierge_ metric is exported")
	}
	for _, n := range unexported(ours, metricNames(dashExprs)) {
		t.Errorf("%s shows nothing of %s: give it a panel", dashboardPath, n)
	}

	// The tokenizer finds families through their series and a misspelling.
	got := metricNames([]string{
		`histogram_quantile(0.99, sum by (le) (rate(concierge_relay_lag_seconds_bucket[5m])))`,
		`rate(concierge_chat_duration_seconds_sum[5m]) / rate(concierge_chat_duration_seconds_count[5m]) + concierge_ready_pods`,
	})
	if want := []string{"concierge_chat_duration_seconds", "concierge_ready_pods", "concierge_relay_lag_seconds"}; !slices.Equal(got, want) {
		t.Errorf("metricNames = %q, want %q", got, want)
	}
	if bad := unexported(got, exported); !slices.Equal(bad, []string{"concierge_ready_pods"}) {
		t.Errorf("unexported = %q, want the misspelt concierge_ready_pods", bad)
	}
}

// anchor is the fragment GitHub gives a Markdown heading.
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

// TestAlertRules checks what promtool does not: every alert waits (`for`),
// has a severity, a summary, a description and a runbook note that exists in
// docs/operations.md, and a unit test in alerts_test.yml in which it fires.
func TestAlertRules(t *testing.T) {
	anchors := map[string]bool{}
	for line := range strings.Lines(string(readFile(t, runbookPath))) {
		if h, ok := strings.CutPrefix(line, "#"); ok {
			anchors[anchor(strings.TrimLeft(h, "#"))] = true
		}
	}
	var tests struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string            `json:"alertname"`
				ExpAlerts []json.RawMessage `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		} `json:"tests"`
	}
	if err := yaml.Unmarshal(readFile(t, ruleTestsPath), &tests); err != nil {
		t.Fatal(err)
	}
	firing := map[string]bool{}
	for _, tc := range tests.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				firing[a.Alertname] = true
			}
		}
	}
	check := func(r rule) []string {
		var problems []string
		add := func(format string, args ...any) {
			problems = append(problems, r.Alert+": "+fmt.Sprintf(format, args...))
		}
		if r.Alert == "" {
			return []string{"a recording rule " + r.Record + ": this file holds alerts only"}
		}
		if r.For == nil {
			add("no `for:` (say `for: 0m` when it should fire at once)")
		}
		if s := r.Labels["severity"]; s != "critical" && s != "warning" {
			add("severity %q is not critical or warning", s)
		}
		for _, a := range []string{"summary", "description", "runbook_url"} {
			if r.Annotations[a] == "" {
				add("no %s annotation", a)
			}
		}
		if frag, ok := strings.CutPrefix(r.Annotations["runbook_url"], "docs/operations.md#"); !ok || !anchors[frag] {
			add("runbook_url %q is no heading of docs/operations.md", r.Annotations["runbook_url"])
		}
		if !firing[r.Alert] {
			add("no unit test in %s in which it fires", ruleTestsPath)
		}
		return problems
	}
	for _, r := range readRules(t) {
		for _, p := range check(r) {
			t.Error(p)
		}
	}
	// And the checks refuse a bare alert.
	bare := check(rule{Alert: "ConciergeBare", Expr: "vector(1)", Annotations: map[string]string{"runbook_url": "docs/operations.md#nowhere"}})
	if len(bare) != 6 {
		t.Errorf("a bare alert: %d problems %q, want 6 (for, severity, summary, description, runbook, unit test)", len(bare), bare)
	}
}

// promtool finds promtool (scripts/promtool.sh installs it). Without it the
// test is skipped, except under CI, where it fails.
func promtool(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("promtool is not installed (run scripts/promtool.sh); under CI the alert rules must be checked")
		}
		t.Skip("promtool is not installed (run scripts/promtool.sh or make test)")
	}
	return path
}

func runPromtool(t *testing.T, bin string, args ...string) (string, error) {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), bin, args...).CombinedOutput()
	return string(out), err
}

// TestAlertRulesWithPromtool runs `promtool check rules` and the rules' unit
// tests, checks the dashboard's queries parse (as recording rules), and
// proves promtool refuses a broken rule.
func TestAlertRulesWithPromtool(t *testing.T) {
	bin := promtool(t)
	if out, err := runPromtool(t, bin, "check", "rules", rulesPath); err != nil {
		t.Errorf("promtool check rules %s: %v\n%s", rulesPath, err, out)
	}
	if out, err := runPromtool(t, bin, "test", "rules", ruleTestsPath); err != nil {
		t.Errorf("promtool test rules %s: %v\n%s", ruleTestsPath, err, out)
	}

	// The dashboard's queries, with Grafana's variables given values, as
	// recording rules: promtool parses each.
	grafanaVars := strings.NewReplacer("$__rate_interval", "5m", "$instance", ".*")
	var dash ruleFile
	dash.Groups = append(dash.Groups, struct {
		Name  string `json:"name"`
		Rules []rule `json:"rules"`
	}{Name: "dashboard"})
	for i, e := range readDashboard(t).exprs() {
		dash.Groups[0].Rules = append(dash.Groups[0].Rules, rule{Record: fmt.Sprintf("dashboard:query_%d", i), Expr: grafanaVars.Replace(e)})
	}
	if out, err := checkRulesFile(t, bin, dash); err != nil {
		t.Errorf("the dashboard's queries do not parse: %v\n%s", err, out)
	}

	// A broken expression is refused.
	broken := ruleFile{Groups: dash.Groups[:1:1]}
	broken.Groups[0].Rules = []rule{{Alert: "ConciergeBroken", Expr: "sum(rate(concierge_ready[5m])"}}
	if out, err := checkRulesFile(t, bin, broken); err == nil {
		t.Errorf("promtool check rules accepted an unbalanced expression:\n%s", out)
	}
}

func checkRulesFile(t *testing.T, bin string, f ruleFile) (string, error) {
	t.Helper()
	data, err := yaml.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "rules.yml")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return runPromtool(t, bin, "check", "rules", path)
}
