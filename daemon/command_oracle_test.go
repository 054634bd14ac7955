package daemon

import (
	"bytes"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/narrowd/narrowd/parse"
)

// TestSingleCommandOracle checks singleCommand against real bash on
// generated command texts. Every text it accepts is run by bash with a
// PATH holding only recorders named like the programs, in an empty
// directory: bash must run exactly one program, with exactly the words
// singleCommand claims, print nothing, create nothing and succeed. A text
// that runs anything else (another program, a builtin that prints, a
// redirect that creates a file) or passes other words fails the test.
func TestSingleCommandOracle(t *testing.T) {
	t.Parallel()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	k, err := parse.DefaultKnowledge()
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	// The recorder logs its name and words, and FOO when the text set
	// it (the generator's only assignment), so an assignment before the
	// command shows as an extra word.
	const recorder = "#!/bin/sh\n{ printf '%s' \"${0##*/}\"; for a in \"$@\"; do printf '\\037%s' \"$a\"; done; " +
		"if [ -n \"${FOO+set}\" ]; then printf '\\037FOO=%s' \"$FOO\"; fi; printf '\\036'; } >> \"$ORACLE_LOG\"\n"
	for _, name := range []string{"git", "ls", "cat", "wc", "grep", "head"} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(recorder), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	rng := rand.New(rand.NewPCG(6, 15))
	accepted, generated := 0, 0
	for range 4000 {
		src := generateCommand(rng)
		generated++
		cmd := singleCommand(src, parse.Analyze(src, k))
		if cmd == nil {
			continue
		}
		accepted++
		ws := t.TempDir()
		log := filepath.Join(t.TempDir(), "log")
		c := exec.Command(bash, "--norc", "--noprofile", "-c", src)
		c.Dir = ws
		c.Env = []string{"PATH=" + bin, "ORACLE_LOG=" + log, "HOME=" + ws, "LC_ALL=C"}
		var out bytes.Buffer
		c.Stdout, c.Stderr = &out, &out
		runErr := c.Run()
		raw, _ := os.ReadFile(log)
		var runs [][]string
		for rec := range strings.SplitSeq(strings.TrimSuffix(string(raw), "\x1e"), "\x1e") {
			if rec != "" {
				runs = append(runs, strings.Split(rec, "\x1f"))
			}
		}
		entries, _ := os.ReadDir(ws)
		if runErr != nil || out.Len() > 0 || len(entries) > 0 || len(runs) != 1 || !slices.Equal(runs[0], cmd.Argv) {
			t.Errorf("%q: singleCommand says %q, bash ran %q (error %v, output %q, %d files created)", src, cmd.Argv, runs, runErr, out.String(), len(entries))
		}
	}
	t.Logf("generated %d texts, singleCommand accepted %d, each confirmed by bash", generated, accepted)
	if accepted < 50 || accepted == generated {
		t.Fatalf("the generator is off: %d of %d accepted", accepted, generated)
	}
}

// generateCommand builds a shell text around a known program: quoting
// of each word, arguments plain and dynamic, and the constructs that make
// a text more than one program (prefixes, lists, pipes, redirects,
// groups).
func generateCommand(rng *rand.Rand) string {
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	quote := func(w string) string {
		switch rng.IntN(6) {
		case 0:
			return "'" + w + "'"
		case 1:
			return `"` + w + `"`
		case 2:
			return `\` + w
		case 3:
			if len(w) > 1 {
				return w[:1] + `"` + w[1:] + `"`
			}
		}
		return w
	}
	words := []string{}
	switch prog := pick("git", "git", "ls", "cat", "wc", "grep", "head"); prog {
	case "git":
		words = append(words, prog, pick("status", "log", "diff", "status", "-c", "--no-pager"))
	default:
		words = append(words, prog)
	}
	for range rng.IntN(4) {
		words = append(words, pick("--short", "-s", "-l", "-n", "--", "a.txt", "src/x.go", "x y", "$HOME", "*.go", "~",
			"{a,b}", "a\\ b", "-", "--color=never", "$(x)", "`x`", "${x:-y}", "-1", "--oneline", "README", ".", "'q'"))
	}
	var b strings.Builder
	prefix, closer := pick("", "", "", "", "FOO=1 ", "sudo ", "env ", "command ", "time ", "! ", "( ", "{ ", "exec ", "nice "), ""
	switch prefix {
	case "( ":
		closer = " )"
	case "{ ":
		closer = "; }"
	}
	b.WriteString(pick("", "", "", " ", "\t"))
	b.WriteString(prefix)
	for i, w := range words {
		if i > 0 {
			b.WriteString(pick(" ", " ", "  ", "\t", " \\\n"))
		}
		b.WriteString(quote(w))
	}
	b.WriteString(closer)
	b.WriteString(pick("", "", "", "", " ;", "; ls", " && ls", " || ls", " | cat", " &", " 2>/dev/null", " >/dev/null",
		" 2>&1", " > out", " >> out", " < /dev/null", " # c", "\n", "\nls", " <<< x", " 2>err", " &>/dev/null", " >&2", " 3>/dev/null", " >|/dev/null"))
	return b.String()
}
