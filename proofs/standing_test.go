package proofs

import (
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/narrowd/narrowd/rules"
)

// TestStandingLoads: the embedded table parses, and each entry says what
// loads it and why.
func TestStandingLoads(t *testing.T) {
	t.Parallel()
	tab, err := Standing()
	if err != nil {
		t.Fatal(err)
	}
	if len(tab.Entries()) < 100 || len(tab.Patterns()) != len(tab.Entries()) {
		t.Fatalf("table has %d entries, %d patterns", len(tab.Entries()), len(tab.Patterns()))
	}
	for _, e := range tab.Entries() {
		if e.LoadedBy == "" || e.Reason == "" {
			t.Errorf("entry %q lacks loaded_by or reason", e.Pattern)
		}
	}
}

// TestStandingOrdinary pins which workspace-relative paths a write may
// treat as one ordinary file.
func TestStandingOrdinary(t *testing.T) {
	t.Parallel()
	tab, err := Standing()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		rel      string
		ordinary bool
	}{
		{"src/main.go", true},
		{"README.md", true},
		{"docs/design.md", true},
		{"Makefile", true},
		{"package.json", true},
		{".gitignore", true},
		{"sub/.gitignore", true},
		{".editorconfig", true},
		{".gitkeep", true},
		{".env.example", true},
		{".env", false},
		{".env.local", false},
		{"node_modules/left-pad/index.js", true},
		{"src/venvironment.go", true},
		{"claude.md.orig/x", true},
		// Dot segments off the inert list.
		{".envrc", false},
		{".foo", false},
		{"docs/.hidden/x.md", false},
		{".gitignore/x", false},
		{".prettierrc", false},
		{"src/.eslintrc.js", false},
		// The table, dot or not.
		{"CLAUDE.md", false},
		{"claude.md", false},
		{"pkg/CLAUDE.md", false},
		{"AGENTS.md", false},
		{"GEMINI.md", false},
		{".mcp.json", false},
		{".claude/settings.json", false},
		{".claude/commands/x.md", false},
		{".git", false},
		{".git/hooks/pre-commit", false},
		{"vendor/lib/.git/config", false},
		{".github/workflows/ci.yml", false},
		{".github/copilot-instructions.md", false},
		{".vscode/tasks.json", false},
		{"app.code-workspace", false},
		{"sub/.husky/pre-commit", false},
		{"lefthook.yml", false},
		{".npmrc", false},
		{"bunfig.toml", false},
		{"pip.conf", false},
		{"rust-toolchain", false},
		{"rust-toolchain.toml", false},
		{"go.work", false},
		{"mise.toml", false},
		{"eslint.config.mjs", false},
		{"node_modules/.bin/x", false},
		{".venv/lib/python3.12/site-packages/x.pth", false},
		{"venv/bin/activate", false},
		{"venv", false},
		{"lib/python3/site-packages/evil/__init__.py", false},
		{"a.pth", false},
		{"pkg/__pycache__/m.cpython-312.pyc", false},
		{"Jenkinsfile", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := tab.Ordinary(tt.rel) == ""; got != tt.ordinary {
			t.Errorf("Ordinary(%q) ordinary=%v, want %v (%s)", tt.rel, got, tt.ordinary, tab.Ordinary(tt.rel))
		}
	}
}

// TestStandingMatchAgreesWithDoublestar: the string-search matchers
// agree with doublestar (plus "dir/**" matching dir) on every pattern.
func TestStandingMatchAgreesWithDoublestar(t *testing.T) {
	t.Parallel()
	tab, err := Standing()
	if err != nil {
		t.Fatal(err)
	}
	var rels []string
	for _, e := range tab.Entries() {
		lit := strings.NewReplacer("**/", "", "/**", "", "*", "x", "{yml,yaml,json,toml}", "yml").Replace(e.Pattern)
		rels = append(rels, lit, "a/"+lit, lit+"/b", "a/"+lit+"/b/c", "x"+lit, lit+"x", "a/x"+lit)
	}
	for _, m := range tab.matchers {
		for _, rel := range rels {
			want, _ := doublestar.Match(m.pattern, rel)
			if dir, ok := strings.CutSuffix(m.pattern, "/**"); ok && !want {
				want, _ = doublestar.Match(dir, rel)
			}
			if got := m.match(rel); got != want {
				t.Errorf("pattern %q on %q: match %v, doublestar %v", m.pattern, rel, got, want)
			}
		}
	}
}

// TestLoadStandingRefuses: a malformed table is an error, never a
// shorter list.
func TestLoadStandingRefuses(t *testing.T) {
	t.Parallel()
	bad := map[string]string{
		"no-reason":   "[[entry]]\npattern = \"**/x\"\nloaded_by = \"t\"\n",
		"upper":       "[[entry]]\npattern = \"**/X\"\nloaded_by = \"t\"\nreason = \"r\"\n",
		"absolute":    "[[entry]]\npattern = \"/x\"\nloaded_by = \"t\"\nreason = \"r\"\n",
		"bad-pattern": "[[entry]]\npattern = \"**/[x\"\nloaded_by = \"t\"\nreason = \"r\"\n",
		"unknown-key": "[[entry]]\npattern = \"**/x\"\nloaded_by = \"t\"\nreason = \"r\"\nwhen = \"y\"\n",
		"inert-nodot": "[[inert]]\nname = \"gitignore\"\nreason = \"r\"\n",
		"inert-path":  "[[inert]]\nname = \".a/.b\"\nreason = \"r\"\n",
		"not-toml":    "[[entry",
	}
	for name, data := range bad {
		if _, err := LoadStanding([]byte(data)); err == nil {
			t.Errorf("%s: LoadStanding accepted %q", name, data)
		}
	}
}

// TestNotOrdinaryThroughSymlink: an ordinary name that a symlink on disk
// leads into .git/hooks is standing configuration.
func TestNotOrdinaryThroughSymlink(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, ".git", "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(".git/hooks", filepath.Join(ws, "h")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(".git/hooks/pre-commit", filepath.Join(ws, "f")); err != nil {
		t.Fatal(err)
	}
	ps := NewPaths([]string{ws}, nil, OSDisk{})
	for _, name := range []string{"h/pre-commit", "f"} {
		var c claims
		writeRaises(&c, ps, ps.Resolve(ws, name), name, false)
		if len(c.ev) != 1 || c.ev[0].Kind != rules.KindStandingConfig {
			t.Errorf("write to %s: evidence %+v, want one standing-config", name, c.ev)
		}
	}
	var c claims
	writeRaises(&c, ps, ps.Resolve(ws, "src/x.go"), "src/x.go", false)
	if len(c.ev) != 0 {
		t.Errorf("write to src/x.go: evidence %+v, want none", c.ev)
	}
}

// TestOwnFile reads words as paths to narrowd's own files: ~ and $HOME
// forms, relative paths, and symlinks that lead there.
func TestOwnFile(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	own := filepath.Join(home, ".config", "narrowd")
	if err := os.MkdirAll(own, 0o755); err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(home, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(own, "profile.toml"), filepath.Join(ws, "p")); err != nil {
		t.Fatal(err)
	}
	ps := NewPaths([]string{ws}, nil, OSDisk{}).WithOwn(home, []string{own, "relative/dropped", "/"})
	tests := []struct {
		word string
		own  bool
	}{
		{"~/.config/narrowd/profile.toml", true},
		{"$HOME/.config/narrowd", true},
		{`"${HOME}/.config/narrowd/x"`, true},
		{own + "/x", true},
		{"../.config/narrowd/x", true},
		{"p", true},
		{"~/.config/narrowdx", false},
		{"~/.config", false},
		{"src/x.go", false},
		{"/", false},
		{"$OTHER/.config/narrowd", false},
	}
	for _, tt := range tests {
		if got := ps.ownFileLinked(ws, tt.word) != ""; got != tt.own {
			t.Errorf("ownFileLinked(%q) = %v, want %v", tt.word, got, tt.own)
		}
	}
	if ps.OwnFile(ws, "p") != "" {
		t.Error("OwnFile followed a symlink; only writes do")
	}
	if len(ps.Own) != 1 {
		t.Errorf("Own = %v, want only %s", ps.Own, own)
	}
	if ps.ownInText(`open("`+own+`/p","w")`) == "" || ps.ownInText("print('~/.config/narrowd/p')") == "" || ps.ownInText("x") != "" {
		t.Error("ownInText missed a path written inside text, or found one in x")
	}
}

// TestLinkedPathAgreesWithRealpath is the kernel as oracle: for generated
// paths through a tree with symlinks (into .git/hooks, sideways, up), the
// place narrowd says a write lands, when it raises nothing, is where GNU
// realpath (which resolves .. physically, as the kernel does) says.
func TestLinkedPathAgreesWithRealpath(t *testing.T) {
	t.Parallel()
	realpath, err := exec.LookPath("realpath")
	if err != nil {
		t.Skip("no realpath")
	}
	ws := t.TempDir()
	for _, d := range []string{"a/b", ".git/hooks", "c"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for link, to := range map[string]string{"l1": ".git/hooks", "a/l2": "b", "c/l3": "../a/b", "l4": ws + "/c"} {
		if err := os.Symlink(to, filepath.Join(ws, link)); err != nil {
			t.Fatal(err)
		}
	}
	ps := NewPaths([]string{ws}, nil, OSDisk{})
	parts := []string{"a", "b", "c", "l1", "l2", "l3", "l4", "..", ".", "x"}
	rng := rand.New(rand.NewPCG(1, 2))
	checked, raised := 0, 0
	for range 3000 {
		n := 1 + rng.IntN(5)
		segs := make([]string, n)
		for i := range segs {
			segs[i] = parts[rng.IntN(len(parts))]
		}
		p := strings.Join(segs, "/")
		w := ps.Resolve(ws, p)
		if !w.Inside || w.Abs == w.Root {
			continue
		}
		if ps.Escape(w) != "" {
			raised++
			continue
		}
		linked, ok := ps.linkedPath(w.Root, w.Abs)
		if !ok {
			continue
		}
		// Joined as written: filepath.Join would clean the .. away.
		out, err := exec.Command(realpath, "-m", ws+"/"+p).Output()
		if err != nil {
			continue
		}
		checked++
		if got := strings.TrimSpace(string(out)); got != linked {
			t.Errorf("%s: narrowd says %s, realpath says %s", p, linked, got)
		}
	}
	if checked < 200 || raised == 0 {
		t.Errorf("checked %d paths and raised on %d; the generator reaches too little", checked, raised)
	}
}

// FuzzStandingMatch: the string-search matchers agree with doublestar on
// any relative path (go test ./proofs -fuzz FuzzStandingMatch -fuzztime 20s).
func FuzzStandingMatch(f *testing.F) {
	for _, s := range []string{"a/.git/hooks/x", "claude.md", "x/claude.md/y", ".github/workflows/ci.yml", "venv", "a/b.pth", "node_modules/.bin"} {
		f.Add(s)
	}
	tab, err := Standing()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, rel string) {
		rel = strings.Trim(strings.ToLower(rel), "/")
		if rel == "" || strings.Contains(rel, "//") || strings.ContainsAny(rel, "\\\x00") {
			return
		}
		for _, m := range tab.matchers {
			want, _ := doublestar.Match(m.pattern, rel)
			if dir, ok := strings.CutSuffix(m.pattern, "/**"); ok && !want {
				want, _ = doublestar.Match(dir, rel)
			}
			if got := m.match(rel); got != want {
				t.Errorf("pattern %q on %q: match %v, doublestar %v", m.pattern, rel, got, want)
			}
		}
	})
}
