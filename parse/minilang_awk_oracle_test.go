package parse

import (
	"context"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestAwkProgramOracle runs generated BEGIN programs with real gawk in
// --sandbox mode, which refuses system(), pipes, getline from files and
// output redirection when a program reaches one, in an empty directory
// and with a canary in the environment. Whenever narrowd calls a program
// provable, gawk must report no sandbox violation, create no file, and
// print the canary only if narrowd reported an environment read. The run
// is bounded (300 programs); NARROWD_AWK_ORACLE=N runs N.
func TestAwkProgramOracle(t *testing.T) {
	gawk, err := exec.LookPath("gawk")
	if err != nil {
		t.Skip("gawk is not installed")
	}
	n := 300
	if v := os.Getenv("NARROWD_AWK_ORACLE"); v != "" {
		if n, err = strconv.Atoi(v); err != nil {
			t.Fatalf("NARROWD_AWK_ORACLE=%q: %v", v, err)
		}
	}
	const canary = "canary-7f3a91"
	rng := rand.New(rand.NewPCG(15, 3))
	proved, ran := 0, 0
	for i := range n {
		prog := genAwkProgram(rng)
		why := awkProgram(prog)
		readsEnv := strings.Contains(prog, "ENVIRON")
		dir := t.TempDir()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		cmd := exec.CommandContext(ctx, gawk, "--sandbox", prog)
		cmd.Dir = dir
		cmd.Env = []string{"LC_ALL=C", "PATH=/usr/bin:/bin", "NARROWD_CANARY=" + canary}
		cmd.Stdin = strings.NewReader("")
		out, runErr := cmd.CombinedOutput()
		cancel()
		if runErr == nil {
			ran++
		}
		if why != "" {
			continue
		}
		proved++
		created, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		bad := ""
		switch {
		case strings.Contains(string(out), "sandbox"):
			bad = "gawk --sandbox refused it"
		case len(created) > 0:
			bad = "it created " + created[0].Name()
		case strings.Contains(string(out), canary) && !readsEnv:
			bad = "it printed the environment"
		}
		if bad != "" {
			t.Errorf("program %d %q: narrowd proves it, but %s:\n%s", i, prog, bad, out)
		}
	}
	t.Logf("awk oracle: %d programs, gawk ran %d without error, narrowd proves %d", n, ran, proved)
}

var (
	awkExprs = []string{
		"1", "x", "\"a>b\"", "\"print\"", "$1", "a / 2 / 3", "1 > 2", "(1 > 2)", "x++", "\"/\"", "/>/", "/\"/",
		"length(\"ab\")", "substr(\"abc\", 2)", "1 ?\n 2 :\n 3", "1 &&\n 2", "1 ||\n 0", "ENVIRON[\"NARROWD_CANARY\"]",
		"SYMTAB[\"ENVI\" \"RON\"][\"NARROWD_CANARY\"]", "PROCINFO[\"pid\"]", "sprintf(\"%s\", 1)", "a[1]", "\"\\\"\"",
	}
	awkStmts = []string{
		"print \x01", "printf \"%s\\n\", \x01", "print \x01 > \"o1\"", "print \x01 >> \"o2\"", "printf \"x\" > \"o3\"", "x = \x01",
		"if (\x01) print \x01", "print \x01, \\\n\x01 > \"o4\"", "print (\x01,\n\x01) > \"o5\"", "print \x01 | \"cat\"", "\"echo\" | getline y",
		"getline y < \"/etc/hostname\"", "system(\"true\")", "close(\"o1\")", "fflush()", "print \x01 # > \"o6\"",
		"y = \x01; print y", "print \x01 |& \"cat\"", "print > \"o7\"", "printf(\"%d\", \x01) > \"o8\"", "x = 1 > 2 ? 3 : 4",
		"print \x01 ?\n \x01 :\n \x01 > \"o9\"", "@include \"x\"", "print \x01\n> 1",
	}
	awkSeps = []string{"; ", "\n", " ;\n", "\n\n"}
)

// genAwkProgram builds a BEGIN program, so every statement runs.
func genAwkProgram(rng *rand.Rand) string {
	var b strings.Builder
	b.WriteString("BEGIN {\n")
	for range 1 + rng.IntN(3) {
		st := pick(rng, awkStmts)
		for strings.Contains(st, "\x01") {
			st = strings.Replace(st, "\x01", pick(rng, awkExprs), 1)
		}
		b.WriteString(st)
		b.WriteString(pick(rng, awkSeps))
	}
	b.WriteString("}\n")
	return b.String()
}
