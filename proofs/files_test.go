package proofs

import (
	"testing"

	"github.com/narrowd/narrowd/rules"
)

// TestTool narrows the file and web tools' ceilings from their arguments.
func TestTool(t *testing.T) {
	t.Parallel()
	ps := NewPaths([]string{"/w"}, nil, nil)
	fileRead := rules.MaxLabels().With(rules.Mutation, 0).With(rules.Reversibility, 0).With(rules.Egress, 0).With(rules.Financial, 0)
	write := rules.MaxLabels().With(rules.Egress, 0).With(rules.Financial, 0).With(rules.ReturnsClass, 0)
	write.Facts[rules.PureDeletion] = true
	tests := []struct {
		name    string
		spec    rules.InputSpec
		ceiling rules.Labels
		input   map[string]any
		scope   string
		open    bool
	}{
		{"read-inside", rules.InputSpec{Kind: rules.InputRead, Field: "file_path"}, fileRead, map[string]any{"file_path": "/w/src/a.go"}, "single_record", false},
		{"read-relative", rules.InputSpec{Kind: rules.InputRead, Field: "file_path"}, fileRead, map[string]any{"file_path": "src/a.go"}, "single_record", false},
		{"read-outside", rules.InputSpec{Kind: rules.InputRead, Field: "file_path"}, fileRead, map[string]any{"file_path": "/etc/passwd"}, "account_wide", true},
		{"read-escape", rules.InputSpec{Kind: rules.InputRead, Field: "file_path"}, fileRead, map[string]any{"file_path": "/w/../etc/passwd"}, "account_wide", true},
		{"read-sensitive", rules.InputSpec{Kind: rules.InputRead, Field: "file_path"}, fileRead, map[string]any{"file_path": "/w/.env"}, "account_wide", false},
		{"read-missing", rules.InputSpec{Kind: rules.InputRead, Field: "file_path"}, fileRead, map[string]any{"path": "/w/a"}, "account_wide", true},
		{"read-not-string", rules.InputSpec{Kind: rules.InputRead, Field: "file_path"}, fileRead, map[string]any{"file_path": 7}, "account_wide", true},
		{"write-inside", rules.InputSpec{Kind: rules.InputWrite, Field: "file_path"}, write, map[string]any{"file_path": "/w/a.go"}, "single_record", false},
		{"write-hooks", rules.InputSpec{Kind: rules.InputWrite, Field: "file_path"}, write, map[string]any{"file_path": "/w/.git/hooks/pre-commit"}, "account_wide", false},
		{"glob-default-root", rules.InputSpec{Kind: rules.InputGlob, Field: "pattern", Dir: "path"}, fileRead, map[string]any{"pattern": "**/*.go"}, "bulk", false},
		{"glob-root-outside", rules.InputSpec{Kind: rules.InputGlob, Field: "pattern", Dir: "path"}, fileRead, map[string]any{"pattern": "*.go", "path": "/etc"}, "account_wide", true},
		{"glob-pattern-climbs", rules.InputSpec{Kind: rules.InputGlob, Field: "pattern", Dir: "path"}, fileRead, map[string]any{"pattern": "../**/*"}, "account_wide", true},
		{"glob-pattern-absolute", rules.InputSpec{Kind: rules.InputGlob, Field: "pattern", Dir: "path"}, fileRead, map[string]any{"pattern": "/home/**/id_rsa"}, "account_wide", true},
		{"grep-roots-list", rules.InputSpec{Kind: rules.InputGrep, Field: "glob", Dir: "paths"}, fileRead, map[string]any{"pattern": "x", "paths": []any{"src", "docs"}}, "bulk", false},
		{"grep-one-root-outside", rules.InputSpec{Kind: rules.InputGrep, Field: "glob", Dir: "paths"}, fileRead, map[string]any{"pattern": "x", "paths": []any{"src", "/"}}, "account_wide", true},
		{"grep-secret-pattern", rules.InputSpec{Kind: rules.InputGrep, Field: "glob", Dir: "path"}, fileRead, map[string]any{"pattern": "API_KEY|password"}, "account_wide", false},
		{"list-inside", rules.InputSpec{Kind: rules.InputList, Field: "dir_path"}, fileRead, map[string]any{"dir_path": "/w/src"}, "bulk", false},
		{"fetch-stays", rules.InputSpec{Kind: rules.InputFetch, Field: "url"}, fileRead.With(rules.Egress, 2), map[string]any{"url": "https://example.com"}, "account_wide", true},
		{"patch-add", rules.InputSpec{Kind: rules.InputPatch, Field: "command"}, write, map[string]any{"command": "*** Begin Patch\n*** Add File: a.txt\n+x\n*** End Patch\n"}, "single_record", false},
		{"patch-outside", rules.InputSpec{Kind: rules.InputPatch, Field: "command"}, write, map[string]any{"command": "*** Begin Patch\n*** Update File: ../x\n*** End Patch\n"}, "account_wide", true},
		{"patch-garbage", rules.InputSpec{Kind: rules.InputPatch, Field: "command"}, write, map[string]any{"command": "rm -rf /"}, "account_wide", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ev := Tool(tt.spec, tt.input, "/w", ps)
			n := Narrow(tt.ceiling, ev)
			if got := n.Value(rules.Scope); got != tt.scope {
				t.Errorf("scope = %s, want %s; evidence %+v", got, tt.scope, ev)
			}
			if n.Fact(rules.OpenWorld) != tt.open {
				t.Errorf("open_world = %v, want %v", n.Fact(rules.OpenWorld), tt.open)
			}
			if n.Get(rules.Egress) != tt.ceiling.Get(rules.Egress) || n.Get(rules.Mutation) > tt.ceiling.Get(rules.Mutation) {
				t.Errorf("egress or mutation moved: %v from %v", n, tt.ceiling)
			}
		})
	}
}

// TestPatchFacts: a patch that deletes nothing is not a pure deletion; one
// that only adds files creates and is undone by removing them.
func TestPatchFacts(t *testing.T) {
	t.Parallel()
	ps := NewPaths([]string{"/w"}, nil, nil)
	ceiling := rules.MaxLabels().With(rules.Egress, 0).With(rules.Financial, 0)
	ceiling.Facts[rules.PureDeletion] = true
	spec := rules.InputSpec{Kind: rules.InputPatch, Field: "command"}
	upd := Narrow(ceiling, Tool(spec, map[string]any{"command": "*** Begin Patch\n*** Update File: a.go\n@@\n-a\n+b\n*** End Patch"}, "/w", ps))
	if upd.Fact(rules.PureDeletion) || upd.Value(rules.Mutation) != "delete" {
		t.Errorf("update patch: %v", upd)
	}
	del := Narrow(ceiling, Tool(spec, map[string]any{"command": "*** Begin Patch\n*** Delete File: a.go\n*** End Patch"}, "/w", ps))
	if !del.Fact(rules.PureDeletion) {
		t.Errorf("delete patch lost pure_deletion: %v", del)
	}
	add := Narrow(ceiling, Tool(spec, map[string]any{"command": "*** Begin Patch\n*** Add File: a.go\n+x\n*** End Patch"}, "/w", ps))
	if add.Value(rules.Mutation) != "create" || add.Value(rules.Reversibility) != "reversible" || add.Fact(rules.PureDeletion) {
		t.Errorf("add patch: %v", add)
	}
}
