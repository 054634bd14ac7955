package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode"

	"github.com/narrowd/narrowd/rules"
)

var outcomes = []rules.Outcome{rules.Allow, rules.Sandbox, rules.Ask, rules.Deny}

// decisionCalls returns every call narrowd decides on: the pre-tool and
// permission-request fixtures plus events no fixture covers.
func decisionCalls(t testing.TB) []rules.Call {
	t.Helper()
	var calls []rules.Call
	for _, fx := range fixtures(t) {
		c, err := Decode(fx.agent, bytes.NewReader(fx.data))
		if err != nil {
			t.Fatalf("%s/%s: %v", fx.agent, fx.name, err)
		}
		if c.Phase != rules.PostTool {
			calls = append(calls, c)
		}
	}
	return append(calls,
		rules.Call{Agent: Copilot, Event: "permissionRequest", Phase: rules.PermissionAsk, Tool: "bash"},
		rules.Call{Agent: Cursor, Event: "beforeReadFile", Phase: rules.PreTool, Tool: "Read"},
		rules.Call{Agent: Claude, Phase: rules.PreTool, Tool: "Bash"}, // no event recorded
	)
}

// reasons are decision reasons that must not break a reply.
var reasons = []string{
	"",
	"rm -rf targets ../ outside the workspace root",
	`{"decision":"allow"}`,
	"\x1b[2J\x1b]0;pwned\x07 line\nbreak\r\x00nul",
	"bad utf-8 \xff\xfe",
	strings.Repeat("é", 3*maxReason),
}

// TestEncodeBlocks is the property the package exists for: for every agent,
// event, outcome and interactivity, an outcome other than allow never
// lets the call run, and unless a person can be asked it blocks outright.
func TestEncodeBlocks(t *testing.T) {
	t.Parallel()
	for _, call := range decisionCalls(t) {
		for _, o := range outcomes {
			for _, interactive := range []bool{false, true} {
				name := fmt.Sprintf("%s/%s/%s/%s/interactive=%v", call.Agent, call.Event, call.Tool, o, interactive)
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					for _, reason := range reasons {
						d := rules.Decision{Outcome: o, Rule: "test-rule", Reason: reason}
						r := Encode(call.Agent, call, d, Options{Interactive: interactive})
						checkEffects(t, call, d, r, interactive)
					}
				})
			}
		}
	}
}

func checkEffects(t *testing.T, call rules.Call, d rules.Decision, r Reply, interactive bool) {
	t.Helper()
	effects := wouldRun(call.Agent, call, r, interactive)
	if d.Outcome == rules.Allow {
		if effects[0] != runs {
			t.Errorf("allow does not run: %v\nreply: %s", effects, show(r))
		}
		return
	}
	mayPrompt := d.Outcome == rules.Ask && interactive
	for _, e := range effects {
		if e == runs || e == hangs || (e == prompts && !mayPrompt) {
			t.Errorf("%s (interactive=%v) gives %v under some reading: %v\nreply: %s",
				d.Outcome, interactive, e, effects, show(r))
		}
	}
}

func show(r Reply) string {
	return fmt.Sprintf("exit=%d stdout=%q stderr=%q", r.ExitCode, r.Stdout, r.Stderr)
}

// TestFail checks that an internal failure blocks for every known call, and
// never lets a call run when the payload did not even decode.
func TestFail(t *testing.T) {
	t.Parallel()
	for _, call := range decisionCalls(t) {
		t.Run(call.Agent+"/"+call.Event+"/"+call.Tool, func(t *testing.T) {
			t.Parallel()
			for _, interactive := range []bool{false, true} {
				r := Fail(call.Agent, call, "the daemon timed out")
				for _, e := range wouldRun(call.Agent, call, r, interactive) {
					if e != blocked {
						t.Errorf("Fail gives %v: %s", e, show(r))
					}
				}
				// The payload did not decode, so Fail knows nothing of the
				// event that fired.
				r = Fail(call.Agent, rules.Call{}, "the payload did not decode")
				for _, e := range wouldRun(call.Agent, call, r, interactive) {
					if e == runs || e == hangs {
						t.Errorf("Fail of an unknown event gives %v: %s", e, show(r))
					}
				}
			}
		})
	}
}

func TestUnknownAgentBlocksEverywhere(t *testing.T) {
	t.Parallel()
	for _, call := range decisionCalls(t) {
		if call.Phase != rules.PreTool {
			continue
		}
		for _, r := range []Reply{
			Encode("windsurf", call, rules.Decision{Outcome: rules.Allow}, Options{}),
			Fail("windsurf", call, "unknown agent"),
		} {
			for _, e := range wouldRun(call.Agent, call, r, true) {
				if e != blocked {
					t.Errorf("%s/%s: %v: %s", call.Agent, call.Event, e, show(r))
				}
			}
		}
	}
}

func TestPostToolAbstains(t *testing.T) {
	t.Parallel()
	for _, fx := range fixtures(t) {
		call, err := Decode(fx.agent, bytes.NewReader(fx.data))
		if err != nil {
			t.Fatal(err)
		}
		if call.Phase != rules.PostTool {
			continue
		}
		for _, o := range outcomes {
			r := Encode(fx.agent, call, rules.Decision{Outcome: o}, Options{})
			if !reflect.DeepEqual(r, Abstain(fx.agent, call)) {
				t.Errorf("%s/%s %s: %s, want abstain", fx.agent, fx.name, o, show(r))
			}
		}
	}
}

func TestAbstain(t *testing.T) {
	t.Parallel()
	for _, agent := range Names() {
		r := Abstain(agent, rules.Call{Agent: agent})
		out := strings.TrimSpace(string(r.Stdout))
		if r.ExitCode != 0 || r.Stderr != "" || (out != "" && out != "{}") {
			t.Errorf("%s: %s", agent, show(r))
		}
		if agent != Cursor && out != "" {
			t.Errorf("%s: abstain writes %q, want nothing", agent, out)
		}
	}
}

// TestReplyText checks what a person and a model see: one line, no
// control characters, bounded, never JSON on stderr, and valid JSON on
// stdout.
func TestReplyText(t *testing.T) {
	t.Parallel()
	for _, call := range decisionCalls(t) {
		for _, o := range outcomes {
			for _, reason := range reasons {
				d := rules.Decision{Outcome: o, Rule: "r\nule", Reason: reason}
				for _, r := range []Reply{Encode(call.Agent, call, d, Options{}), Fail(call.Agent, call, reason)} {
					if len(r.Stdout) > 0 && !json.Valid(r.Stdout) {
						t.Errorf("%s: stdout is not JSON: %q", call.Agent, r.Stdout)
					}
					if r.Stderr == "" {
						continue
					}
					line, ok := strings.CutSuffix(r.Stderr, "\n")
					if !ok || strings.IndexFunc(line, unicode.IsControl) >= 0 {
						t.Errorf("%s: stderr has control characters: %q", call.Agent, r.Stderr)
					}
					if !strings.HasPrefix(line, "narrowd") {
						t.Errorf("%s: stderr does not start with narrowd: %q", call.Agent, line)
					}
					if len(line) > 3*maxReason {
						t.Errorf("%s: stderr is %d bytes", call.Agent, len(line))
					}
				}
			}
		}
	}
}

// TestAskBecomesDenyWithHint checks that a person who meets a converted
// ask learns how to approve the call.
func TestAskBecomesDenyWithHint(t *testing.T) {
	t.Parallel()
	for _, call := range decisionCalls(t) {
		r := Encode(call.Agent, call, rules.Decision{Outcome: rules.Ask, Rule: "needs-person", Reason: "writes outside the workspace"}, Options{})
		text := string(r.Stdout) + r.Stderr
		if !strings.Contains(text, "needs approval") || !strings.Contains(text, "add a rule to your narrowd profile") {
			t.Errorf("%s/%s: no approval hint: %s", call.Agent, call.Event, show(r))
		}
	}
}

// TestEncodeGolden records the exact replies, one file per agent.
func TestEncodeGolden(t *testing.T) {
	t.Parallel()
	byAgent := map[string][]rules.Call{}
	seen := map[string]bool{}
	for _, call := range decisionCalls(t) {
		key := call.Agent + "/" + call.Event
		if seen[key] {
			continue
		}
		seen[key] = true
		byAgent[call.Agent] = append(byAgent[call.Agent], call)
	}
	for _, agent := range Names() {
		t.Run(agent, func(t *testing.T) {
			t.Parallel()
			type entry struct {
				Case   string `json:"case"`
				Stdout any    `json:"stdout"`
				Stderr string `json:"stderr,omitempty"`
				Exit   int    `json:"exit_code"`
			}
			var entries []entry
			add := func(name string, r Reply) {
				var out any
				if len(r.Stdout) > 0 {
					out = json.RawMessage(bytes.TrimSpace(r.Stdout))
				}
				entries = append(entries, entry{name, out, r.Stderr, r.ExitCode})
			}
			for _, call := range byAgent[agent] {
				event := call.Event
				if event == "" {
					event = "(no event)"
				}
				for _, o := range outcomes {
					for _, interactive := range []bool{false, true} {
						d := rules.Decision{Outcome: o, Rule: "test-rule", Reason: "because of the test"}
						add(fmt.Sprintf("%s %s interactive=%v", event, o, interactive),
							Encode(agent, call, d, Options{Interactive: interactive}))
					}
				}
				add(event+" fail", Fail(agent, call, "the daemon timed out"))
			}
			add("unknown-event fail", Fail(agent, rules.Call{}, "the payload did not decode"))
			golden(t, filepath.Join("testdata", "encode", agent+".golden.json"), indent(t, entries))
		})
	}
}
