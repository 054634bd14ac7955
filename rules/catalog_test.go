package rules

import (
	"os"
	"strings"
	"testing"
)

func TestDefaultCatalog(t *testing.T) {
	t.Parallel()
	c, err := DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	// Every built-in tool the issue names must be labelled.
	for _, at := range []struct{ agent, tool string }{
		{"claude", "Bash"}, {"claude", "Read"}, {"claude", "Write"}, {"claude", "Edit"},
		{"claude", "MultiEdit"}, {"claude", "NotebookEdit"}, {"claude", "Glob"}, {"claude", "Grep"},
		{"claude", "WebFetch"}, {"claude", "WebSearch"}, {"claude", "Task"}, {"claude", "Agent"},
		{"claude", "TodoWrite"},
		{"codex", "Bash"}, {"codex", "apply_patch"},
		{"gemini", "run_shell_command"}, {"gemini", "read_file"}, {"gemini", "write_file"},
		{"gemini", "replace"}, {"gemini", "glob"}, {"gemini", "grep_search"}, {"gemini", "web_fetch"},
		{"copilot", "bash"}, {"copilot", "view"}, {"copilot", "create"}, {"copilot", "edit"},
		{"copilot", "glob"}, {"copilot", "grep"},
		{"cursor", "Shell"}, {"cursor", "Read"}, {"cursor", "Write"}, {"cursor", "Delete"},
	} {
		if _, ok := c.Lookup(at.agent, at.tool); !ok {
			t.Errorf("%s/%s is not in the catalog", at.agent, at.tool)
		}
	}
	for _, e := range c.Entries() {
		for _, d := range Dims() {
			why := e.Why[d.String()]
			// One line citing the deciding rule (spec §6 step 4).
			if strings.Contains(why, "\n") || !strings.Contains(why, "§") {
				t.Errorf("%s: %s reasoning %q must be one line citing a spec rule", e.Key, d, why)
			}
			if !strings.HasPrefix(why, e.Labels.Value(d)+":") {
				t.Errorf("%s: %s reasoning %q must start with its value %q", e.Key, d, why, e.Labels.Value(d))
			}
		}
	}
	// Shell tools sit at the domain ceiling with open_world (§4).
	for _, at := range [][2]string{{"claude", "Bash"}, {"codex", "Bash"}, {"gemini", "run_shell_command"}, {"copilot", "bash"}, {"cursor", "Shell"}} {
		e, _ := c.Lookup(at[0], at[1])
		if e == nil {
			continue
		}
		want := MaxLabels()
		want.Facts[PureDeletion] = true
		if e.Labels != want {
			t.Errorf("%s: got %v, want the domain ceiling %v", e.Key, e.Labels, want)
		}
	}
	if _, ok := c.Lookup("claude", "mcp__github__create_issue"); ok {
		t.Error("an MCP tool must never be labelled by the built-in catalog")
	}
}

// TestSpecExamples reproduces every value the spec gives for its worked
// examples (appendix) and the examples of §3.
func TestSpecExamples(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("testdata/catalog/spec-examples.toml")
	if err != nil {
		t.Fatal(err)
	}
	c, err := LoadCatalog("spec-examples.toml", data)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		key  string
		want map[string]any
	}{
		{"mail/send_email", map[string]any{"mutation": "create", "scope": "single_record", "reversibility": "irreversible", "egress": "external", "financial": "none", "returns_class": "first_party_structured"}},
		{"files/read_file", map[string]any{"mutation": "read", "scope": "account_wide", "reversibility": "reversible", "egress": "none", "financial": "none", "returns_class": "third_party_content", "open_world": true}},
		{"payments/create_refund", map[string]any{"mutation": "create", "scope": "single_record", "reversibility": "irreversible", "egress": "none", "financial": "direct", "returns_class": "first_party_structured"}},
		{"files/write_file", map[string]any{"mutation": "delete", "egress": "none", "pure_deletion": false}},
		{"repo/update_issue", map[string]any{"mutation": "update"}},
		{"sql/execute_sql", map[string]any{"mutation": "delete", "scope": "account_wide", "configuration_object": false}},
		{"chat/send_message", map[string]any{"scope": "single_record", "egress": "internal"}},
		{"repo/delete_repository", map[string]any{"scope": "bulk"}},
		{"mail/create_filter", map[string]any{"scope": "account_wide"}},
		{"files/delete_file", map[string]any{"reversibility": "reversible_with_effort"}},
		{"docs/update_page", map[string]any{"reversibility": "reversible_with_effort"}},
		{"web/fetch", map[string]any{"egress": "external"}},
		{"repo/create_issue", map[string]any{"egress": "external"}},
		{"payments/create_invoice", map[string]any{"financial": "direct"}},
		{"cloud/create_instance", map[string]any{"financial": "indirect"}},
		{"mail/get_message", map[string]any{"returns_class": "third_party_content"}},
		{"payments/get_balance", map[string]any{"returns_class": "first_party_structured"}},
		{"files/list_directory", map[string]any{"returns_class": "third_party_content"}},
	}
	for _, tt := range tests {
		t.Run(strings.ReplaceAll(tt.key, "/", "-"), func(t *testing.T) {
			t.Parallel()
			h := c.History(tt.key)
			if len(h) != 1 {
				t.Fatalf("%d records", len(h))
			}
			e, ok := c.Bound(tt.key, h[0].DefHash)
			if !ok {
				t.Fatal("not bound at its own hash")
			}
			got := e.Labels.Map()
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("%s = %v, spec says %v", k, got[k], v)
				}
			}
			// The observation rule (§3.3): external egress on a
			// changing action forces irreversible.
			if e.Labels.Get(Egress) == 2 && e.Labels.Get(Mutation) > 0 && e.Labels.Get(Reversibility) != 2 {
				t.Errorf("observation rule violated: %v", e.Labels)
			}
		})
	}
}

// TestRebind: when a tool's hash changes its old labels stay in history
// and the tool counts as unlabelled (spec §1).
func TestRebind(t *testing.T) {
	t.Parallel()
	const v1 = `
[[tool]]
key = "github/create_issue"
def_hash = "aaa"
[tool.labels]
mutation = "create"
scope = "single_record"
reversibility = "irreversible"
egress = "external"
financial = "none"
returns_class = "first_party_structured"
[tool.why]
mutation = "create: §3.1"
scope = "single_record: §3.2"
reversibility = "irreversible: §3.3 observation rule"
egress = "external: §3.4"
financial = "none: §3.5"
returns_class = "first_party_structured: §3.6"
`
	c, err := LoadCatalog("labels.toml", []byte(v1))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Bound("github/create_issue", "aaa"); !ok {
		t.Fatal("labelled tool not bound at its hash")
	}
	if _, ok := c.Bound("github/create_issue", "bbb"); ok {
		t.Fatal("a changed definition must be unlabelled")
	}
	if _, ok := c.Bound("github/create_issue", ""); ok {
		t.Fatal("an unknown hash must be unlabelled")
	}
	// A later review records new labels for the new hash; the old
	// record stays in history and no longer applies.
	v2 := strings.Replace(v1, `"aaa"`, `"bbb"`, 1)
	c, err = LoadCatalog("labels.toml", []byte(v1), []byte(v2))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Bound("github/create_issue", "aaa"); ok {
		t.Error("old hash still bound after re-review")
	}
	if _, ok := c.Bound("github/create_issue", "bbb"); !ok {
		t.Error("new hash not bound")
	}
	if h := c.History("github/create_issue"); len(h) != 2 || h[0].DefHash != "aaa" {
		t.Errorf("history = %v", h)
	}
}

func TestCatalogErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, src, want string
	}{
		{"unknown-value", "[[tool]]\nkey = \"a/b\"\n[tool.labels]\nmutation = \"destroy\"\n", "cat.toml:1: a/b: unknown mutation value \"destroy\""},
		{"missing-label", "[[tool]]\nkey = \"a/b\"\n[tool.labels]\nmutation = \"read\"\n", "missing label \"scope\""},
		{"unknown-label", "\n\n[[tool]]\nkey = \"a/b\"\n[tool.labels]\ncolour = \"red\"\n", "cat.toml:3: a/b:"},
		{"unknown-key", "[[tool]]\nkey = \"a/b\"\nclass = \"x\"\nlabelz = 1\n", "unknown key \"tool.labelz\""},
		{"unknown-class", "[[tool]]\nkey = \"a/b\"\nclass = \"nope\"\n", "unknown class \"nope\""},
		{"bad-key", "[[tool]]\nkey = \"nokey\"\nclass = \"x\"\n", "must be namespace/tool"},
		{"syntax", "[[tool]\nkey=1\n", "cat.toml:2:"},
		{"missing-why", "[class.c.labels]\nmutation=\"read\"\nscope=\"bulk\"\nreversibility=\"reversible\"\negress=\"none\"\nfinancial=\"none\"\nreturns_class=\"first_party_structured\"\n", "missing reasoning for mutation"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := LoadCatalog("cat.toml", []byte(tt.src))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}
