package proofs_test

import (
	"strings"
	"testing"

	"github.com/narrowd/narrowd/parse"
	"github.com/narrowd/narrowd/proofs"
	"github.com/narrowd/narrowd/rules"
)

func targetList(ts []proofs.Target) string {
	var parts []string
	for _, t := range ts {
		s := strings.TrimPrefix(t.Abs, "/ws/")
		if t.Recursive {
			s += "(r)"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

// TestWriteTargets pins which shell commands have a complete list of the
// workspace files they change, and that list. "-" means no complete list:
// no snapshot may back such a call.
func TestWriteTargets(t *testing.T) {
	k, err := parse.DefaultKnowledge()
	if err != nil {
		t.Fatal(err)
	}
	ps := proofs.NewPaths([]string{"/ws"}, nil, nil)
	tests := []struct{ cmd, want string }{
		{`sed -i 's/a/b/' src/main.go`, "src/main.go"},
		{`echo x > out.txt`, "out.txt"},
		{`echo x >> notes.md`, "notes.md"},
		{`cat > src/config.ts <<'EOF'` + "\nx\nEOF", "src/config.ts"},
		{`cp config.example.yaml config.yaml`, "config.yaml"},
		{`mv src/old.ts src/new.ts`, "src/old.ts(r) src/new.ts"},
		{`rm -f coverage.out`, "coverage.out"},
		{`rm src/a.go src/b.go`, "src/a.go src/b.go"},
		// A move or copy of a tree lists its targets only after narrowd walked
		// the source on disk for standing-configuration names; these Paths
		// have no disk (TestWriteTargetsRelocate has one).
		{`jq . p.json > tmp.json && mv tmp.json p.json`, "-"},
		{`mkdir d && touch d/f && mv d x`, "-"},
		{`touch a && touch a`, "a"},
		{`echo hi > /dev/null`, ""},
		{`ls -la`, ""},
		{`truncate -s 0 ../app.log`, "-"},
		{`echo x > /etc/passwd`, "-"},
		{`echo x > ~/.bashrc`, "-"},
		{`echo x > "$F"`, "-"},
		{`sed -i s/a/b/ *.go`, "-"},
		{`rm -rf build/`, "build(r)"},
		{`go mod edit -go=1.26`, "-"},
		{`git add src/a.ts`, "-"},
		{`git commit -m x`, "-"},
		{`curl -o out.html https://example.com`, "-"},
		{`make > build.log`, "-"},
		{`sudo tee /ws/x < y`, "-"},
		{`bash script.sh`, "-"},
		{`frobnicate --write out.txt`, "-"},
		{`echo $(rm x) > y`, "-"},
		{`echo x >`, "-"},

		// Files the arguments do not name: backups and compressors.
		{`sed -i.bak 's/v1/v2/' config.yaml`, "-"},
		{`sed -ibak s/a/b/ f`, "-"},
		{`sed -Ei.orig s/a/b/ f`, "-"},
		{`sed -i'/root/.ssh/*' 's/^//' authorized_keys`, "-"},
		{`sed --in-place=.orig s/a/b/ f`, "-"},
		{`sed -si s/a/b/ f`, "f"},
		{`sed -Ei s/a/b/ f`, "f"},
		{`sed -i -e s/i/x/ f`, "f"},
		{`cp -b a b`, "-"},
		{`cp --backup=numbered a b`, "-"},
		{`cp -S .old a b`, "-"},
		{`cp -a a b`, "-"},
		{`mv -b a b`, "-"},
		{`ln -sfb a b`, "-"},
		{`install -b a b`, "-"},
		{`install -m 644 a b`, "b"},
		{`gzip f`, "-"},
		{`gunzip f.gz`, "-"},
		{`xz -d f.xz`, "-"},
		{`awk -i inplace -v inplace::suffix=.bak '{print}' f`, "-"},
		// Standing configuration never backs a snapshot: undo restores
		// bytes, not what a hook or a task ran in between.
		{`echo x > .envrc`, "-"},
		{`echo x > CLAUDE.md`, "-"},
		{`sed -i s/a/b/ .github/workflows/ci.yml`, "-"},
		{`echo x > src/main.go && touch node_modules/.bin/x`, "-"},
		{`rm -rf .git`, "-"},
		{`rm .claude/settings.json`, "-"},
		{`rm -rf .venv`, ".venv(r)"},
		{`rm -rf .pytest_cache`, ".pytest_cache(r)"},
		{`touch .gitignore`, ".gitignore"},
		{`tar -xf a.tar -C sub`, "-"},
	}
	for _, tc := range tests {
		t.Run(tc.cmd, func(t *testing.T) {
			ts, ok := proofs.WriteTargets(parse.Analyze(tc.cmd, k), "/ws", ps)
			got := targetList(ts)
			if !ok {
				got = "-"
			}
			if got != tc.want {
				t.Errorf("WriteTargets(%q) = %q, want %q", tc.cmd, got, tc.want)
			}
		})
	}
}

func TestToolTargets(t *testing.T) {
	ps := proofs.NewPaths([]string{"/ws"}, nil, nil)
	patch := "*** Begin Patch\n*** Add File: a.txt\n+x\n*** Update File: b.txt\n*** Move to: c.txt\n@@\n-x\n+y\n*** Delete File: d.txt\n*** End Patch"
	tests := []struct {
		name  string
		spec  rules.InputSpec
		input map[string]any
		want  string
	}{
		{"write inside", rules.InputSpec{Kind: rules.InputWrite, Field: "file_path"}, map[string]any{"file_path": "/ws/a.go"}, "a.go"},
		{"edit relative", rules.InputSpec{Kind: rules.InputEdit, Field: "file_path"}, map[string]any{"file_path": "src/a.go"}, "src/a.go"},
		{"delete", rules.InputSpec{Kind: rules.InputDelete, Field: "file_path"}, map[string]any{"file_path": "/ws/a.go"}, "a.go"},
		{"write outside", rules.InputSpec{Kind: rules.InputWrite, Field: "file_path"}, map[string]any{"file_path": "/etc/hosts"}, "-"},
		{"write the root", rules.InputSpec{Kind: rules.InputWrite, Field: "file_path"}, map[string]any{"file_path": "/ws"}, "-"},
		{"path not a string", rules.InputSpec{Kind: rules.InputWrite, Field: "file_path"}, map[string]any{"file_path": 3}, "-"},
		{"read", rules.InputSpec{Kind: rules.InputRead, Field: "file_path"}, map[string]any{"file_path": "/ws/a.go"}, "-"},
		{"patch", rules.InputSpec{Kind: rules.InputPatch, Field: "input"}, map[string]any{"input": patch}, "a.txt b.txt c.txt d.txt"},
		{"patch escaping", rules.InputSpec{Kind: rules.InputPatch, Field: "input"}, map[string]any{"input": "*** Begin Patch\n*** Add File: ../x\n*** End Patch"}, "-"},
		{"not a patch", rules.InputSpec{Kind: rules.InputPatch, Field: "input"}, map[string]any{"input": "rm -rf /"}, "-"},
		{"write standing", rules.InputSpec{Kind: rules.InputWrite, Field: "file_path"}, map[string]any{"file_path": "/ws/.claude/settings.json"}, "-"},
		{"edit instructions", rules.InputSpec{Kind: rules.InputEdit, Field: "file_path"}, map[string]any{"file_path": "AGENTS.md"}, "-"},
		{"delete a hook", rules.InputSpec{Kind: rules.InputDelete, Field: "file_path"}, map[string]any{"file_path": ".husky/pre-commit"}, "-"},
		{"delete a cache", rules.InputSpec{Kind: rules.InputDelete, Field: "file_path"}, map[string]any{"file_path": "__pycache__/m.pyc"}, "__pycache__/m.pyc"},
		{"patch adds a workflow", rules.InputSpec{Kind: rules.InputPatch, Field: "input"}, map[string]any{"input": "*** Begin Patch\n*** Add File: a.go\n+x\n*** Add File: .github/workflows/x.yml\n+y\n*** End Patch"}, "-"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts, ok := proofs.ToolTargets(tc.spec, tc.input, "/ws", ps)
			got := targetList(ts)
			if !ok {
				got = "-"
			}
			if got != tc.want {
				t.Errorf("ToolTargets = %q, want %q", got, tc.want)
			}
		})
	}
}
