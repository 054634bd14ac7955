package proofs

import (
	"testing"

	"github.com/narrowd/narrowd/rules"
)

// TestMCPTool narrows labelled MCP tools only on absolute paths the
// label record names, because the server resolves relative ones against
// a directory narrowd does not know.
func TestMCPTool(t *testing.T) {
	t.Parallel()
	ps := NewPaths([]string{"/w"}, nil, nil)
	read := rules.MaxLabels().With(rules.Mutation, 0).With(rules.Reversibility, 0).With(rules.Egress, 0).With(rules.Financial, 0)
	tests := []struct {
		name  string
		spec  rules.InputSpec
		input map[string]any
		scope string
		open  bool
	}{
		{"read-inside", rules.InputSpec{Kind: rules.InputRead, Field: "path"}, map[string]any{"path": "/w/notes.md"}, "single_record", false},
		{"read-relative", rules.InputSpec{Kind: rules.InputRead, Field: "path"}, map[string]any{"path": "notes.md"}, "account_wide", true},
		{"read-dot", rules.InputSpec{Kind: rules.InputRead, Field: "path"}, map[string]any{"path": "./notes.md"}, "account_wide", true},
		{"read-tilde", rules.InputSpec{Kind: rules.InputRead, Field: "path"}, map[string]any{"path": "~/.ssh/id_rsa"}, "account_wide", true},
		{"read-ssh-key", rules.InputSpec{Kind: rules.InputRead, Field: "path"}, map[string]any{"path": "/root/.ssh/id_rsa"}, "account_wide", true},
		{"read-escape", rules.InputSpec{Kind: rules.InputRead, Field: "path"}, map[string]any{"path": "/w/../root/.ssh/id_rsa"}, "account_wide", true},
		{"read-sensitive-inside", rules.InputSpec{Kind: rules.InputRead, Field: "path"}, map[string]any{"path": "/w/.env"}, "account_wide", false},
		{"read-missing", rules.InputSpec{Kind: rules.InputRead, Field: "path"}, map[string]any{"file": "/w/a"}, "account_wide", true},
		{"read-array", rules.InputSpec{Kind: rules.InputRead, Field: "paths"}, map[string]any{"paths": []any{"/w/a"}}, "account_wide", true},
		{"no-field-declared", rules.InputSpec{Kind: rules.InputRead}, map[string]any{"path": "/w/a"}, "account_wide", true},
		{"kind-none", rules.InputSpec{Kind: rules.InputNone}, map[string]any{"path": "/w/a"}, "account_wide", true},
		{"shell-never", rules.InputSpec{Kind: rules.InputShell, Field: "command"}, map[string]any{"command": "ls"}, "account_wide", true},
		{"list-inside", rules.InputSpec{Kind: rules.InputList, Field: "path"}, map[string]any{"path": "/w/src"}, "bulk", false},
		{"list-default-root", rules.InputSpec{Kind: rules.InputList, Field: "path"}, map[string]any{}, "account_wide", true},
		{"search-inside", rules.InputSpec{Kind: rules.InputGrep, Field: "pattern", Dir: "path"}, map[string]any{"path": "/w", "pattern": "*.go"}, "bulk", false},
		{"search-no-root", rules.InputSpec{Kind: rules.InputGrep, Field: "pattern", Dir: "path"}, map[string]any{"pattern": "*.go"}, "account_wide", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ev := MCPTool(tt.spec, tt.input, ps)
			n := Narrow(read, ev)
			if got := n.Value(rules.Scope); got != tt.scope {
				t.Errorf("scope = %s, want %s; evidence %+v", got, tt.scope, ev)
			}
			if n.Fact(rules.OpenWorld) != tt.open {
				t.Errorf("open_world = %v, want %v; evidence %+v", n.Fact(rules.OpenWorld), tt.open, ev)
			}
		})
	}
}
