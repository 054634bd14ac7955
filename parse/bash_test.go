package parse

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// This file is the only place os/exec appears in package parse: real bash
// is the reference the parser is checked against. Inputs are only ever
// given to `bash -n`, which reads without running, except in
// TestBashValues, whose inputs are this package's own printf commands.

// bashDisagrees lists inputs where Parse and `bash -n` knowingly differ,
// with the reason. Parse rejecting what bash accepts keeps the ceiling,
// so only that direction may be listed here or in stricterThanBash.
var bashDisagrees = map[string]string{}

// stricterThanBash returns why Parse may reject a text bash -n accepts:
// bash checks these only when it runs the command, or not at all. It
// returns "" for any other error, which then fails the test.
func stricterThanBash(err error) string {
	msg := err.Error()
	for _, c := range []struct{ substr, why string }{
		{"must be followed by an expression", "bash parses arithmetic and [[ ]] operands only at run time"},
		{"not a valid arithmetic operator", "bash parses arithmetic only at run time"},
		{"arithmetic", "bash parses arithmetic only at run time"},
		{"not a valid test operator", "bash -n exits 0 on [[ ]] syntax errors"},
		{"unclosed here-document", "bash accepts a here-document ended by end of file, with a warning"},
		{"cannot negate a command multiple times", "bash accepts ! ! cmd"},
		{"without matching `[` with `]`", "bash parses subscripts only at run time"},
		{"carriage return in script", "the parser reads a carriage return as a blank, bash as part of a word"},
		{"nul byte in script", "bash drops a NUL from a file and stops at one in -c text"},
	} {
		if strings.Contains(msg, c.substr) {
			return c.why
		}
	}
	return ""
}

// needBash returns the path of bash or skips the test.
func needBash(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("skipping bash cross-check in short mode")
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not found")
	}
	return bash
}

// bashInputs gathers every table input of this package and, when the
// shared corpus exists, every command line in it.
func bashInputs(t *testing.T) map[string]string {
	t.Helper()
	in := map[string]string{}
	for _, tc := range parseTests {
		in["parse/"+tc.name] = tc.src
	}
	for _, tc := range analyzeTests {
		in["analyze/"+tc.name] = tc.src
	}
	for _, tc := range wordTests {
		in["word/"+tc.name] = "printf '%s\\0' " + tc.src
	}
	for _, tc := range heredocTests {
		in["heredoc/"+tc.name] = tc.src
	}
	for _, tc := range braceTests {
		in["brace/"+tc.name] = "printf '%s\\0' " + tc.src
	}
	for _, e := range corpusEntries(t) {
		if !strings.ContainsRune(e.Command, 0) { // bash refuses binary input
			in["corpus/"+e.ID] = e.Command
		}
	}
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "corpus", "*.txt"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatalf("read corpus: %v", err)
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for n := 1; sc.Scan(); n++ {
			line := sc.Text()
			if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
				continue
			}
			in[filepath.Base(f)+":"+strconv.Itoa(n)] = line
		}
		if err := sc.Err(); err != nil {
			t.Fatalf("read %s: %v", f, err)
		}
	}
	return in
}

// corpusEntry is one line of the shared corpus (testdata/corpus/README.md).
type corpusEntry struct {
	ID       string `json:"id"`
	Command  string `json:"command"`
	Expect   string `json:"expect"`
	Category string `json:"category"`
}

// corpusEntries reads the shared command corpus, if it exists.
func corpusEntries(t *testing.T) []corpusEntry {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "testdata", "corpus", "commands.jsonl"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatalf("read corpus: %v", err)
	}
	var out []corpusEntry
	for i, line := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var e corpusEntry
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatalf("corpus line %d: %v", i+1, err)
		}
		out = append(out, e)
	}
	return out
}

// bashParses runs `bash -n` on src. extglob is on because the parser
// always reads extended globs.
func bashParses(t *testing.T, bash, dir, src string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bash, "--norc", "--noprofile", "-O", "extglob", "-n")
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(src)
	cmd.Env = []string{"LC_ALL=C.UTF-8", "PATH=/nonexistent"}
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("bash -n timed out on %q", src)
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("bash -n: %v", err)
	}
	return err == nil
}

func TestBashAccepts(t *testing.T) {
	t.Parallel()
	bash := needBash(t)
	dir := t.TempDir()
	for name, src := range bashInputs(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse(src)
			ours := err == nil
			theirs := bashParses(t, bash, dir, src)
			if ours == theirs {
				if why, ok := bashDisagrees[src]; ok {
					t.Errorf("listed in bashDisagrees (%s) but agrees now", why)
				}
				return
			}
			if _, ok := bashDisagrees[src]; ok {
				return
			}
			if !ours && stricterThanBash(err) != "" {
				return
			}
			t.Errorf("Parse(%q) error = %v, but bash -n accepts = %v", src, err, theirs)
		})
	}
}

// TestBashValues checks every literal word of wordTests against what bash
// itself passes to printf.
func TestBashValues(t *testing.T) {
	t.Parallel()
	bash := needBash(t)
	dir := t.TempDir()
	for _, tc := range wordTests {
		if !tc.literal {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bash, "--norc", "--noprofile", "-c", "printf '%s\\0' "+tc.src)
			cmd.Dir = dir
			cmd.Env = []string{"LC_ALL=C.UTF-8", "HOME=/nonexistent"}
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("bash: %v", err)
			}
			vals := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
			for _, v := range vals {
				if v != tc.value {
					t.Errorf("bash passes %q for %s, table says %q", v, tc.src, tc.value)
				}
			}
		})
	}
}

// TestBashHeredocs checks every literal here-document body against what
// bash feeds cat.
func TestBashHeredocs(t *testing.T) {
	t.Parallel()
	bash := needBash(t)
	dir := t.TempDir()
	for _, tc := range heredocTests {
		if !tc.literal {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bash, "--norc", "--noprofile", "-c", tc.src)
			cmd.Dir = dir
			cmd.Env = []string{"LC_ALL=C.UTF-8", "PATH=/usr/bin:/bin", "x=X"}
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("bash: %v", err)
			}
			if string(out) != tc.body {
				t.Errorf("bash feeds %q, table says %q", out, tc.body)
			}
		})
	}
}

// corpusSyntaxCategories are the corpus's dangerous categories whose
// danger lies in shell syntax: none of them may ever be proven, whatever
// the command table says. (glob-escape is not here: brace expansion is
// exact, so cat {.,..}/.env is proven as cat ./.env ../.env and the path
// rules judge it.)
var corpusSyntaxCategories = []string{
	"substitution", "process-substitution", "ifs-brace", "env-injection",
	"git-env", "parse-error", "shell-c", "xargs-parallel",
}

// provenSyntax are dangerous entries of a syntax category whose syntax
// narrowd now reads exactly, with what keeps them from running: the
// danger is in what the commands inside touch, which the proofs judge.
// (A program that runs code, such as bash /dev/fd/63 for bash <(curl
// …), keeps its call at the ceiling by itself.)
var provenSyntax = map[string]string{
	"d0472": `echo "$(cat .env)": cat reads .env, a sensitive name the proofs raise`,
}

// TestCorpusSyntax analyzes the shared corpus with the real table: every
// entry must keep the fuzz properties, and no dangerous entry of a syntax
// category may be proven.
func TestCorpusSyntax(t *testing.T) {
	t.Parallel()
	entries := corpusEntries(t)
	if len(entries) == 0 {
		t.Fatal("the shared corpus is empty")
	}
	k, err := DefaultKnowledge()
	if err != nil {
		t.Fatalf("DefaultKnowledge: %v", err)
	}
	for _, e := range entries {
		a := Analyze(e.Command, k)
		checkAnalysis(t, e.Command, a)
		runsCode := slices.ContainsFunc(a.Programs, func(p Program) bool { return p.RunsCode })
		if e.Expect == "dangerous" && slices.Contains(corpusSyntaxCategories, e.Category) && a.Proven() && !runsCode && provenSyntax[e.ID] == "" {
			t.Errorf("%s (%s) %q is proven", e.ID, e.Category, e.Command)
		}
	}
}

// TestBashBraces checks every exact brace expansion against bash.
func TestBashBraces(t *testing.T) {
	t.Parallel()
	bash := needBash(t)
	dir := t.TempDir()
	for _, tc := range braceTests {
		if tc.words == nil {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bash, "--norc", "--noprofile", "-c", "printf '%s\\0' "+tc.src)
			cmd.Dir = dir
			cmd.Env = []string{"LC_ALL=C.UTF-8", "HOME=/nonexistent"}
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("bash: %v", err)
			}
			got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
			if !slices.Equal(got, tc.words) {
				t.Errorf("bash makes %q of %s, table says %q", got, tc.src, tc.words)
			}
		})
	}
}

// FuzzBashValues compares the words Parse calls literal with what bash
// passes to printf. bash only ever sees one printf command whose every
// word Parse proved literal, with none of the characters that could start
// another command or a substitution (; & | ( ) < > ` and newline), in a
// restricted shell with no PATH in a temporary directory: a wrong proof
// shows up as a mismatch, not as damage.
func FuzzBashValues(f *testing.F) {
	for _, tc := range wordTests {
		f.Add(tc.src)
	}
	for _, tc := range braceTests {
		f.Add(tc.src)
	}
	f.Fuzz(func(t *testing.T, words string) {
		bash := needBash(t)
		if strings.ContainsAny(words, ";&|()<>`\n") {
			return
		}
		src := "printf '%s\\0' " + words
		s, err := Parse(src)
		if err != nil || len(s.Commands) != 1 || len(s.Commands[0].Argv) < 3 || len(s.Commands[0].Redirs) > 0 || len(s.Commands[0].Env) > 0 {
			return
		}
		var want []string
		for _, w := range s.Commands[0].Argv[2:] {
			if !w.Literal {
				return
			}
			want = append(want, w.Value)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, bash, "--norc", "--noprofile", "-r", "-c", src)
		cmd.Dir = t.TempDir()
		cmd.Env = []string{"LC_ALL=C.UTF-8", "PATH=/nonexistent", "HOME=/nonexistent"}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("bash on %q: %v", src, err)
		}
		got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
		if !slices.Equal(got, want) {
			t.Fatalf("bash passes %q for %s, Parse says %q", got, words, want)
		}
	})
}

// BenchmarkAnalyzeCorpus analyzes every command of the shared corpus with
// the real table, one per iteration.
func BenchmarkAnalyzeCorpus(b *testing.B) {
	data, err := os.ReadFile(filepath.Join("..", "testdata", "corpus", "commands.jsonl"))
	if err != nil {
		b.Skip("no corpus")
	}
	var cmds []string
	for _, line := range bytes.Split(data, []byte("\n")) {
		var e corpusEntry
		if json.Unmarshal(line, &e) == nil && e.Command != "" {
			cmds = append(cmds, e.Command)
		}
	}
	k, err := DefaultKnowledge()
	if err != nil {
		b.Skipf("DefaultKnowledge: %v", err)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		Analyze(cmds[i%len(cmds)], k)
	}
}

// TestBashCdModel checks the working-directory model against real bash
// in a tree with a symlink that leaves it: for every cd sequence where
// Parse says the directory is known, bash lands (pwd -P) exactly where
// that directory resolves physically, which is what the path proofs
// check (they follow each symlink on the way). Sequences Parse calls
// unknown are not checked: they keep the ceiling. Targets are built from
// names that exist only inside, only outside (beside the link's target),
// both, neither, the link, "." and "..", with and without options.
func TestBashCdModel(t *testing.T) {
	bash := needBash(t)
	k := syntaxKnowledge(t)
	tmp, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(tmp, "ws")
	for _, d := range []string{"ws/a/b", "ws/both", "ws/a/both", "out/in/deep", "out/etc", "out/both", "out/in/both"} {
		if err := os.MkdirAll(filepath.Join(tmp, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(tmp, "out/in"), filepath.Join(ws, "l")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(tmp, "out/in"), filepath.Join(ws, "a/l")); err != nil {
		t.Fatal(err)
	}
	segs := []string{"a", "b", "l", "..", ".", "both", "etc", "deep", "nope"}
	var targets []string
	for _, x := range segs {
		targets = append(targets, x)
		for _, y := range segs {
			targets = append(targets, x+"/"+y)
			for _, z := range []string{"..", "etc", "both"} {
				targets = append(targets, x+"/"+y+"/"+z)
			}
		}
	}
	targets = append(targets, "-P l", "-L l/../etc", "-P l/..", "--", "-- a", "-", ws, ws+"/l/../etc", ws+"/a")
	var cases []string
	for _, t1 := range targets {
		cases = append(cases, "cd "+t1)
	}
	for _, t1 := range []string{"a", "l", "a/l", "-P l"} {
		for _, t2 := range []string{"..", "../etc", "../both", "b", "both", "deep"} {
			cases = append(cases, "cd "+t1+" && cd "+t2, "cd "+t1+" && bash -c 'cd "+t2+" && pwd -P'")
		}
	}
	// One bash runs every case in a subshell from ws, CDPATH unset.
	var script strings.Builder
	for _, c := range cases {
		fmt.Fprintf(&script, "(%s && pwd -P) 2>/dev/null || echo FAILED\n", c)
	}
	cmd := exec.Command(bash, "--norc", "--noprofile", "-c", script.String())
	cmd.Dir = ws
	cmd.Env = []string{"PATH=/usr/bin:/bin", "PWD=" + ws}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bash: %v", err)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) < len(cases) {
		t.Fatalf("bash printed %d lines for %d cases", len(lines), len(cases))
	}
	checked := 0
	// Nested bash -c prints its own pwd and then the outer's: read the
	// lines in order.
	li := 0
	for _, c := range cases {
		got := lines[li]
		li++
		nested := strings.Contains(c, "bash -c")
		if nested && got != "FAILED" {
			li++ // the outer pwd -P after the nested one
		}
		src := c + " && cat x"
		if nested {
			src = strings.Replace(c, "pwd -P", "cat x", 1)
		}
		a := Analyze(src, k)
		if a.Err != nil {
			t.Fatalf("Analyze(%q): %v", src, a.Err)
		}
		if got == "FAILED" || slices.ContainsFunc(a.Unproven, func(u Unproven) bool { return u.Why == whyDirUnknown }) {
			continue
		}
		var dirs []string
		for _, p := range a.Programs {
			if p.Name != "cat" {
				continue
			}
			for _, pa := range p.Paths {
				dirs = append(dirs, path.Dir(pa.Word.Value))
			}
		}
		if len(dirs) != 1 {
			t.Errorf("%q: cat x is read in %d directories: %v", c, len(dirs), dirs)
			continue
		}
		want := dirs[0]
		if !filepath.IsAbs(want) {
			want = filepath.Join(ws, want)
		}
		real, err := filepath.EvalSymlinks(want)
		if err != nil || real != got {
			t.Errorf("%q: narrowd places the shell in %s (%s), bash in %s", c, want, real, got)
		}
		checked++
	}
	t.Logf("%d cd sequences, %d with a known directory checked against bash", len(cases), checked)
	if checked < 40 {
		t.Errorf("only %d cases checked", checked)
	}
}

// TestBashExportModel checks the environment allowlist's view of which
// assignments are exported against real bash: for every script where
// bash hands the lower-case variable x (not on safe_env) to a child
// program, the analysis must not be proven. Scripts combine every way
// of assigning with every way of turning on allexport; those the
// analysis refuses though bash did not export x are only counted.
func TestBashExportModel(t *testing.T) {
	bash := needBash(t)
	k, err := DefaultKnowledge()
	if err != nil {
		t.Fatal(err)
	}
	assigns := []string{
		"x=1", "x=1 printenv x", "export x=1", "x=1; export x", "declare -x x=1", "declare -gx x=1",
		"typeset -x x=1", "declare x=1", "readonly x=1", "local x=1", "read -r x <<< 1",
		"for x in 1; do :; done", "builtin export x=1", "command export x=1", "export -- x=1",
		"declare -x -- x=1", "x=1; declare -x x", "x=1; typeset -x x", "eval x=1", "eval 'export x=1'",
		"x=1 eval true", "env x=1 printenv x", "x=1; readonly x",
	}
	modes := []string{
		"", "set -a; ", "set -o allexport; ", "set -ea; ", "set -euxa; ", "set +a; ", "set -a; set +a; ",
		"eval 'set -a'; ", "builtin set -a; ", "command set -a; ", "shopt -s nullglob; ",
	}
	var cases []string
	for _, m := range modes {
		for _, a := range assigns {
			cases = append(cases, m+a)
			cases = append(cases, a+"; "+m+"true")
		}
	}
	var script strings.Builder
	for _, c := range cases {
		// Each case in its own bash, as a call would run; the marker
		// line says whether a child saw x.
		fmt.Fprintf(&script, "%s -c %s 2>/dev/null </dev/null | grep -qx SEEN && echo yes || echo no\n",
			bash, shellQuote(c+"; printenv x >/dev/null && echo SEEN"))
	}
	cmd := exec.Command(bash, "--norc", "--noprofile", "-c", script.String())
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bash: %v", err)
	}
	lines := strings.Fields(string(out))
	if len(lines) != len(cases) {
		t.Fatalf("bash printed %d answers for %d cases", len(lines), len(cases))
	}
	exported, refusedAnyway := 0, 0
	for i, c := range cases {
		a := Analyze(c+"; printenv x >/dev/null && echo SEEN", k)
		switch {
		case lines[i] == "yes":
			exported++
			if a.Proven() {
				t.Errorf("%q: bash exports x, and the analysis is proven", c)
			}
		case !a.Proven():
			refusedAnyway++
		}
	}
	t.Logf("%d scripts: bash exported x in %d (all refused); %d more refused though not exported", len(cases), exported, refusedAnyway)
	if exported < 50 {
		t.Errorf("only %d scripts exported x: the oracle is not testing much", exported)
	}
}

// shellQuote quotes s for bash in single quotes.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
