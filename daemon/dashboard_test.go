package daemon_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// dashboardMetrics are the only series grafana-dashboard.json may query:
// the daemon's metric names (daemon/metrics.go), with a histogram's
// _bucket, _sum and _count.
func dashboardMetrics() []string {
	return []string{
		"narrowd_prompts_avoided_total",
		"narrowd_prompts_avoided_estimate_total",
		"narrowd_decisions_total",
		"narrowd_decision_duration_seconds_bucket",
		"narrowd_decision_duration_seconds_sum",
		"narrowd_decision_duration_seconds_count",
		"narrowd_unlabelled_calls_total",
		"narrowd_profile_reloads_total",
		"narrowd_mcp_tools",
		"narrowd_mcp_drift_total",
	}
}

// promQLWords are the functions, aggregations and keywords the
// dashboard's expressions may use besides metric names.
func promQLWords() []string {
	return []string{
		"sum", "min", "max", "avg", "count", "topk", "bottomk", "quantile",
		"rate", "irate", "increase", "delta", "histogram_quantile",
		"by", "without", "on", "ignoring", "group_left", "group_right",
		"and", "or", "unless", "offset", "bool", "vector", "scalar",
		"clamp_min", "clamp_max", "abs",
	}
}

type dashboardPanel struct {
	Type    string `json:"type"`
	Title   string `json:"title"`
	Targets []struct {
		Expr  string `json:"expr"`
		RefID string `json:"refId"`
	} `json:"targets"`
	Panels []dashboardPanel `json:"panels"` // rows
}

// metricNames returns the identifiers of a PromQL expression that are
// neither functions nor keywords: the series it selects. Strings, label
// matchers, ranges and grouping label lists are removed first.
func metricNames(expr string) []string {
	for _, re := range []*regexp.Regexp{
		regexp.MustCompile(`"(?:[^"\\]|\\.)*"`),
		regexp.MustCompile(`\{[^}]*\}`),
		regexp.MustCompile(`\[[^\]]*\]`),
		regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`),
	} {
		expr = re.ReplaceAllString(expr, " ")
	}
	var names []string
	for _, id := range regexp.MustCompile(`[A-Za-z_:][A-Za-z0-9_:]*`).FindAllString(expr, -1) {
		if !slices.Contains(promQLWords(), id) {
			names = append(names, id)
		}
	}
	return names
}

func TestDashboard(t *testing.T) {
	data, err := os.ReadFile("grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Title      string           `json:"title"`
		UID        string           `json:"uid"`
		Panels     []dashboardPanel `json:"panels"`
		Templating struct {
			List []struct {
				Name       string `json:"name"`
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	if err := dec.Decode(&dash); err != nil {
		t.Fatalf("grafana-dashboard.json is not valid JSON: %v", err)
	}
	if dash.Title == "" || dash.UID == "" {
		t.Errorf("title %q, uid %q", dash.Title, dash.UID)
	}

	var exprs []string
	var walk func([]dashboardPanel)
	walk = func(ps []dashboardPanel) {
		for _, p := range ps {
			for _, tg := range p.Targets {
				if tg.Expr == "" {
					t.Errorf("panel %q: target %s has no expr", p.Title, tg.RefID)
				}
				exprs = append(exprs, tg.Expr)
			}
			walk(p.Panels)
		}
	}
	walk(dash.Panels)
	// Grafana's label_values(metric, label) is not PromQL: keep the metric.
	labelValues := regexp.MustCompile(`label_values\(\s*([^,]+?)\s*,\s*\w+\s*\)`)
	for _, v := range dash.Templating.List {
		if v.Definition != "" {
			exprs = append(exprs, labelValues.ReplaceAllString(v.Definition, "$1"))
		}
	}

	used := map[string]bool{}
	for _, e := range exprs {
		names := metricNames(e)
		if len(names) == 0 {
			t.Errorf("expr %q selects no metric", e)
		}
		for _, n := range names {
			if !slices.Contains(dashboardMetrics(), n) {
				t.Errorf("expr %q uses %q, not a narrowd metric", e, n)
			}
			used[strings.TrimSuffix(n, "_bucket")] = true
		}
	}
	// Every required panel is there.
	for _, want := range []string{
		"narrowd_prompts_avoided_total", "narrowd_prompts_avoided_estimate_total",
		"narrowd_decisions_total", "narrowd_decision_duration_seconds",
		"narrowd_unlabelled_calls_total", "narrowd_profile_reloads_total",
	} {
		if !used[want] {
			t.Errorf("no panel queries %s", want)
		}
	}
	for _, q := range []string{"histogram_quantile(0.5,", "histogram_quantile(0.99,", `outcome=~"ask|deny"`, `result="error"`} {
		if !slices.ContainsFunc(exprs, func(e string) bool { return strings.Contains(e, q) }) {
			t.Errorf("no expr contains %s", q)
		}
	}
}

func TestMetricNames(t *testing.T) {
	tests := []struct {
		expr string
		want []string
	}{
		{`sum by (tool) (increase(narrowd_decisions_total{outcome=~"ask|deny"}[5m]))`, []string{"narrowd_decisions_total"}},
		{`histogram_quantile(0.99, sum by (le) (rate(x_bucket[$__rate_interval])))`, []string{"x_bucket"}},
		{`a / on (agent) b`, []string{"a", "b"}},
		{`sum(up{job="a{b}"})`, []string{"up"}},
	}
	for _, tt := range tests {
		if got := metricNames(tt.expr); !slices.Equal(got, tt.want) {
			t.Errorf("metricNames(%q) = %q, want %q", tt.expr, got, tt.want)
		}
	}
}

// TestDashboardMetricsExist ties dashboardMetrics to the daemon's source:
// every metric the dashboard may query is defined with name("…") in a
// daemon file, so renaming a metric fails here rather than on a blank
// panel.
func TestDashboardMetricsExist(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	defined := map[string]bool{}
	re := regexp.MustCompile(`\bname\("([a-z0-9_]+)"\)`)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllStringSubmatch(string(src), -1) {
			defined["narrowd_"+m[1]] = true
		}
	}
	if len(defined) == 0 {
		t.Fatal("found no metric definitions (name(\"…\")) in the daemon's sources")
	}
	for _, m := range dashboardMetrics() {
		base := m
		for _, suf := range []string{"_bucket", "_sum", "_count"} {
			if strings.HasSuffix(m, "_seconds"+suf) {
				base = strings.TrimSuffix(m, suf)
			}
		}
		if !defined[base] {
			t.Errorf("the dashboard queries %s, which the daemon does not define", m)
		}
	}
}
