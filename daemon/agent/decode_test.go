package agent

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/narrowd/narrowd/rules"
)

func TestDecodeFixtures(t *testing.T) {
	t.Parallel()
	for _, fx := range fixtures(t) {
		t.Run(fx.agent+"/"+fx.name, func(t *testing.T) {
			t.Parallel()
			call, err := Decode(fx.agent, bytes.NewReader(fx.data))
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if call.Agent != fx.agent || call.Tool == "" || call.Event == "" {
				t.Errorf("incomplete call: %+v", call)
			}
			switch call.Phase {
			case rules.PreTool, rules.PermissionAsk, rules.PostTool:
			default:
				t.Errorf("phase %q", call.Phase)
			}
			golden(t, filepath.Join("testdata", "decode", fx.agent, fx.name+".golden.json"), indent(t, call))
		})
	}
}

func TestDetect(t *testing.T) {
	t.Parallel()
	for _, fx := range fixtures(t) {
		t.Run(fx.agent+"/"+fx.name, func(t *testing.T) {
			t.Parallel()
			got, err := Detect(fx.data)
			if err != nil || got != fx.agent {
				t.Errorf("Detect = %q, %v; want %q", got, err, fx.agent)
			}
		})
	}
	for _, tc := range []struct {
		name, payload string
	}{
		{"no-markers", `{"tool_name":"Shell","tool_input":{"command":"ls"}}`},
		{"empty-object", `{}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if _, err := Detect([]byte(tc.payload)); !errors.Is(err, ErrUnknownAgent) {
				t.Errorf("Detect err = %v, want ErrUnknownAgent", err)
			}
		})
	}
	t.Run("too-large", func(t *testing.T) {
		t.Parallel()
		if _, err := Detect(make([]byte, MaxPayload+1)); !errors.Is(err, ErrTooLarge) {
			t.Errorf("err = %v, want ErrTooLarge", err)
		}
	})
}

// templates are one minimal pre-tool payload per agent with CMD standing
// for the command's JSON literal and TOOL for the tool name's.
var templates = map[string]string{
	Claude:  `{"session_id":"s","transcript_path":"/t","cwd":"/p","hook_event_name":"PreToolUse","tool_name":TOOL,"tool_input":{"command":CMD}}`,
	Codex:   `{"session_id":"s","turn_id":"t","model":"m","cwd":"/p","hook_event_name":"PreToolUse","tool_name":TOOL,"tool_input":{"command":CMD}}`,
	Gemini:  `{"session_id":"s","cwd":"/p","hook_event_name":"BeforeTool","timestamp":"2026-11-30T10:30:08.267Z","tool_name":TOOL,"tool_input":{"command":CMD}}`,
	Copilot: `{"sessionId":"s","timestamp":1,"cwd":"/p","toolName":TOOL,"toolArgs":{"command":CMD}}`,
	Cursor:  `{"conversation_id":"c","cursor_version":"1","hook_event_name":"preToolUse","cwd":"/p","tool_name":TOOL,"tool_input":{"command":CMD}}`,
}

func payload(agent, tool, cmd string) string {
	return strings.NewReplacer("TOOL", tool, "CMD", cmd).Replace(templates[agent])
}

func TestDecodeTemplates(t *testing.T) {
	t.Parallel()
	for _, agent := range Names() {
		t.Run(agent, func(t *testing.T) {
			t.Parallel()
			call, err := Decode(agent, strings.NewReader(payload(agent, `"Bash"`, `"ls -la"`)))
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]any{"command": "ls -la"}
			if call.Tool != "Bash" || !reflect.DeepEqual(call.Input, want) || call.Cwd != "/p" {
				t.Errorf("call = %+v", call)
			}
		})
	}
}

func TestDecodeBad(t *testing.T) {
	t.Parallel()
	type bad struct {
		name    string
		payload string
		want    error
	}
	huge := `{"x":"` + strings.Repeat("a", MaxPayload) + `"}`
	for _, agent := range Names() {
		cases := []bad{
			{"empty", ``, ErrMalformed},
			{"truncated", `{"a":`, ErrMalformed},
			{"array", `[]`, ErrMalformed},
			{"string", `"x"`, ErrMalformed},
			{"two-objects", payload(agent, `"Bash"`, `"ls"`) + `{}`, ErrMalformed},
			{"oversized", huge, ErrTooLarge},
			{"oversized-whitespace", payload(agent, `"Bash"`, `"ls"`) + strings.Repeat(" ", MaxPayload), ErrTooLarge},
			{"nul-escape", payload(agent, `"Bash"`, `"ls\u0000 -la"`), ErrMalformed},
			{"nul-escape-in-key", strings.Replace(payload(agent, `"Bash"`, `"ls"`), `"command"`, `"com\u0000mand"`, 1), ErrMalformed},
			{"invalid-utf8", payload(agent, `"Bash"`, "\"ls \xff\""), ErrMalformed},
			{"lone-high-surrogate", payload(agent, `"Bash"`, `"ls \ud800"`), ErrMalformed},
			{"lone-low-surrogate", payload(agent, `"Bash"`, `"ls \udc00x"`), ErrMalformed},
			{"reversed-surrogates", payload(agent, `"Bash"`, `"\udc00\ud800"`), ErrMalformed},
			{"duplicate-key", strings.Replace(payload(agent, `"Bash"`, `"ls"`), `{"command":"ls"}`, `{"command":"ls","command":"rm -rf /"}`, 1), ErrMalformed},
			{"duplicate-key-escaped", strings.Replace(payload(agent, `"Bash"`, `"ls"`), `{"command":"ls"}`, `{"command":"ls","comm\u0061nd":"rm -rf /"}`, 1), ErrMalformed},
			{"duplicate-top-level-key", strings.Replace(payload(agent, `"Bash"`, `"ls"`), `{`, `{"cwd":"/elsewhere",`, 1), ErrMalformed},
			{"missing-tool", payload(agent, `null`, `"ls"`), ErrMalformed},
			{"empty-tool", payload(agent, `""`, `"ls"`), ErrMalformed},
			{"numeric-tool", payload(agent, `1`, `"ls"`), ErrMalformed},
			{"control-in-tool", payload(agent, `"Ba\nsh"`, `"ls"`), ErrMalformed},
			{"relative-cwd", strings.Replace(payload(agent, `"Bash"`, `"ls"`), `"/p"`, `"p"`, 1), ErrMalformed},
			{"numeric-cwd", strings.Replace(payload(agent, `"Bash"`, `"ls"`), `"/p"`, `7`, 1), ErrMalformed},
			{"deep", payload(agent, `"Bash"`, strings.Repeat("[", maxDepth+2)+strings.Repeat("]", maxDepth+2)), ErrMalformed},
			{"huge-number", payload(agent, `"Bash"`, `1e999`), ErrMalformed},
		}
		switch agent {
		case Copilot:
			cases = append(cases,
				bad{"args-array", `{"sessionId":"s","cwd":"/p","toolName":"bash","toolArgs":[1]}`, ErrMalformed},
				bad{"args-bad-json-string", `{"sessionId":"s","cwd":"/p","toolName":"bash","toolArgs":"{\"command\":"}`, ErrMalformed},
				bad{"args-empty-string", `{"sessionId":"s","cwd":"/p","toolName":"bash","toolArgs":""}`, ErrMalformed},
				bad{"args-string-with-nul", `{"sessionId":"s","cwd":"/p","toolName":"bash","toolArgs":"{\"command\":\"ls\\u0000\"}"}`, ErrMalformed},
				bad{"args-string-dup", `{"sessionId":"s","cwd":"/p","toolName":"bash","toolArgs":"{\"command\":\"ls\",\"command\":\"rm\"}"}`, ErrMalformed},
				bad{"session-event", `{"sessionId":"s","timestamp":1,"cwd":"/p","hookEventName":"sessionStart","source":"startup"}`, ErrUnsupportedEvent},
				bad{"pascal-session-start", `{"hook_event_name":"SessionStart","session_id":"s","timestamp":"2026-11-30T10:39:52.663Z","cwd":"/p","source":"new"}`, ErrUnsupportedEvent},
				bad{"claude-payload", payloadFor(Claude), ErrAgentMismatch},
			)
		case Cursor:
			cases = append(cases,
				bad{"docs-sample-without-common-fields", `{"tool_name":"Shell","tool_input":{"command":"npm install","working_directory":"/project"},"tool_use_id":"abc123","cwd":"/project"}`, ErrMalformed},
				bad{"mcp-input-not-json", `{"conversation_id":"c","hook_event_name":"beforeMCPExecution","tool_name":"x","tool_input":"not json"}`, ErrMalformed},
				bad{"shell-without-command", `{"conversation_id":"c","hook_event_name":"beforeShellExecution","cwd":"/p"}`, ErrMalformed},
				bad{"read-without-path", `{"conversation_id":"c","hook_event_name":"beforeReadFile"}`, ErrMalformed},
				bad{"roots-not-array", `{"conversation_id":"c","hook_event_name":"beforeReadFile","file_path":"/p/a","workspace_roots":"/p"}`, ErrMalformed},
				bad{"roots-relative", `{"conversation_id":"c","hook_event_name":"beforeReadFile","file_path":"/p/a","workspace_roots":["p"]}`, ErrMalformed},
				bad{"prompt-event", `{"conversation_id":"c","hook_event_name":"beforeSubmitPrompt","prompt":"hi"}`, ErrUnsupportedEvent},
				bad{"codex-payload", payloadFor(Codex), ErrAgentMismatch},
			)
		case Claude:
			cases = append(cases,
				bad{"session-start", `{"session_id":"s","transcript_path":"/t","cwd":"/p","hook_event_name":"SessionStart","source":"startup"}`, ErrUnsupportedEvent},
				bad{"no-event", `{"session_id":"s","transcript_path":"/t","cwd":"/p","tool_name":"Bash"}`, ErrMalformed},
				bad{"input-array", `{"session_id":"s","transcript_path":"/t","cwd":"/p","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":["ls"]}`, ErrMalformed},
				bad{"input-string", `{"session_id":"s","transcript_path":"/t","cwd":"/p","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":"ls"}`, ErrMalformed},
				bad{"codex-payload", payloadFor(Codex), ErrAgentMismatch},
				bad{"copilot-camel", payloadFor(Copilot), ErrAgentMismatch},
				bad{"copilot-pascal", `{"hook_event_name":"PreToolUse","session_id":"s","timestamp":"2026-11-30T10:39:52.663Z","cwd":"/p","tool_name":"Bash","tool_input":{"command":"ls"}}`, ErrAgentMismatch},
				bad{"gemini-payload", payloadFor(Gemini), ErrAgentMismatch},
				bad{"cursor-payload", payloadFor(Cursor), ErrAgentMismatch},
			)
		case Codex:
			cases = append(cases,
				bad{"stop-event", `{"session_id":"s","turn_id":"t","model":"m","cwd":"/p","hook_event_name":"Stop"}`, ErrUnsupportedEvent},
				bad{"claude-payload", payloadFor(Claude), ErrAgentMismatch},
			)
		case Gemini:
			cases = append(cases,
				bad{"before-model", `{"session_id":"s","cwd":"/p","hook_event_name":"BeforeModel"}`, ErrUnsupportedEvent},
				bad{"claude-payload", payloadFor(Claude), ErrAgentMismatch},
			)
		}
		for _, tc := range cases {
			t.Run(agent+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				call, err := Decode(agent, strings.NewReader(tc.payload))
				if !errors.Is(err, tc.want) {
					t.Fatalf("err = %v, want %v", err, tc.want)
				}
				if !reflect.DeepEqual(call, rules.Call{}) {
					t.Errorf("call = %+v, want the zero Call", call)
				}
				if msg := err.Error(); msg != strings.ToLower(msg[:1])+msg[1:] {
					t.Errorf("error %q starts with a capital", msg)
				}
			})
		}
	}
}

func payloadFor(agent string) string { return payload(agent, `"Bash"`, `"ls"`) }

func TestDecodeUnknownAgent(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"", "Claude", "windsurf", "claude "} {
		if _, err := Decode(name, strings.NewReader(payloadFor(Claude))); !errors.Is(err, ErrUnknownAgent) {
			t.Errorf("Decode(%q) err = %v, want ErrUnknownAgent", name, err)
		}
	}
}

func TestDecodeReadError(t *testing.T) {
	t.Parallel()
	r := iotest.ErrReader(errors.New("boom"))
	if _, err := Decode(Claude, r); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Errorf("err = %v, want the read error wrapped", err)
	}
}

func TestDecodeInputs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, agent, payload string
		tool                 string
		input                map[string]any
		workspaces           []string
	}{
		{
			name: "copilot-string-args", agent: Copilot,
			payload: `{"sessionId":"s","cwd":"/p","toolName":"bash","toolArgs":"{\"command\":\"ls\"}"}`,
			tool:    "bash", input: map[string]any{"command": "ls"}, workspaces: []string{"/p"},
		},
		{
			name: "copilot-no-args", agent: Copilot,
			payload: `{"sessionId":"s","cwd":"/p","toolName":"task_complete"}`,
			tool:    "task_complete", workspaces: []string{"/p"},
		},
		{
			name: "cursor-mcp-is-prefixed", agent: Cursor,
			payload: `{"conversation_id":"c","hook_event_name":"beforeMCPExecution","tool_name":"Read","tool_input":"{\"path\":\"/etc/passwd\"}","command":"npx srv"}`,
			tool:    "MCP:Read", input: map[string]any{"path": "/etc/passwd"},
		},
		{
			name: "cursor-shell", agent: Cursor,
			payload: `{"conversation_id":"c","hook_event_name":"beforeShellExecution","command":"ls","cwd":"/w/sub","workspace_roots":["/w","/","/x/../y"]}`,
			tool:    "Shell", input: map[string]any{"command": "ls"}, workspaces: []string{"/w"},
		},
		{
			name: "root-cwd-gives-no-workspace", agent: Claude,
			payload: strings.Replace(payloadFor(Claude), `"/p"`, `"/"`, 1),
			tool:    "Bash", input: map[string]any{"command": "ls"},
		},
		{
			name: "unclean-cwd-gives-no-workspace", agent: Codex,
			payload: strings.Replace(payloadFor(Codex), `"/p"`, `"/p/../etc"`, 1),
			tool:    "Bash", input: map[string]any{"command": "ls"},
		},
		{
			name: "surrogate-pair-is-fine", agent: Gemini,
			payload: payload(Gemini, `"run_shell_command"`, `"echo \ud83d\ude00"`),
			tool:    "run_shell_command", input: map[string]any{"command": "echo 😀"}, workspaces: []string{"/p"},
		},
		{
			name: "escaped-backslash-u-is-not-an-escape", agent: Claude,
			payload: payload(Claude, `"Bash"`, `"echo \\u0000"`),
			tool:    "Bash", input: map[string]any{"command": `echo \u0000`}, workspaces: []string{"/p"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			call, err := Decode(tc.agent, strings.NewReader(tc.payload))
			if err != nil {
				t.Fatal(err)
			}
			if call.Tool != tc.tool || !reflect.DeepEqual(call.Input, tc.input) || !reflect.DeepEqual(call.Workspaces, tc.workspaces) {
				t.Errorf("call = %+v\nwant tool %q input %v workspaces %v", call, tc.tool, tc.input, tc.workspaces)
			}
		})
	}
}

func TestDecodeEvent(t *testing.T) {
	t.Parallel()
	camel := `{"sessionId":"s","timestamp":1,"cwd":"/p","toolName":"bash","toolArgs":{"command":"ls"}}`
	for _, tc := range []struct {
		name, agent, event, payload string
		phase                       rules.Phase
		want                        error
	}{
		{"copilot-camel-inferred", Copilot, "", camel, rules.PreTool, nil},
		{"copilot-camel-permission", Copilot, "permissionRequest", camel, rules.PermissionAsk, nil},
		{"copilot-camel-pre", Copilot, "preToolUse", camel, rules.PreTool, nil},
		{"copilot-camel-unsupported", Copilot, "sessionStart", camel, "", ErrUnsupportedEvent},
		{"claude-matching", Claude, "PreToolUse", payloadFor(Claude), rules.PreTool, nil},
		{"claude-other-event", Claude, "PermissionRequest", payloadFor(Claude), "", ErrMalformed},
		{"cursor-other-event", Cursor, "beforeShellExecution", payloadFor(Cursor), "", ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			call, err := DecodeEvent(tc.agent, tc.event, strings.NewReader(tc.payload))
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if call.Phase != tc.phase {
				t.Errorf("phase = %q, want %q", call.Phase, tc.phase)
			}
		})
	}
}

func TestParseObject(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in string
		ok       bool
	}{
		{"same-key-in-sibling-objects", `{"a":[{"k":1},{"k":2}],"b":{"k":3}}`, true},
		{"same-key-at-two-depths", `{"k":{"k":{"k":1}}}`, true},
		{"key-equal-to-a-value", `{"a":"b","b":"a"}`, true},
		{"escaped-quote-in-key", `{"a\"b":1,"a\"c":2}`, true},
		{"duplicate-after-nested", `{"a":{"x":[1,{"y":2}]},"a":1}`, false},
		{"duplicate-in-array-object", `{"a":[{"k":1,"k":2}]}`, false},
		{"surrogate-pair", `{"a":"\ud83d\ude00"}`, true},
		{"high-then-high", `{"a":"\ud83d\ud83d"}`, false},
		{"high-at-end", `{"a":"x\ud83d"}`, false},
		{"max-depth", `{"a":` + strings.Repeat("[", maxDepth-1) + strings.Repeat("]", maxDepth-1) + `}`, true},
		{"too-deep", `{"a":` + strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth) + `}`, false},
		{"trailing-garbage", `{} x`, false},
		{"whitespace-around", " \n{}\t ", true},
		{"null", `null`, false},
		// Past 32 keys an object's keys move to a map.
		{"many-keys", manyKeys(100, ""), true},
		{"many-keys-duplicate-of-an-early-one", manyKeys(100, `,"k3":0`), false},
		{"many-keys-duplicate-of-a-late-one", manyKeys(100, `,"k99":0`), false},
		{"many-keys-duplicate-escaped", manyKeys(40, `,"k\u00331":0`), false},
		{"many-keys-then-sibling", `{"a":` + manyKeys(40, "") + `,"b":{"k1":1},"k1":2}`, true},
		{"many-keys-nested-then-duplicate", `{"a":` + manyKeys(40, "") + `,"b":1,"a":2}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := parseObject([]byte(tc.in))
			if (err == nil) != tc.ok {
				t.Errorf("parseObject(%s) err = %v, want ok=%v", tc.in, err, tc.ok)
			}
			if err != nil && !errors.Is(err, ErrMalformed) {
				t.Errorf("err = %v, want ErrMalformed", err)
			}
		})
	}
}

// manyKeys is an object with keys k0 … k(n-1), then extra.
func manyKeys(n int, extra string) string {
	var b strings.Builder
	b.WriteString("{")
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"k%d":%d`, i, i)
	}
	return b.String() + extra + "}"
}
