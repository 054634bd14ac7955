package e2e

import (
	"testing"
)

// checkMetrics scrapes the daemon's /metrics over HTTP after a scripted
// run and asserts that narrowd_decisions_total and
// narrowd_prompts_avoided_total for the agent equal what the probes did:
// per probe, one pre-tool answer (abstain where the agent has a
// permission-request hook and narrowd would allow, else the outcome), and
// for an allowed probe the client asks about, one permission request
// answered allow, which is a prompt avoided. extra are decisions the test
// caused outside the probes, by tool and answer.
func checkMetrics(t *testing.T, w *World, c clientSpec, outs []probeOutcome) {
	t.Helper()
	type key struct{ tool, answer string }
	want := map[key]float64{}
	avoided := map[string]float64{}
	for _, o := range outs {
		tool := o.probe.call.Name
		switch {
		case o.outcome == "allow" && c.permEvent != "":
			want[key{tool, "abstain"}]++
			if c.asks(o.probe) {
				pt := tool
				if r, ok := c.permTool[tool]; ok {
					pt = r
				}
				want[key{pt, "allow"}]++
				avoided[pt]++
			}
		default:
			want[key{tool, o.outcome}]++
		}
	}
	samples := ParseMetrics(w.MetricsText())
	got := map[key]float64{}
	gotAvoided := map[string]float64{}
	for _, s := range samples {
		if s.Labels["agent"] != c.agent {
			continue
		}
		switch s.Name {
		case "narrowd_decisions_total":
			got[key{s.Labels["tool"], s.Labels["outcome"]}] += s.Value
		case "narrowd_prompts_avoided_total":
			gotAvoided[s.Labels["tool"]] += s.Value
		}
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("narrowd_decisions_total{agent=%q,tool=%q,outcome=%q} = %v, want %v", c.agent, k.tool, k.answer, got[k], v)
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok && v != 0 {
			t.Errorf("narrowd_decisions_total{agent=%q,tool=%q,outcome=%q} = %v, want none", c.agent, k.tool, k.answer, v)
		}
	}
	for tool, v := range avoided {
		if gotAvoided[tool] != v {
			t.Errorf("narrowd_prompts_avoided_total{agent=%q,tool=%q} = %v, want %v", c.agent, tool, gotAvoided[tool], v)
		}
	}
	for tool, v := range gotAvoided {
		if avoided[tool] == 0 && v != 0 {
			t.Errorf("narrowd_prompts_avoided_total{agent=%q,tool=%q} = %v, want 0", c.agent, tool, v)
		}
	}
	total := 0.0
	for _, v := range avoided {
		total += v
	}
	t.Logf("metrics checked: %d decision series, %v prompts avoided expected", len(want), total)
}
