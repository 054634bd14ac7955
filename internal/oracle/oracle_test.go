package oracle

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/narrowd/narrowd/daemon"
	"github.com/narrowd/narrowd/parse"
	"github.com/narrowd/narrowd/rules"
)

// Environment of a run (the long run, .ci/oracle.sh, sets them):
//
//	ORACLE_SEED      seed of the generator (default 1)
//	ORACLE_COUNT     generated calls to judge (default 1500; 0 = all)
//	ORACLE_PARALLEL  sandboxes at once (default 2)
//	ORACLE_STRICT    1: known violations fail too
//	ORACLE_REPORT    file to write the figures and violations to
//	NARROWD_E2E_REQUIRE  set: missing strace or unshare fails instead of skipping

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

// oracleEnv is what every oracle test needs: a world, a sandbox proven
// to confine, the engine and the table.
type oracleEnv struct {
	w   *world
	sb  *sandbox
	eng *daemon.Engine
	k   *parse.Knowledge
}

// setup builds the world and the sandbox and proves the confinement,
// skipping only when strace or unshare is missing and
// NARROWD_E2E_REQUIRE is unset.
func setup(t *testing.T) *oracleEnv {
	t.Helper()
	root, err := os.MkdirTemp("/tmp", "narrowd-oracle-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	w, err := buildWorld(filepath.Join(root, "w"))
	if err != nil {
		t.Fatal(err)
	}
	sb, err := newSandbox(w, filepath.Join(root, "run"))
	switch {
	case (errors.Is(err, errMissingTools) || errors.Is(err, errNotRoot)) && os.Getenv("NARROWD_E2E_REQUIRE") == "":
		t.Skipf("the oracle cannot run: %v", err)
	case err != nil:
		t.Fatalf("the oracle cannot run: %v", err)
	}
	stop, err := sb.startListener()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	eng, err := daemon.NewEngine(daemon.EngineConfig{Profile: "standard"})
	if err != nil {
		t.Fatal(err)
	}
	k, err := parse.DefaultKnowledge()
	if err != nil {
		t.Fatal(err)
	}
	return &oracleEnv{w: w, sb: sb, eng: eng, k: k}
}

// TestConfinement proves the sandbox before any generated command is
// trusted to it: a write to the host's read-only root, to a host
// directory and to the real /tmp fails; only lo exists, and the
// listener answers on it; the command runs as nobody in its own PID
// namespace; the world copy is fresh for every run.
func TestConfinement(t *testing.T) {
	env := setup(t)
	// A directory of the host's root file system that anyone may write:
	// only the read-only bind can stop the probe. Not under /tmp, which
	// the sandbox replaces (a clone of the repository may be there).
	parent := "/var/tmp"
	if fi, err := os.Stat(parent); err != nil || !fi.IsDir() {
		parent = "."
	}
	host, err := os.MkdirTemp(parent, ".narrowd-confinement-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(host)
	if err := os.Chmod(host, 0o777); err != nil {
		t.Fatal(err)
	}
	if host, err = filepath.Abs(host); err != nil {
		t.Fatal(err)
	}
	probe := filepath.Join(host, "written")
	ws := env.w.ws("w-plain")
	cases := []struct {
		name, cmd string
		wantOut   string // the output holds it
		wantNot   string // the output must not hold it
	}{
		{"root is read-only", "touch /usr/x && echo WROTE; touch /x && echo WROTE; echo ok", "ok", "WROTE"},
		{"host dirs are read-only", "echo x > " + probe + " && echo WROTE; echo ok", "Read-only file system", "WROTE"},
		{"runs as nobody", "id -u", "65534", ""},
		{"own pid namespace", "cat /proc/1/cmdline", "ORACLE_NEWROOT", ""},
		{"no network but lo", "cat /proc/net/dev", "lo:", "eth0"},
		{"listener answers", "exec 3<>/dev/tcp/127.0.0.1/8080 && cat <&3", "hello", ""},
		{"no route out", "exec 3<>/dev/tcp/1.1.1.1/80 && echo CONNECTED; echo tried", "tried", "CONNECTED"},
		{"world is writable inside", "echo x > a.txt && cat a.txt", "x", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := env.sb.run(context.Background(), 0, ws, c.cmd)
			if r.setupErr != nil {
				// strace and unshare are here (setup checked), so a
				// sandbox that does not start is a failure, not a skip.
				t.Fatalf("sandbox: %v", r.setupErr)
			}
			got := r.out + r.err
			if !strings.Contains(got, c.wantOut) || (c.wantNot != "" && strings.Contains(got, c.wantNot)) {
				t.Errorf("%s: output %q, want %q and not %q", c.cmd, got, c.wantOut, c.wantNot)
			}
		})
	}
	if _, err := os.Stat(probe); err == nil {
		t.Errorf("a command in the sandbox wrote %s on the host", probe)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); strings.TrimSpace(string(b)) == "x" {
		t.Errorf("a write in the sandbox reached the host's world template")
	}
	for _, p := range []string{"/usr/x", "/x"} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("a command in the sandbox created %s on the host", p)
		}
	}
}

// runOne judges, runs and checks one call.
func (env *oracleEnv) runOne(slot int, c call, v rules.Verdict) ([]violation, error) {
	ws := env.w.ws(c.ws)
	cl := claimsOf(env.k, v, c.text, ws, ws)
	r := env.sb.run(context.Background(), slot, ws, c.text)
	if r.setupErr != nil {
		return nil, r.setupErr
	}
	return env.w.check(c, v, cl, r), nil
}

// forceAllow is a verdict that allows c as the profile's read rule
// would, whatever narrowd said: the planted violations use it.
func forceAllow(v rules.Verdict) rules.Verdict {
	v.Decision = rules.Decision{Outcome: rules.Allow, Rule: "planted"}
	if v.Narrowed == nil {
		l := rules.Labels{}
		v.Narrowed = &l
	}
	n := *v.Narrowed
	n = n.With(rules.Mutation, 0)
	v.Narrowed = &n
	return v
}

// TestOracleCatchesPlanted shows the oracle can fail: calls forced to an
// allow-as-read verdict that read a canary, run a program through a
// mini-language, write outside, or connect are each caught in the class
// they belong to, and harmless reads are not.
func TestOracleCatchesPlanted(t *testing.T) {
	env := setup(t)
	cases := []struct {
		cmd  string
		ws   string
		want []string // classes; empty: no violation
	}{
		{"cat ~/.ssh/id_rsa", "w-plain", []string{classCanary, classLeak}},
		{"cat docs/secret.txt", "w-plain", []string{classCanary, classLeak}},
		{"sed 'e id' a.txt", "w-plain", []string{classExec}},
		{"sed -f script.sed a.txt", "w-plain", []string{classExec, classWrite, classCanary}},
		{"awk 'BEGIN{system(\"id\")}'", "w-plain", []string{classExec}},
		{"curl -s http://127.0.0.1:8080/", "w-plain", []string{classConnect}},
		{"exec 3<>/dev/tcp/127.0.0.1/8080", "w-plain", []string{classConnect}},
		{"echo x > /tmp/x", "w-plain", []string{classWrite}},
		{"echo x > out.txt", "w-plain", []string{classWrite}},
		{"env", "w-plain", []string{classLeak}},
		{"cat /proc/self/environ", "w-plain", []string{classCanary, classLeak}},
		{"git status", "w-fsmonitor", []string{classExec}},
		{"git log -p -1", "w-textconv", []string{classExec}},
		{"git status", "w-worktree", []string{classCanary}},
		{"cat a.txt", "w-plain", nil},
		{"ls -la", "w-plain", nil},
		{"grep -r hello src", "w-plain", nil},
		{"cat a.txt | head -n 1 > /dev/null", "w-plain", nil},
	}
	for _, c := range cases {
		t.Run(c.cmd+"@"+c.ws, func(t *testing.T) {
			ws := env.w.ws(c.ws)
			v, err := judge(env.eng, ws, c.cmd)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat("/usr/bin/curl"); err != nil && strings.HasPrefix(c.cmd, "curl") {
				t.Skip("no curl")
			}
			vs, err := env.runOne(0, call{rule: "planted", text: c.cmd, ws: c.ws}, forceAllow(v))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, v := range vs {
				if !slices.Contains(got, v.class) {
					got = append(got, v.class)
				}
			}
			for _, want := range c.want {
				if !slices.Contains(got, want) {
					t.Errorf("%s: the oracle missed a %s violation; found %v", c.cmd, want, vs)
				}
			}
			if len(c.want) == 0 && len(vs) > 0 {
				t.Errorf("%s: a harmless read was reported: %v", c.cmd, vs)
			}
		})
	}
}

// summary is the figures of one run.
type summary struct {
	generated, judged, allowed, executed, failedRuns int
	violations                                       []violation
	// ran are the calls executed, for the report.
	ran []call
}

// TestOracle is the bounded run: calls generated from the knowledge
// table, judged under the standard profile, and every allowed one run
// in the sandbox and checked. Violations whose class and table rule are
// listed in testdata/known_violations.txt are reported but do not fail
// unless ORACLE_STRICT=1: they are open classes of issue 15 being fixed
// elsewhere. Everything else fails.
func TestOracle(t *testing.T) {
	env := setup(t)
	if r := env.sb.run(context.Background(), 0, env.w.ws("w-plain"), "touch /usr/x"); r.setupErr != nil {
		t.Fatalf("sandbox: %v", r.setupErr)
	} else if !strings.Contains(r.err, "Read-only file system") && !strings.Contains(r.err, "Permission denied") {
		t.Fatalf("the sandbox let touch /usr/x through (stderr %q): refusing to run generated commands", r.err)
	}
	specs, err := loadSpecs(knowledgeDir)
	if err != nil {
		t.Fatal(err)
	}
	p, err := loadPayloads("testdata/payloads.toml")
	if err != nil {
		t.Fatal(err)
	}
	substitute(p, env.w.root)
	seed := uint64(envInt("ORACLE_SEED", 1))
	count := envInt("ORACLE_COUNT", 1500)
	calls, generatedTotal := sample(&generator{p: p}, specs, seed, count, env.w.variants, env.w.gitVariants)
	calls = append(calls, alwaysCalls(p, env.w)...)
	sum := summary{generated: generatedTotal}
	type job struct {
		c call
		v rules.Verdict
	}
	var jobs []job
	for _, c := range calls {
		v, err := judge(env.eng, env.w.ws(c.ws), c.text)
		if err != nil {
			t.Fatalf("judging %q: %v", c.text, err)
		}
		sum.judged++
		if v.Decision.Outcome == rules.Allow {
			sum.allowed++
			jobs = append(jobs, job{c, v})
		}
	}
	parallel := max(1, envInt("ORACLE_PARALLEL", 2))
	var mu sync.Mutex
	var wg sync.WaitGroup
	next := make(chan job)
	for slot := range parallel {
		wg.Go(func() {
			for j := range next {
				vs, err := env.runOne(slot, j.c, j.v)
				mu.Lock()
				if err != nil {
					sum.failedRuns++
					t.Logf("could not run %q: %v", j.c.text, err)
				} else {
					sum.executed++
					sum.ran = append(sum.ran, j.c)
					sum.violations = append(sum.violations, vs...)
				}
				mu.Unlock()
			}
		})
	}
	for _, j := range jobs {
		next <- j
	}
	close(next)
	wg.Wait()

	known := loadKnown(t, "testdata/known_violations.txt")
	strict := os.Getenv("ORACLE_STRICT") == "1"
	report := sum.report(seed, count)
	t.Log("\n" + report)
	if f := os.Getenv("ORACLE_REPORT"); f != "" {
		if err := os.WriteFile(f, []byte(report), 0o644); err != nil {
			t.Error(err)
		}
	}
	if sum.failedRuns > 0 {
		t.Errorf("%d allowed calls could not be run", sum.failedRuns)
	}
	// One line per call and class; the report has them all.
	failing, shown := 0, map[string]bool{}
	for _, v := range sum.violations {
		if !strict && known[knownKey(v)] {
			continue
		}
		key := v.class + "\x00" + v.call.text + "\x00" + v.call.ws
		if shown[key] {
			continue
		}
		shown[key] = true
		if failing++; failing <= 60 {
			t.Errorf("violation %s", v)
		}
	}
	if failing > 60 {
		t.Errorf("… and %d more calls with violations (set ORACLE_REPORT for all)", failing-60)
	}
}

// alwaysCalls puts every "always" call in the workspaces it is meant
// for: git calls in every variant, the rest in the plain one and one
// hostile one.
func alwaysCalls(p *payloads, w *world) []call {
	var out []call
	for i, text := range p.Always {
		vs := []string{"w-plain", w.gitVariants[i%len(w.gitVariants)]}
		if strings.Contains(text, "git ") {
			vs = w.variants
		}
		for _, ws := range vs {
			out = append(out, call{rule: firstRule(text), text: text, ws: ws})
		}
	}
	return out
}

// firstRule names an "always" call by the table rule of its first
// program, as generated calls are named by their spec.
func firstRule(text string) string {
	k, err := parse.DefaultKnowledge()
	if err != nil {
		return "always"
	}
	a := parse.Analyze(text, k)
	for _, p := range a.Programs {
		if slices.Contains([]string{"cd", "pushd", "true", "echo", "export", "set"}, p.Name) && len(a.Programs) > 1 {
			continue // the shell's own moves: the other program is the call
		}
		if p.Rule != "" {
			return p.Rule
		}
		return p.Name
	}
	return "always"
}

// substitute fills the payloads' placeholders.
func substitute(p *payloads, root string) {
	r := strings.NewReplacer("@W@", root, "@PORT@", strconv.Itoa(listenPort))
	fix := func(list []string) {
		for i := range list {
			list[i] = r.Replace(list[i])
		}
	}
	fix(p.Values)
	fix(p.Wrap)
	fix(p.Always)
	for _, l := range p.Operands {
		fix(l)
	}
	for _, c := range p.Command {
		fix(c.Text)
		fix(c.Values)
	}
}

// knownKey is how testdata/known_violations.txt names a violation: its
// class and its call's table rule ("exec git status").
func knownKey(v violation) string {
	return v.class + " " + v.call.rule
}

func loadKnown(t *testing.T, file string) map[string]bool {
	t.Helper()
	known := map[string]bool{}
	f, err := os.Open(file)
	if err != nil {
		if os.IsNotExist(err) {
			return known
		}
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		known[strings.Join(strings.Fields(line), " ")] = true
	}
	return known
}

// report prints the figures, the violations by class and rule, and the
// violations themselves.
func (s summary) report(seed uint64, count int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "oracle: seed %d, count %d\n", seed, count)
	fmt.Fprintf(&b, "calls generated from the table: %d\n", s.generated)
	fmt.Fprintf(&b, "calls judged:   %d\n", s.judged)
	fmt.Fprintf(&b, "allowed:        %d\n", s.allowed)
	fmt.Fprintf(&b, "executed:       %d (could not run: %d)\n", s.executed, s.failedRuns)
	byClass := map[string]int{}
	byKey := map[string][]violation{}
	calls := map[string]bool{}
	for _, v := range s.violations {
		byClass[v.class]++
		k := v.class + " " + v.call.rule
		byKey[k] = append(byKey[k], v)
		calls[v.call.text+"@"+v.call.ws] = true
	}
	fmt.Fprintf(&b, "violations:     %d in %d calls\n", len(s.violations), len(calls))
	for _, c := range []string{classExec, classWrite, classConnect, classCanary, classLeak} {
		fmt.Fprintf(&b, "  %-14s %d\n", c, byClass[c])
	}
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Fprintf(&b, "\nby class and table rule (%d):\n", len(keys))
	for _, k := range keys {
		vs := byKey[k]
		fmt.Fprintf(&b, "  %-40s %4d  e.g. %q in %s: %s\n", k, len(vs), vs[0].call.text, vs[0].call.ws, vs[0].detail)
	}
	fmt.Fprintf(&b, "\nviolations:\n")
	for _, v := range s.violations {
		fmt.Fprintf(&b, "  %s\n", v)
	}
	ran := slices.Clone(s.ran)
	slices.SortFunc(ran, func(a, b call) int { return strings.Compare(a.text+a.ws, b.text+b.ws) })
	fmt.Fprintf(&b, "\nallowed and executed:\n")
	for _, c := range ran {
		fmt.Fprintf(&b, "  %s\t%s\n", c.ws, c.text)
	}
	return b.String()
}
