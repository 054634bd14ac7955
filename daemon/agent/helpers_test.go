package agent

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/narrowd/narrowd/rules"
)

var update = flag.Bool("u", false, "update golden files")

// golden compares got with the file at path, or rewrites it with -u.
func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("missing golden file (run go test ./daemon/agent -u): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (run go test ./daemon/agent -u and review the diff)\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

// indent marshals v for a golden file: indented, HTML characters kept.
func indent(t *testing.T, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// fixture is one captured payload under testdata/hooks.
type fixture struct {
	agent, name, path string
	data              []byte
}

func fixtures(t testing.TB) []fixture {
	t.Helper()
	var out []fixture
	for _, agent := range Names() {
		paths, err := filepath.Glob(filepath.Join("..", "..", "testdata", "hooks", agent, "*.json"))
		if err != nil {
			t.Fatal(err)
		}
		if len(paths) == 0 {
			t.Fatalf("no fixtures for %s", agent)
		}
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, fixture{agent, strings.TrimSuffix(filepath.Base(p), ".json"), p, b})
		}
	}
	return out
}

// effect is what an agent does with a reply, per its documented and
// observed semantics.
type effect int

const (
	runs    effect = iota // the call runs without a person
	prompts               // the agent asks a person
	hangs                 // the agent waits forever (Gemini headless ask)
	blocked               // the call does not run
)

func (e effect) String() string {
	return [...]string{"runs", "prompts", "hangs", "blocked"}[e]
}

// wouldRun interprets reply as agent would for call, under every reading
// the research leaves open (Claude command vs http hook, Copilot's two
// PascalCase output dialects, Cursor's exit code vs JSON). It encodes the
// tables of real-clients.md and hooks.md; where they are silent it assumes
// the call runs.
func wouldRun(agent string, call rules.Call, r Reply, interactive bool) []effect {
	switch agent {
	case Claude:
		if call.Phase == rules.PermissionAsk {
			return []effect{claudePermissionEffect(r.Stdout, interactive)}
		}
		cmd := runs
		if r.ExitCode == 2 {
			cmd = blocked
		} else if r.ExitCode == 0 {
			cmd = claudePreToolEffect(r.Stdout, interactive)
		}
		// The http hook reads only the body.
		return []effect{cmd, claudePreToolEffect(r.Stdout, interactive)}
	case Codex:
		if call.Phase == rules.PermissionAsk {
			return []effect{codexPermissionEffect(r, interactive)}
		}
		return []effect{codexPreToolEffect(r)}
	case Gemini:
		return []effect{geminiEffect(r, interactive)}
	case Copilot:
		return copilotEffects(call, r, interactive)
	case Cursor:
		return cursorEffects(call, r, interactive)
	}
	return []effect{runs}
}

func object(b []byte) (map[string]any, bool) {
	t := bytes.TrimSpace(b)
	if len(t) == 0 || t[0] != '{' {
		return nil, false
	}
	var m map[string]any
	if json.Unmarshal(t, &m) != nil {
		return nil, false
	}
	return m, true
}

func sub(m map[string]any, k string) map[string]any {
	v, _ := m[k].(map[string]any)
	return v
}

func strOf(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}

// claudePreToolEffect: real-clients.md §1 table.
func claudePreToolEffect(stdout []byte, interactive bool) effect {
	m, ok := object(stdout)
	if !ok {
		return runs // no decision: Claude's own rules, which may run it
	}
	if d, ok := m["decision"]; ok {
		switch d {
		case "block":
			return blocked
		case "approve":
		default:
			return runs // schema rejects the whole answer
		}
	}
	hs := sub(m, "hookSpecificOutput")
	if hs == nil || strOf(hs, "hookEventName") != "PreToolUse" {
		return runs
	}
	switch hs["permissionDecision"] {
	case "deny":
		return blocked
	case "ask":
		if interactive {
			return prompts
		}
		return blocked
	}
	return runs
}

// claudePermissionEffect: exit codes are ignored at PermissionRequest; no
// decision means Claude shows its dialog, or denies when headless.
func claudePermissionEffect(stdout []byte, interactive bool) effect {
	none := blocked
	if interactive {
		none = prompts
	}
	m, ok := object(stdout)
	if !ok {
		return none
	}
	if d, ok := m["decision"]; ok && d != "approve" && d != "block" {
		return none
	}
	hs := sub(m, "hookSpecificOutput")
	if hs == nil || strOf(hs, "hookEventName") != "PermissionRequest" {
		return none
	}
	switch strOf(sub(hs, "decision"), "behavior") {
	case "deny":
		return blocked
	case "allow":
		return runs
	}
	return none
}

// codexPreToolEffect: real-clients.md §4, hooks.md §5.4. Anything the
// strict output schema rejects is a failed hook, and the tool runs.
func codexPreToolEffect(r Reply) effect {
	switch r.ExitCode {
	case 2:
		if strings.TrimSpace(r.Stderr) != "" {
			return blocked
		}
		return runs
	case 0:
	default:
		return runs
	}
	if len(bytes.TrimSpace(r.Stdout)) == 0 {
		return runs
	}
	m, ok := object(r.Stdout)
	if !ok {
		return runs
	}
	for k := range m {
		switch k {
		case "decision", "reason", "hookSpecificOutput", "systemMessage":
		default:
			return runs
		}
	}
	if m["decision"] == "block" && strOf(m, "reason") != "" {
		return blocked
	}
	hs := sub(m, "hookSpecificOutput")
	if hs == nil {
		return runs
	}
	for k := range hs {
		switch k {
		case "hookEventName", "permissionDecision", "permissionDecisionReason", "updatedInput", "additionalContext":
		default:
			return runs
		}
	}
	if strOf(hs, "hookEventName") == "PreToolUse" && hs["permissionDecision"] == "deny" &&
		strOf(hs, "permissionDecisionReason") != "" {
		return blocked
	}
	return runs
}

// codexPermissionEffect: a deny behavior blocks. PermissionRequest fires
// because Codex is about to ask for approval; without a decision it asks
// as it would with no hook at all, so that counts as prompting (never as
// blocked, so an encoded deny must be explicit).
func codexPermissionEffect(r Reply, interactive bool) effect {
	none := prompts
	if r.ExitCode != 0 {
		return none
	}
	m, ok := object(r.Stdout)
	if !ok {
		return none
	}
	hs := sub(m, "hookSpecificOutput")
	if hs == nil || strOf(hs, "hookEventName") != "PermissionRequest" {
		return none
	}
	switch strOf(sub(hs, "decision"), "behavior") {
	case "deny":
		return blocked
	case "allow":
		return runs
	}
	return none
}

// geminiEffect: hooks.md §2.5 (hookRunner.ts): stdout, else stderr, is
// parsed as JSON whatever the exit code; plain text blocks on any exit code
// but 0 and 1.
func geminiEffect(r Reply, interactive bool) effect {
	text := bytes.TrimSpace(r.Stdout)
	if len(text) == 0 {
		text = []byte(strings.TrimSpace(r.Stderr))
	}
	if m, ok := object(text); ok {
		switch m["decision"] {
		case "deny", "block":
			return blocked
		case "ask":
			if interactive {
				return prompts
			}
			return hangs
		}
		return runs
	}
	if r.ExitCode == 0 || r.ExitCode == 1 {
		return runs
	}
	return blocked
}

// copilotEffects: real-clients.md §3 and cli-hooks-reference.md. ask may
// be auto-approved under --allow-all-tools (third-party report), so it
// counts as running.
func copilotEffects(call rules.Call, r Reply, interactive bool) []effect {
	pascal := call.Event == "PreToolUse" || call.Event == "PermissionRequest"
	if call.Phase == rules.PermissionAsk {
		read := func(m map[string]any) effect {
			switch strOf(m, "behavior") {
			case "deny":
				return blocked
			}
			return runs
		}
		if r.ExitCode == 2 {
			return []effect{blocked}
		}
		if r.ExitCode != 0 {
			return []effect{runs} // failures are skipped
		}
		m, _ := object(r.Stdout)
		if !pascal {
			return []effect{read(m)}
		}
		return []effect{read(m), read(sub(sub(m, "hookSpecificOutput"), "decision"))}
	}
	if r.ExitCode != 0 {
		return []effect{blocked} // command preToolUse: any non-zero exit denies
	}
	read := func(m map[string]any, key, reasonKey string) effect {
		switch m[key] {
		case "deny":
			if strOf(m, reasonKey) == "" {
				return runs
			}
			return blocked
		}
		return runs
	}
	m, _ := object(r.Stdout)
	if !pascal {
		return []effect{read(m, "permissionDecision", "permissionDecisionReason")}
	}
	return []effect{
		read(m, "permissionDecision", "permissionDecisionReason"),
		read(sub(m, "hookSpecificOutput"), "permissionDecision", "permissionDecisionReason"),
	}
}

// cursorEffects: hooks.md §3.4. Read either by exit code first or by JSON
// first; a block must hold under both.
func cursorEffects(call rules.Call, r Reply, interactive bool) []effect {
	fromJSON := func() (effect, bool) {
		m, ok := object(r.Stdout)
		if !ok {
			return runs, false
		}
		switch m["permission"] {
		case "deny":
			return blocked, true
		case "allow":
			return runs, true
		case "ask":
			if cursorCanAsk(call.Event) && interactive {
				return prompts, true
			}
			return runs, true
		}
		return runs, false
	}
	exitFirst := runs
	switch r.ExitCode {
	case 2:
		exitFirst = blocked
	case 0:
		exitFirst, _ = fromJSON()
	}
	jsonFirst, ok := fromJSON()
	if !ok {
		jsonFirst = exitFirst
	}
	return []effect{exitFirst, jsonFirst}
}
