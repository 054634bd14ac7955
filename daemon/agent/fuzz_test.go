package agent

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/narrowd/narrowd/rules"
)

// FuzzDecode feeds arbitrary bytes to every agent's decoder: it must never
// panic, must return the zero Call with any error, must refuse input
// longer than MaxPayload, and any call it returns must be encodable into
// a reply that blocks a deny.
func FuzzDecode(f *testing.F) {
	names := Names()
	for _, fx := range fixtures(f) {
		for i, n := range names {
			if n == fx.agent {
				f.Add(uint8(i), fx.data)
			}
		}
	}
	for i := range names {
		f.Add(uint8(i), []byte(payload(names[i], `"Bash"`, `"ls \ud83d\ude00"`)))
		f.Add(uint8(i), []byte(`{"a":"\ud800"}`))
		f.Add(uint8(i), []byte(`{"a":1,"a":2}`))
	}
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		agent := names[int(which)%len(names)]
		if which >= 252 {
			// Now and then, the same bytes padded past the bound: even
			// a valid payload must then be refused.
			long := io.MultiReader(bytes.NewReader(data), strings.NewReader(strings.Repeat(" ", MaxPayload+1)))
			if _, err := Decode(agent, long); !errors.Is(err, ErrTooLarge) {
				t.Fatalf("padded past MaxPayload: err = %v, want ErrTooLarge", err)
			}
		}
		call, err := Decode(agent, bytes.NewReader(data))
		if err != nil {
			if !reflect.DeepEqual(call, rules.Call{}) {
				t.Fatalf("error %v with a non-zero call %+v", err, call)
			}
			if len(data) > MaxPayload && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("oversized input: err = %v, want ErrTooLarge", err)
			}
			return
		}
		if len(data) > MaxPayload {
			t.Fatalf("accepted %d bytes", len(data))
		}
		if call.Agent != agent || call.Tool == "" || call.Event == "" {
			t.Fatalf("incomplete call %+v", call)
		}
		if call.Phase == rules.PostTool {
			return
		}
		for _, interactive := range []bool{false, true} {
			d := rules.Decision{Outcome: rules.Deny, Rule: "fuzz", Reason: call.Tool}
			r := Encode(agent, call, d, Options{Interactive: interactive})
			for _, e := range wouldRun(agent, call, r, interactive) {
				if e != blocked {
					t.Fatalf("deny gives %v for %+v: %s", e, call, show(r))
				}
			}
		}
	})
}

// eventsOf lists, per agent, the events narrowd decides on and their phase.
func eventsOf(agent string) []rules.Call {
	pre := func(e string) rules.Call { return rules.Call{Agent: agent, Event: e, Phase: rules.PreTool} }
	perm := func(e string) rules.Call { return rules.Call{Agent: agent, Event: e, Phase: rules.PermissionAsk} }
	switch agent {
	case Claude, Codex:
		return []rules.Call{pre("PreToolUse"), perm("PermissionRequest")}
	case Gemini:
		return []rules.Call{pre("BeforeTool")}
	case Copilot:
		return []rules.Call{pre("preToolUse"), pre("PreToolUse"), perm("permissionRequest"), perm("PermissionRequest")}
	case Cursor:
		return []rules.Call{pre("preToolUse"), pre("beforeShellExecution"), pre("beforeMCPExecution"), pre("beforeReadFile")}
	}
	return nil
}

// FuzzEncode checks that no decision text, rule id or outcome value can
// break a reply: Encode never panics, an outcome other than allow (even one
// narrowd does not know) never runs, and Fail always blocks.
func FuzzEncode(f *testing.F) {
	for _, r := range reasons {
		f.Add(uint8(0), uint8(0), uint8(3), false, r, "rule")
	}
	f.Add(uint8(4), uint8(1), uint8(2), true, `{"permission":"allow"}`, "x\ny")
	f.Add(uint8(2), uint8(0), uint8(2), false, "\"}", strings.Repeat("\\", 100))
	f.Fuzz(func(t *testing.T, which, event, outcome uint8, interactive bool, reason, rule string) {
		names := Names()
		agent := names[int(which)%len(names)]
		events := eventsOf(agent)
		call := events[int(event)%len(events)]
		call.Tool = "Bash"
		d := rules.Decision{Outcome: rules.Outcome(outcome), Rule: rule, Reason: reason}
		r := Encode(agent, call, d, Options{Interactive: interactive})
		checkEffects(t, call, d, r, interactive)
		for _, e := range wouldRun(agent, call, Fail(agent, call, reason), interactive) {
			if e != blocked {
				t.Fatalf("Fail gives %v", e)
			}
		}
	})
}
