package proofs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	t.Parallel()
	ps := NewPaths([]string{"/home/u/proj", "/", "relative", "/srv/other/../data"}, nil, nil)
	if got := strings.Join(ps.Roots, ","); got != "/home/u/proj,/srv/data" {
		t.Fatalf("roots = %s (the file system root and relative roots must be dropped)", got)
	}
	tests := []struct {
		name, cwd, path string
		inside          bool
	}{
		{"relative", "/home/u/proj", "src/main.go", true},
		{"dot", "/home/u/proj", ".", true},
		{"root-itself", "/home/u/proj/src", "..", true},
		{"absolute-inside", "/tmp", "/home/u/proj/a.go", true},
		{"second-root", "/home/u/proj", "/srv/data/x", true},
		{"dotdot-escape", "/home/u/proj", "../secret", false},
		{"deep-escape", "/home/u/proj/src", "../../../etc/passwd", false},
		{"escape-and-back", "/home/u/proj", "../proj/a", true},
		{"sibling-prefix", "/home/u/proj", "/home/u/project2/a", false},
		{"absolute-outside", "/home/u/proj", "/etc/passwd", false},
		{"tilde", "/home/u/proj", "~/proj/a", false},
		{"tilde-user", "/home/u/proj", "~root/a", false},
		{"home-var", "/home/u/proj", "$HOME/proj/a", false},
		{"nul", "/home/u/proj", "a\x00b", false},
		{"control", "/home/u/proj", "a\nb", false},
		{"escape-char", "/home/u/proj", "a\x1b[2Jb", false},
		{"non-nfc", "/home/u/proj", "cafe\u0301.txt", false},
		{"nfc", "/home/u/proj", "caf\u00e9.txt", true},
		{"invalid-utf8", "/home/u/proj", "a\xffb", false},
		{"relative-no-cwd", "", "a", false},
		{"relative-bad-cwd", "rel", "a", false},
		{"empty", "/home/u/proj", "", false},
		{"cwd-outside", "/etc", "passwd", false},
		{"cwd-outside-climb-in", "/home/u", "proj/x", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := ps.Resolve(tt.cwd, tt.path)
			if w.Inside != tt.inside {
				t.Errorf("Resolve(%q, %q) inside = %v (%s), want %v", tt.cwd, tt.path, w.Inside, w.Why, tt.inside)
			}
			if !w.Inside && w.Why == "" {
				t.Error("a path that is not inside must say why")
			}
		})
	}
	if w := (Paths{}).Resolve("/a", "b"); w.Inside {
		t.Error("with no workspace nothing is inside")
	}
}

func TestSensitive(t *testing.T) {
	t.Parallel()
	ps := NewPaths([]string{"/w"}, []string{"**/prod-*.yaml"}, nil)
	for _, p := range []string{
		"/w/.env", "/w/config/.env.local", "/w/certs/server.pem", "/w/.ssh/id_rsa", "/w/id_ed25519.pub",
		"/w/.git/config", "/w/.git/hooks/pre-commit", "/w/.aws/credentials", "/w/.npmrc", "/w/.bashrc",
		"/w/.claude/settings.json", "/w/.claude/settings.local.json", "/w/deploy/prod-db.yaml",
		"/w/terraform.tfstate", "/w/.github/hooks/narrowd.json",
	} {
		if ps.SensitiveMatch(p) == "" {
			t.Errorf("%s should be sensitive", p)
		}
	}
	for _, p := range []string{"/w/main.go", "/w/README.md", "/w/src/tokenizer.go", "/w/.gitignore", "/w/environment.go", "/w/docs/env.md"} {
		if m := ps.SensitiveMatch(p); m != "" {
			t.Errorf("%s matched %s", p, m)
		}
	}
}

func TestEscape(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	out := filepath.Join(dir, "outside")
	for _, d := range []string{ws, out, filepath.Join(ws, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p string) {
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(out, "secret"))
	write(filepath.Join(ws, "plain"))
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink(filepath.Join(out, "secret"), filepath.Join(ws, "abs-link")))
	must(os.Symlink("../outside", filepath.Join(ws, "dir-link")))
	must(os.Symlink("plain", filepath.Join(ws, "inner-link")))
	must(os.Symlink("../plain", filepath.Join(ws, "sub", "up-link")))
	must(os.Link(filepath.Join(out, "secret"), filepath.Join(ws, "hard")))
	ps := NewPaths([]string{ws}, nil, OSDisk{})
	tests := []struct {
		name   string
		path   string
		escape bool
	}{
		{"plain-file", "plain", false},
		{"new-file", "does/not/exist", false},
		{"symlink-to-outside", "abs-link", true},
		{"through-dir-symlink", "dir-link/secret", true},
		{"new-file-under-dir-symlink", "dir-link/new", true},
		{"symlink-inside", "inner-link", false},
		{"relative-symlink-inside", "sub/up-link", false},
		{"hard-link", "hard", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := ps.Resolve(ws, tt.path)
			if !w.Inside {
				t.Fatalf("%s not lexically inside", tt.path)
			}
			if got := ps.Escape(w) != ""; got != tt.escape {
				t.Errorf("Escape(%s) = %v, want %v", tt.path, got, tt.escape)
			}
		})
	}
	if (Paths{Roots: []string{ws}}).Escape(ps.Resolve(ws, "abs-link")) != "" {
		t.Error("with no Disk, nothing is read from the file system")
	}
}

func TestLookalikes(t *testing.T) {
	t.Parallel()
	ps := NewPaths([]string{"/w"}, nil, nil)
	for _, p := range []string{
		".\u0435nv",            // Cyrillic е
		".e\u200bnv",           // zero-width space
		"src/\u202etxt.hsab",   // right-to-left override
		"..\u2215..\u2215etc",  // division slash
		"a\u2024\u2024/b",      // one dot leader
		"\u03bfpen\u03b1i.txt", // Greek omicron and alpha among Latin
	} {
		if w := ps.Resolve("/w", p); w.Inside {
			t.Errorf("%q counted as inside", p)
		}
	}
	for _, p := range []string{"docs/\u0440\u0443\u0441\u0441\u043a\u0438\u0439.md", "caf\u00e9/men\u00fc.txt", "\u6587\u6863.md"} {
		if w := ps.Resolve("/w", p); !w.Inside {
			t.Errorf("%q (one script per name) should be inside: %s", p, w.Why)
		}
	}
	if m := ps.SensitiveMatch("/w/.env.example"); m != "" {
		t.Errorf(".env.example matched %s", m)
	}
}

// TestGlobClimbs: only a segment that starts with '.' can match . or ..
// in bash (dotglob or not), so only such a segment may climb.
func TestGlobClimbs(t *testing.T) {
	for pattern, want := range map[string]bool{
		"*/": false, "src/**/*.ts": false, "*": false, "?": false, "[.]*": false, "src/?*/x": false,
		".*": true, ".?": true, "src/.*/x": true, ".[.]": true, "a/.*": true,
		".env": false, "..": false,
	} {
		if got := globClimbs(pattern); got != want {
			t.Errorf("globClimbs(%q) = %v, want %v", pattern, got, want)
		}
	}
}

func TestGlobMaySensitive(t *testing.T) {
	t.Parallel()
	ps := NewPaths([]string{"/w"}, nil, nil)
	tests := []struct {
		pattern string
		may     bool
	}{
		{".e?v", true},
		{".en[v]", true},
		{"src/*.pem", true},
		{"c*/id_*", true},
		{"*/.env", true},
		{".ss?/", true},
		{".aw?/credentials", true},
		{".g*/hooks/*", true},
		{"*", true}, // credentials, id_rsa…: a bare star can name a sensitive file
		{"*/", false},
		{"src/**/*.ts", false},
		{"*.go", false},
		{"dist/*.js", false},
		{"docs/*.md", false},
	}
	for _, tt := range tests {
		if got := ps.globMaySensitive(tt.pattern) != ""; got != tt.may {
			t.Errorf("globMaySensitive(%q) = %v, want %v", tt.pattern, got, tt.may)
		}
	}
}
