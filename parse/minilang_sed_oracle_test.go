package parse

import (
	"context"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestSedProgramOracle checks sedProgram against GNU sed itself on
// generated programs that mix bracket expressions, custom delimiters,
// flags, labels, comments, text commands and file commands. GNU sed
// opens every w file while it compiles, so the files that appear in an
// empty working directory are exactly the writes; sed --debug prints the
// canonical program, from which the r/R files and e commands are read.
// Whenever narrowd calls a program provable, sed must write no file,
// read no file and run no command that narrowd did not report. The run
// is bounded (300 programs); NARROWD_SED_ORACLE=N runs N.
func TestSedProgramOracle(t *testing.T) {
	out, err := exec.Command("sed", "--version").Output()
	if err != nil || !strings.Contains(string(out), "GNU sed") {
		t.Skip("GNU sed is not installed")
	}
	n := 300
	if v := os.Getenv("NARROWD_SED_ORACLE"); v != "" {
		if n, err = strconv.Atoi(v); err != nil {
			t.Fatalf("NARROWD_SED_ORACLE=%q: %v", v, err)
		}
	}
	rng := rand.New(rand.NewPCG(15, 5))
	provable, sedAccepts, precisionLoss := 0, 0, 0
	for i := range n {
		prog := genSedProgram(rng)
		reads, writes, why := sedProgram(prog)
		res := runSedOracle(t, prog)
		if res.ok {
			sedAccepts++
		}
		if why != "" {
			if res.ok && !res.exec && len(res.created) == 0 && len(res.reads) == 0 {
				precisionLoss++
			}
			continue
		}
		provable++
		bad := ""
		switch {
		case res.exec:
			bad = "sed runs a command"
		case !subset(res.created, writes):
			bad = "sed writes " + strings.Join(res.created, ",")
		case !subset(res.reads, reads):
			bad = "sed reads " + strings.Join(res.reads, ",")
		}
		if bad == "" && len(reads) == 0 && len(writes) == 0 && sandboxRefuses(t, prog) {
			// sed --sandbox refuses every e, r and w it compiles.
			bad = "sed --sandbox finds an e, r or w command"
		}
		if bad != "" {
			t.Errorf("program %d %q: narrowd reads %q writes %q, but %s\nsed --debug:\n%s", i, prog, reads, writes, bad, res.debug)
		}
	}
	t.Logf("sed oracle: %d programs, sed accepts %d, narrowd proves %d, asks about %d harmless ones sed accepts", n, sedAccepts, provable, precisionLoss)
}

// sandboxRefuses reports whether GNU sed --sandbox (given before the
// program, so it applies) refuses prog for an e, r or w command.
func sandboxRefuses(t *testing.T, prog string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sed", "--sandbox", "-n", "-e", prog, "/dev/null")
	cmd.Dir = t.TempDir()
	cmd.Env = []string{"LC_ALL=C", "PATH=/usr/bin:/bin"}
	out, _ := cmd.CombinedOutput()
	return strings.Contains(string(out), "disabled in sandbox mode")
}

func subset(a, b []string) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

type sedOracleResult struct {
	ok      bool
	exec    bool
	created []string
	reads   []string
	debug   string
}

// runSedOracle compiles prog with GNU sed on empty input in an empty
// directory: nothing runs (no input line), but w files are created.
func runSedOracle(t *testing.T, prog string) sedOracleResult {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sed", "--debug", "-n", "-e", prog, "/dev/null")
	cmd.Dir = dir
	cmd.Env = []string{"LC_ALL=C", "PATH=/usr/bin:/bin"}
	out, err := cmd.Output()
	res := sedOracleResult{ok: err == nil, debug: string(out)}
	entries, rerr := os.ReadDir(dir)
	if rerr != nil {
		t.Fatal(rerr)
	}
	for _, e := range entries {
		res.created = append(res.created, e.Name())
	}
	if res.ok {
		res.exec, res.reads = sedDebugScan(res.debug)
	}
	return res
}

// sedDebugScan reports an e command or an s///e flag, and the r and R
// files, in sed --debug's canonical program: one command a line,
// addresses first, regexes with / escaped (replacements are printed as
// they are), the text of a, i and c after a backslash and followed by an
// empty line.
func sedDebugScan(debug string) (runs bool, reads []string) {
	lines := strings.Split(debug, "\n")
	for i := 0; i < len(lines); i++ {
		s := strings.TrimLeft(lines[i], " ")
		if s == "SED PROGRAM:" || s == "" {
			continue
		}
		// Addresses.
		for {
			switch {
			case strings.HasPrefix(s, "/"):
				j := skipEscaped(s, 1)
				s = strings.TrimLeft(s[j:], "IM")
			case s != "" && strings.ContainsRune("0123456789$~+", rune(s[0])):
				s = strings.TrimLeft(s, "0123456789$~+")
			}
			if strings.HasPrefix(s, ",") {
				s = s[1:]
				continue
			}
			break
		}
		s = strings.TrimLeft(s, " !")
		if s == "" {
			continue
		}
		switch s[0] {
		case 'e':
			runs = true
		case 'r', 'R':
			reads = append(reads, strings.TrimPrefix(s[1:], " "))
		case 'a', 'i', 'c':
			// The text runs, over escaped newlines, to an empty line.
			for i+1 < len(lines) && lines[i+1] != "" {
				i++
			}
			i++
		case 's':
			// The regex has its / escaped but the replacement does not,
			// so the flags are what follows the last / (the generator's
			// w files have none).
			flags := s[strings.LastIndexByte(s, '/')+1:]
			if w := strings.IndexByte(flags, 'w'); w >= 0 {
				flags = flags[:w]
			}
			if strings.Contains(flags, "e") {
				runs = true
			}
		}
	}
	return runs, reads
}

// skipEscaped returns the index after the next unescaped / from i.
func skipEscaped(s string, i int) int {
	for i < len(s) {
		switch s[i] {
		case '\\':
			i += 2
			continue
		case '/':
			return i + 1
		}
		i++
	}
	return len(s)
}

var (
	sedRegexParts = []string{
		"a", "x", "^", ".", "*", ":", "=", ",", ";", "#", "}", "{", " ", "|", "/", "\\/", "\\", "\\n", "[", "]",
		"[/]", "[[:alpha:]/]", "[]/]", "[^]/]", "[\\/]", "[a-z]", "[[.-.]/]", "[[=a=]/]", "[[:", "[]", "[^]", "\\[/]",
		"[;w o1]", "[#]", "[}]", "\\(", "\\)", "\\{1\\}",
	}
	sedReplParts = []string{"a", "&", "\\1", "/", "\\/", ";", "#", "}", "[", "]", " ", "x", "\\", "w o2", "e"}
	sedTextParts = []string{"a", "b", "x", ";", "}", "#", " ", "w o3", "r i3", "e", "s/a/b/w o1", "\\", "{"}
	sedDelims    = []string{"/", "/", "/", "/", "/", "|", ",", "#", ";", "x", "[", "]", " ", "}", "\\", "a", "e", "w"}
	sedSeps      = []string{";", "\n", " ; ", ";\n", "", " ", "}", "\n}\n"}
	sedAddrs     = []string{"", "", "", "1", "$", "0,/a[/]/", "/x/", "/[/]/I", "\\cacp", "1~2", "2,+3", "/a/,~4", "\\%[%]%", "$!", "1!", "/a/ !", "\\[x[ ", "0~3"}
	sedSimple    = []string{"p", "d", "=", "x", "n", "N", "g", "G", "h", "H", "z", "F", "l", "l 5", "q", "Q 3", "D", "P", "{", "}", "{p}", "v", "v 4.2"}
)

func pick(rng *rand.Rand, xs []string) string { return xs[rng.IntN(len(xs))] }

func genPieces(rng *rand.Rand, parts []string, max int) string {
	var b strings.Builder
	for range rng.IntN(max + 1) {
		b.WriteString(pick(rng, parts))
	}
	return b.String()
}

// genSedProgram builds one random program from sed's constructs, biased
// towards the places a reader can disagree with sed about where a regex,
// replacement, label or text ends.
func genSedProgram(rng *rand.Rand) string {
	var b strings.Builder
	for range 1 + rng.IntN(4) {
		b.WriteString(pick(rng, sedAddrs))
		switch rng.IntN(12) {
		case 0, 1, 2, 3:
			d := pick(rng, sedDelims)
			b.WriteString("s" + d + genPieces(rng, sedRegexParts, 4) + d + genPieces(rng, sedReplParts, 3) + d)
			for range rng.IntN(3) {
				b.WriteString(pick(rng, []string{"g", "p", "i", "I", "m", "M", "2", " ", "e", "w o1", "w i1", " w o2"}))
			}
		case 4:
			d := pick(rng, sedDelims)
			b.WriteString("y" + d + genPieces(rng, sedReplParts, 3) + d + genPieces(rng, sedReplParts, 3) + d)
		case 5:
			b.WriteString(pick(rng, []string{"r i1", "R i2", "r  i3", "w o1", "W o2", "w  o3", "r", "w", "0r i1"}))
		case 6:
			b.WriteString(pick(rng, []string{"a ", "i\\", "c\\\n", "a\\", "i"}) + genPieces(rng, sedTextParts, 4))
		case 7:
			b.WriteString(pick(rng, []string{":lab", "b lab", "b", "t lab", "T", ": lab", "b lab ", "t"}))
			if rng.IntN(2) == 0 {
				b.WriteString(pick(rng, []string{" w o3", ";w o3", "}", "#c", " p", " r i2"}))
			}
		case 8:
			b.WriteString("#" + genPieces(rng, sedTextParts, 3))
		case 9:
			b.WriteString(pick(rng, []string{"e", "e true", "e  true"}))
		default:
			b.WriteString(pick(rng, sedSimple))
		}
		b.WriteString(pick(rng, sedSeps))
	}
	return b.String()
}
