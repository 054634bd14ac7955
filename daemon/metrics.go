package daemon

import (
	"net/http"
	"runtime"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/narrowd/narrowd/daemon/agent"
	"github.com/narrowd/narrowd/daemon/mcp"
	"github.com/narrowd/narrowd/rules"
)

// Metrics are the daemon's Prometheus metrics, on a private registry.
// Labels are bounded: agent names, tool names only for built-in tools
// ("mcp" and "other" otherwise), outcomes, evidence kinds and strengths.
// Nothing is ever labelled by path, command, cwd or session.
type Metrics struct {
	reg *prometheus.Registry

	decisions       *prometheus.CounterVec
	promptsAvoided  *prometheus.CounterVec
	avoidedEstimate *prometheus.CounterVec
	evidence        *prometheus.CounterVec
	unlabelled      *prometheus.CounterVec
	duration        prometheus.Histogram
	reloads         *prometheus.CounterVec
	auditErrors     prometheus.Counter
	shed            prometheus.Counter
	peerRejections  prometheus.Counter

	mu    sync.Mutex
	kinds map[string]bool // evidence kinds seen, bounded by maxEvidenceKinds
	// evidenceCounters caches the evidence counter of each (kind,
	// strength) whose kind has its own label: a decision counts a dozen
	// pieces of evidence, and WithLabelValues hashes and locks each
	// time. A kind labelled "other" is not cached, so the cache is
	// bounded as the kinds are; a kind, once labelled, keeps its label.
	evidenceCounters sync.Map // evidenceKey → prometheus.Counter

	// builtin is the embedded catalog: its tool names are the only tool
	// label values besides "mcp" and "other".
	builtin *rules.Catalog
}

const (
	namespace        = "narrowd"
	maxEvidenceKinds = 128
)

// NewMetrics builds the metrics and registers them, with the Go and
// process collectors, on a new private registry.
func NewMetrics(version string) *Metrics {
	m := &Metrics{
		reg:   prometheus.NewRegistry(),
		kinds: make(map[string]bool),
	}
	// Without the catalog every tool is "mcp" or "other": still bounded.
	m.builtin, _ = rules.DefaultCatalog()
	name := func(n string) string { return prometheus.BuildFQName(namespace, "", n) }
	m.decisions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: name("decisions_total"),
		Help: "Pre-tool and permission-request calls answered, by agent, tool and outcome (allow, sandbox, ask, deny, abstain, error).",
	}, []string{"agent", "tool", "outcome"})
	m.promptsAvoided = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: name("prompts_avoided_total"),
		Help: "Permission requests narrowd answered with allow: prompts a person would have seen.",
	}, []string{"agent", "tool"})
	m.avoidedEstimate = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: name("prompts_avoided_estimate_total"),
		Help: "Pre-tool allows whose un-narrowed ceiling would not have been allowed, for agents without a permission-request hook (an estimate).",
	}, []string{"agent", "tool"})
	m.evidence = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: name("evidence_total"),
		Help: "Evidence gathered for judged calls, by kind and strength.",
	}, []string{"kind", "strength"})
	m.unlabelled = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: name("unlabelled_calls_total"),
		Help: "Judged calls to tools nobody labelled.",
	}, []string{"agent"})
	m.duration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    name("decision_duration_seconds"),
		Help:    "Time the engine took to judge one call.",
		Buckets: prometheus.ExponentialBuckets(5e-6, 2.5, 12),
	})
	m.reloads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: name("profile_reloads_total"),
		Help: "Engine rebuilds after a watched file changed or SIGHUP, by result (ok, error).",
	}, []string{"result"})
	m.shed = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "narrowd_shed_total",
		Help: "Calls refused unjudged, with a blocking reply, because narrowd was overloaded.",
	})
	m.auditErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: name("audit_errors_total"),
		Help: "Audit records that could not be written durably; each such call was blocked.",
	})
	m.peerRejections = prometheus.NewCounter(prometheus.CounterOpts{
		Name: name("peer_rejections_total"),
		Help: "Connections refused because the peer was not the daemon's own user.",
	})
	buildInfo := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        name("build_info"),
		Help:        "Build information; always 1.",
		ConstLabels: prometheus.Labels{"version": version, "goversion": runtime.Version()},
	})
	buildInfo.Set(1)
	// Pre-create the reload results so a scrape shows zeros.
	m.reloads.WithLabelValues("ok")
	m.reloads.WithLabelValues("error")
	m.reg.MustRegister(m.decisions, m.promptsAvoided, m.avoidedEstimate, m.evidence,
		m.unlabelled, m.duration, m.reloads, m.auditErrors, m.shed, m.peerRejections, buildInfo,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Registry returns the private registry, for tests and for embedding.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// evidenceKind bounds the kind label: well-formed kinds up to
// maxEvidenceKinds distinct values, "other" after that.
type evidenceKey struct {
	kind     string
	strength rules.Strength
}

// evidenceCounter returns the counter of one piece of evidence.
func (m *Metrics) evidenceCounter(kind string, s rules.Strength) prometheus.Counter {
	k := evidenceKey{kind, s}
	if c, ok := m.evidenceCounters.Load(k); ok {
		return c.(prometheus.Counter)
	}
	label := m.evidenceKind(kind)
	c := m.evidence.WithLabelValues(label, s.String())
	if label == kind {
		m.evidenceCounters.Store(k, c)
	}
	return c
}

func (m *Metrics) evidenceKind(kind string) string {
	if !wellFormedKind(kind) {
		return "other"
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.kinds[kind] {
		return kind
	}
	if len(m.kinds) >= maxEvidenceKinds {
		return "other"
	}
	m.kinds[kind] = true
	return kind
}

// knownAgents are the agent label values; anything else is "other".
var knownAgents = map[string]bool{agent.Claude: true, agent.Codex: true, agent.Gemini: true, agent.Copilot: true, agent.Cursor: true}

// agentLabel bounds the agent label.
func agentLabel(agent string) string {
	if knownAgents[agent] {
		return agent
	}
	return "other"
}

// toolLabel bounds the tool label: the names of the agents' built-in
// tools (those in the embedded catalog) as they are, MCP tools as "mcp",
// everything else as "other".
func (m *Metrics) toolLabel(agent, tool string) string {
	if m.builtin != nil {
		if _, ok := m.builtin.Lookup(agent, tool); ok {
			return tool
		}
	}
	if isMCP(agent, tool) {
		return "mcp"
	}
	return "other"
}

func isMCP(agent, tool string) bool {
	switch {
	case strings.HasPrefix(tool, "mcp__"), strings.HasPrefix(tool, "MCP:"):
		return true
	case agent == "gemini" && strings.HasPrefix(tool, "mcp_"):
		return true
	}
	return false
}

// wellFormedKind reports whether kind looks like a stable evidence kind:
// 1 to 48 characters of [a-z0-9_-], starting with a letter or digit.
func wellFormedKind(kind string) bool {
	if kind == "" || len(kind) > 48 || kind[0] == '-' || kind[0] == '_' {
		return false
	}
	for i := 0; i < len(kind); i++ {
		c := kind[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// mcpCollector reports discovery on every scrape: drifts seen, and the
// discovered tool definitions by label state. Its labels are the three
// states only.
type mcpCollector struct {
	reg   *mcp.Registry
	state func(key, hash string) string
	drift *prometheus.Desc
	tools *prometheus.Desc
}

// watchMCP registers the MCP metrics: narrowd_mcp_drift_total and
// narrowd_mcp_tools{state}.
func (m *Metrics) watchMCP(reg *mcp.Registry, state func(key, hash string) string) {
	name := func(n string) string { return prometheus.BuildFQName(namespace, "", n) }
	m.reg.MustRegister(&mcpCollector{
		reg: reg, state: state,
		drift: prometheus.NewDesc(name("mcp_drift_total"), "MCP tool definitions seen to change since a previous discovery round (their labels no longer apply).", nil, nil),
		tools: prometheus.NewDesc(name("mcp_tools"), "Discovered MCP tool definitions by label state (labelled, unlabelled, drifted: labelled only at another definition).", []string{"state"}, nil),
	})
}

func (c *mcpCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.drift
	ch <- c.tools
}

func (c *mcpCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(c.drift, prometheus.CounterValue, float64(c.reg.DriftTotal()))
	counts := map[string]int{MCPLabelled: 0, MCPUnlabelled: 0, MCPDrifted: 0}
	for _, t := range c.reg.Tools() {
		counts[c.state(t.Key, t.DefHash)]++
	}
	for _, st := range []string{MCPLabelled, MCPUnlabelled, MCPDrifted} {
		ch <- prometheus.MustNewConstMetric(c.tools, prometheus.GaugeValue, float64(counts[st]), st)
	}
}
