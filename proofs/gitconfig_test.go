package proofs

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/narrowd/narrowd/parse"
)

// TestParseGitConfig pins the reader on the forms that hide a key from a
// line-by-line scan.
func TestParseGitConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want []string // key=value, or key alone for a boolean
		bad  bool
	}{
		{"plain", "[core]\n\tbare = false\n", []string{"core.bare=false"}, false},
		{"old-style-upper", "[Core]\nfsmonitor = x\n", []string{"core.fsmonitor=x"}, false},
		{"old-style-sub-lowered", "[Remote.Origin]\nURL = u\n", []string{"remote.origin.url=u"}, false},
		{"sub-case-kept", "[remote \"Origin\"]\nurl = u\n", []string{"remote.Origin.url=u"}, false},
		{"sub-escape", "[a \"x\\\"y\\\\z\\q\"]\nk=v\n", []string{`a.x"y\zq.k=v`}, false},
		{"bom", "\xef\xbb\xbf[core]\nfsmonitor=x\n", []string{"core.fsmonitor=x"}, false},
		{"partial-bom", "\xef\xbb[core]\n", nil, true},
		{"boolean", "[core]\nfsmonitor\n", []string{"core.fsmonitor"}, false},
		{"boolean-eof", "[core]\nfsmonitor", []string{"core.fsmonitor"}, false},
		{"same-line", "[core] fsmonitor = x", []string{"core.fsmonitor=x"}, false},
		{"continuation", "[core]\nbare = false \\\nfsmonitor = x\n", []string{"core.bare=false fsmonitor = x"}, false},
		{"continuation-key", "[core]\nfsmon\\\nitor = x\n", nil, true},
		{"comment-in-quotes", "[core]\npager = \"a # b\" ; c\n", []string{"core.pager=a # b"}, false},
		{"trim", "[a]\nk =   x  y   \n", []string{"a.k=x  y"}, false},
		{"quoted-space", "[a]\nk = \"  x \" \n", []string{"a.k=  x "}, false},
		{"escapes", "[a]\nk = \\t\\n\\b\\\\\\\"\n", []string{"a.k=\t\n\b\\\""}, false},
		{"bad-escape", "[a]\nk = \\x\n", nil, true},
		{"open-quote", "[a]\nk = \"x\n", nil, true},
		{"crlf", "[a]\r\nk = v\r\n", []string{"a.k=v"}, false},
		{"lone-cr", "[a]\nk\r= v\n", nil, true},
		{"key-digit-start", "[a]\n1k = v\n", nil, true},
		{"no-section", "k = v\n", []string{"k=v"}, false},
		{"empty-section", "[]\nk = v\n", nil, true},
		{"empty-value", "[a]\nk =\n", []string{"a.k="}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := parseGitConfig([]byte(tc.in))
			if tc.bad {
				if err == nil {
					t.Fatalf("parsed %q as %v, git refuses it", tc.in, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if g := entryStrings(got); strings.Join(g, "|") != strings.Join(tc.want, "|") {
				t.Errorf("got %q, want %q", g, tc.want)
			}
		})
	}
}

func entryStrings(es []gitConfigEntry) []string {
	var out []string
	for _, e := range es {
		if e.HasValue {
			out = append(out, e.Key+"="+e.Value)
		} else {
			out = append(out, e.Key)
		}
	}
	return out
}

// genGitConfig builds a random config file from the pieces that differ
// between a naive scan and git's reader.
func genGitConfig(r *rand.Rand) string {
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	sections := []string{"core", "Core", "CORE", "remote", "branch", "alias", "include", "a-b", "x1"}
	subs := []string{"origin", "Origin", "a b", `q"x`, `b\s`, "", "main.x", "é"}
	keys := []string{"fsmonitor", "FsMonitor", "url", "pager", "k", "k-1", "bare", "path"}
	vals := []string{"x", "", " x ", "\"a # b\"", "a ; b", "a\\\nb", "\\t", "\\n", "\\\\", "\\\"", "\"\"", "\"open", "\\q", "t\tab", "v\r", "é", "a\\", "\"x\" y \"z\""}
	space := func() string { return pick("", " ", "\t", "  ", " \t") }
	var b strings.Builder
	if r.IntN(10) == 0 {
		b.WriteString(pick("\xef\xbb\xbf", "\xef\xbb", "\xef"))
	}
	n := 1 + r.IntN(8)
	for range n {
		switch r.IntN(10) {
		case 0, 1, 2:
			sec := pick(sections...)
			switch r.IntN(3) {
			case 0:
				fmt.Fprintf(&b, "%s[%s]", space(), sec)
			case 1:
				sub := strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(pick(subs...))
				if r.IntN(8) == 0 {
					sub = pick(subs...) // unescaped: may be refused
				}
				fmt.Fprintf(&b, "%s[%s%s\"%s\"]", space(), sec, pick(" ", "  ", "\t"), sub)
			default:
				fmt.Fprintf(&b, "[%s.%s]", sec, pick("Sub", "sub", "a.B", "x-y"))
			}
			if r.IntN(4) == 0 {
				// A variable on the header's line.
				fmt.Fprintf(&b, " %s = %s", pick(keys...), pick(vals...))
			}
		case 3:
			b.WriteString(pick("# c", "; c", "  # [core] fsmonitor = x", "#\\"))
		case 4:
			fmt.Fprintf(&b, "%s%s%s", space(), pick(keys...), space())
		default:
			fmt.Fprintf(&b, "%s%s%s=%s%s%s", space(), pick(keys...), space(), space(), pick(vals...), space())
			if r.IntN(5) == 0 {
				b.WriteString(pick(" # c", " ;c", "\\"))
			}
		}
		b.WriteString(pick("\n", "\n", "\n", "\r\n", "\n\n"))
	}
	if r.IntN(5) == 0 {
		s := b.String()
		return s[:len(s)-1] // no final newline
	}
	return b.String()
}

// gitListConfig is what the real git reads from file: key\nvalue\0 per
// variable, key\0 for a boolean; ok false when git refuses the file.
func gitListConfig(t *testing.T, git, file string) ([]string, bool) {
	t.Helper()
	cmd := exec.Command(git, "config", "--no-includes", "-z", "-f", file, "--list")
	cmd.Env = []string{"HOME=/nonexistent", "GIT_CONFIG_NOSYSTEM=1", "LC_ALL=C"}
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatal(err)
		}
		if !strings.Contains(stderr.String(), "bad config") {
			t.Fatalf("git config failed oddly: %v: %s", err, stderr.String())
		}
		return nil, false
	}
	var got []string
	for _, rec := range strings.Split(out.String(), "\x00") {
		if rec == "" {
			continue
		}
		k, v, has := strings.Cut(rec, "\n")
		if has {
			got = append(got, k+"="+v)
		} else {
			got = append(got, k)
		}
	}
	return got, true
}

// TestParseGitConfigAgainstGit compares the reader with the real git on
// generated files. NARROWD_GIT_CASES sets how many (300 by default).
func TestParseGitConfigAgainstGit(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed")
	}
	cases := 300
	if n, err := strconv.Atoi(os.Getenv("NARROWD_GIT_CASES")); err == nil && n > 0 {
		cases = n
	}
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(15, 2))
	refused := 0
	for i := range cases {
		src := genGitConfig(r)
		file := filepath.Join(dir, "config")
		if err := os.WriteFile(file, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		want, gitOK := gitListConfig(t, git, file)
		got, err := parseGitConfig([]byte(src))
		switch {
		case !gitOK && err == nil:
			t.Errorf("case %d: git refuses %q, narrowd read %q", i, src, entryStrings(got))
		case gitOK && err != nil:
			t.Errorf("case %d: git reads %q as %q, narrowd refused: %v", i, src, want, err)
		case gitOK && strings.Join(entryStrings(got), "\x00") != strings.Join(want, "\x00"):
			t.Errorf("case %d: %q:\n git     %q\n narrowd %q", i, src, want, entryStrings(got))
		}
		if !gitOK {
			refused++
		}
	}
	t.Logf("%d generated configs, %d refused by git", cases, refused)
}

// TestGitValueOK pins the value kinds: only plain values pass.
func TestGitValueOK(t *testing.T) {
	t.Parallel()
	tests := []struct {
		kind string
		v    string
		ok   bool
	}{
		{"url", "https://github.com/x/y.git", true},
		{"url", "git@github.com:x/y.git", true},
		{"url", "ssh://git@example.com:22/x", true},
		{"url", "../other", true},
		{"url", "https://user:pass@github.com/x", false},
		{"url", "https://ghp_token@github.com/x", false},
		{"url", "ext::sh -c id", false},
		{"url", "fd::3", false},
		{"url", "-oProxyCommand=id", false},
		{"url", "-oProxy:x", false},
		{"url", "git@host:-x", false},
		{"url", "ssh://-oProxyCommand=id/x", false},
		{"url", "https://github.com/x y", false},
		{"refspec", "+refs/heads/*:refs/remotes/origin/*", true},
		{"refspec", "refs/heads/main", true},
		{"refspec", "+refs/heads/*:refs/remotes/origin/*;x", false},
		{"ref", "refs/heads/main", true},
		{"ref", "-x", false},
		{"int", "0", true},
		{"int", "12k", true},
		{"int", "0x", false},
		{"bool", "true", true},
		{"bool", "maybe", false},
	}
	for _, tc := range tests {
		e := gitConfigEntry{Key: "k.k", Value: tc.v, HasValue: true}
		if got := gitValueOK(parse.GitValue(tc.kind), e); got != tc.ok {
			t.Errorf("%s %q: %v, want %v", tc.kind, tc.v, got, tc.ok)
		}
	}
}

// fakeGlobalDisk is the real disk with the person's config files named.
type fakeGlobalDisk struct {
	OSDisk
	files []string
	home  string
}

func (d fakeGlobalDisk) GitGlobalConfigFiles() ([]string, string) { return d.files, d.home }

// TestGitGlobalIncludesAgainstGit: every file the real git reads through
// the includes of a global config (git config --global --list
// --show-origin --includes) is one narrowd reads too, on generated
// include trees: relative, absolute and ~/ paths, includeIf conditions
// that hold or not, missing files and nesting.
func TestGitGlobalIncludesAgainstGit(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed")
	}
	cases := 60
	if n, err := strconv.Atoi(os.Getenv("NARROWD_GIT_CASES")); err == nil && n > 0 {
		cases = n / 5
	}
	r := rand.New(rand.NewPCG(15, 3))
	compared, origins := 0, 0
	for i := range cases {
		home := t.TempDir()
		names := []string{".gitconfig", "a.inc", "sub/b.inc", "c.inc", "sub/deeper/d.inc"}
		for _, n := range names {
			var b strings.Builder
			fmt.Fprintf(&b, "[user]\n\tname = %s\n", n)
			for range r.IntN(3) {
				target := names[1+r.IntN(len(names)-1)]
				var ref string
				switch r.IntN(4) {
				case 0:
					ref = filepath.Join(home, target)
				case 1:
					ref = "~/" + target
				case 2:
					rel, _ := filepath.Rel(filepath.Dir(filepath.Join(home, n)), filepath.Join(home, target))
					ref = rel
				default:
					ref = "missing-" + target
				}
				switch r.IntN(3) {
				case 0:
					fmt.Fprintf(&b, "[include]\n\tpath = %s\n", ref)
				case 1:
					fmt.Fprintf(&b, "[includeIf \"gitdir:%s/\"]\n\tpath = %s\n", home, ref)
				default:
					fmt.Fprintf(&b, "[includeIf \"onbranch:main\"]\n\tpath = %s\n", ref)
				}
			}
			full := filepath.Join(home, n)
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(full, []byte(b.String()), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		// A repository at home on main, so gitdir: and onbranch:
		// conditions hold.
		initCmd := exec.Command(git, "init", "-q", "-b", "main", home)
		initCmd.Env = []string{"HOME=" + t.TempDir(), "GIT_CONFIG_NOSYSTEM=1"}
		if out, err := initCmd.CombinedOutput(); err != nil {
			t.Fatalf("git init: %v: %s", err, out)
		}
		cmd := exec.Command(git, "config", "--global", "--list", "--show-origin", "--includes", "-z")
		cmd.Dir = home
		cmd.Env = []string{"HOME=" + home, "GIT_CONFIG_NOSYSTEM=1", "XDG_CONFIG_HOME=" + filepath.Join(home, "xdg")}
		out, err := cmd.Output()
		if err != nil {
			// An include cycle: git refuses the file, narrowd must too.
			st := readGitGlobal(fakeGlobalDisk{files: []string{filepath.Join(home, ".gitconfig")}, home: home}, OSDisk{}, Paths{})
			if st.why == "" {
				t.Errorf("case %d: git refuses the include tree (%v), narrowd read it", i, err)
			}
			continue
		}
		st := readGitGlobal(fakeGlobalDisk{files: []string{filepath.Join(home, ".gitconfig")}, home: home}, OSDisk{}, Paths{})
		if st.why != "" {
			// Deeper than git's limit with conditions git skips, or a
			// cycle through one: narrowd keeps the ceiling.
			continue
		}
		compared++
		for _, rec := range strings.Split(string(out), "\x00") {
			origin, ok := strings.CutPrefix(rec, "file:")
			if !ok {
				continue
			}
			if !filepath.IsAbs(origin) {
				origin = filepath.Join(home, origin)
			}
			origin = filepath.Clean(origin)
			origins++
			if !slices.Contains(st.read, origin) {
				t.Errorf("case %d: git reads %s, narrowd read only %v", i, origin, st.read)
			}
		}
	}
	t.Logf("%d include trees, %d compared (the others nest past git's limit), %d variables' origins checked", cases, compared, origins)
	if compared == 0 {
		t.Fatal("no include tree was compared")
	}
}
