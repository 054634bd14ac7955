package parse

import (
	"context"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestJqProgramOracle runs generated jq programs with the real jq in a
// directory holding a module (m.jq), a data file (d.json) and a library
// directory (lib/), with a canary in the environment. Whenever narrowd
// calls a program provable, jq's output must carry no canary from those
// files, and the environment's canary only if narrowd reported an
// environment read. The run is bounded (60 programs: jq starts slowly);
// NARROWD_JQ_ORACLE=N runs N.
func TestJqProgramOracle(t *testing.T) {
	jq, err := exec.LookPath("jq")
	if err != nil {
		t.Skip("jq is not installed")
	}
	n := 60
	if v := os.Getenv("NARROWD_JQ_ORACLE"); v != "" {
		if n, err = strconv.Atoi(v); err != nil {
			t.Fatalf("NARROWD_JQ_ORACLE=%q: %v", v, err)
		}
	}
	dir := t.TempDir()
	files := map[string]string{
		"m.jq":       `def leak: "canary-module";`,
		"d.json":     `"canary-data"`,
		"lib/l.jq":   `def leak: "canary-lib";`,
		"lib/l.json": `"canary-libdata"`,
		"home/.jq":   `def homeleak: "canary-home";`,
		"in.json":    `{"a": 1}`,
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	k := mustKnowledge(t)
	rng := rand.New(rand.NewPCG(15, 7))
	proved, ran := 0, 0
	for i := range n {
		prog := genJqProgram(rng)
		args := []string{"-n"}
		if rng.IntN(2) == 0 {
			args = append(args, "-L", "lib")
		}
		args = append(args, prog, "in.json")
		words := []Word{{Value: "jq", Literal: true}}
		for _, a := range args {
			words = append(words, Word{Value: a, Literal: true})
		}
		c := k.Classify(words)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		cmd := exec.CommandContext(ctx, jq, args...)
		cmd.Dir = dir
		cmd.Env = []string{"LC_ALL=C", "PATH=/usr/bin:/bin", "HOME=" + filepath.Join(dir, "home"), "NARROWD_CANARY=canary-env"}
		out, runErr := cmd.CombinedOutput()
		cancel()
		if runErr == nil {
			ran++
		}
		if !c.Program.Known {
			continue
		}
		proved++
		readsEnv := strings.Contains(pathsString(c.Program.Paths), "/proc/self/environ")
		for _, canary := range []string{"canary-module", "canary-data", "canary-lib", "canary-libdata", "canary-env"} {
			if canary == "canary-env" && readsEnv {
				continue
			}
			if strings.Contains(string(out), canary) {
				t.Errorf("program %d jq %q: narrowd proves it (paths %s), but jq printed %s:\n%s", i, args, pathsString(c.Program.Paths), canary, out)
			}
		}
	}
	t.Logf("jq oracle: %d programs, jq ran %d without error, narrowd proves %d", n, ran, proved)
}

var jqParts = []string{
	`import "m" as m; m::leak`, `include "m"; leak`, `import "d" as $d; $d`, `import "l" as l; l::leak`,
	`include "l"; leak`, `import "l" as $x; $x`, `"m" | modulemeta`, `env.NARROWD_CANARY`, `$ENV.NARROWD_CANARY`,
	`$__loc__`, `input_filename`, `[inputs]`, `input`, `.`, `"import"`, `{a: 1} | .a`, `[limit(3; range(10))]`,
	`"\(env)"`, `get_search_list`, `homeleak`, `$ENV | keys`, `try error("x") catch .`, `ltrimstr("a")`,
	`import"m"as m; m::leak`, `include"l";leak`,
}

// genJqProgram joins one to three parts with a pipe or a comma.
func genJqProgram(rng *rand.Rand) string {
	var b strings.Builder
	for j := range 1 + rng.IntN(3) {
		part := pick(rng, jqParts)
		if j > 0 && (strings.HasPrefix(part, "import") || strings.HasPrefix(part, "include")) {
			// Directives come first.
			return part + " | " + b.String()
		}
		if j > 0 {
			b.WriteString(pick(rng, []string{" | ", ", "}))
		}
		b.WriteString(part)
	}
	return b.String()
}
