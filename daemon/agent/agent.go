package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/narrowd/narrowd/rules"
)

// MaxPayload is the largest hook payload Decode accepts, in bytes. Claude's
// Write and Cursor's beforeReadFile carry whole file contents, and post-tool
// events carry tool output, so 1 MiB would block ordinary large writes;
// 4 MiB keeps those working while bounding what one call may make the daemon
// hold (the decoded tree is a small multiple of the input).
const MaxPayload = 4 << 20

const (
	// maxDepth bounds JSON nesting; tool inputs are shallow.
	maxDepth = 64
	// maxReason bounds the reason narrowd writes into a reply, in bytes.
	// Claude caps hook output strings at 10 000 characters.
	maxReason = 2000
	// approveHint ends every reason for an ask that had to become a deny.
	approveHint = " — to allow it, run the command yourself or add a rule to your narrowd profile"
)

// The agents narrowd speaks to.
const (
	Claude  = "claude"
	Codex   = "codex"
	Gemini  = "gemini"
	Copilot = "copilot"
	Cursor  = "cursor"
)

// Errors Decode and Detect return, wrapped with context. Use [errors.Is].
var (
	// ErrTooLarge means the payload is longer than [MaxPayload].
	ErrTooLarge = errors.New("hook payload too large")
	// ErrUnknownAgent means the agent name is not one of [Names], or the
	// payload has no shape Detect knows.
	ErrUnknownAgent = errors.New("unknown agent")
	// ErrMalformed means the payload is not a well-formed hook payload:
	// bad JSON, bad UTF-8, NUL characters, duplicate keys, wrong field
	// types or a missing required field such as the tool name.
	ErrMalformed = errors.New("malformed hook payload")
	// ErrUnsupportedEvent means the payload is well formed but its hook
	// event is not one narrowd judges (SessionStart, UserPromptSubmit, …).
	// The event guards nothing narrowd decides, but the caller cannot be
	// sure of that for an event it does not know, so the safe answer is
	// still [Fail].
	ErrUnsupportedEvent = errors.New("unsupported hook event")
	// ErrAgentMismatch means the payload carries fields only another agent
	// sends (for example Copilot running a hook configured for Claude).
	// The reply would be in the wrong dialect and might not block, so the
	// payload is refused; [Detect] names the agent that sent it.
	ErrAgentMismatch = errors.New("payload is from another agent")
)

// Names returns the agents narrowd speaks to, in a fixed order.
func Names() []string {
	return []string{Claude, Codex, Gemini, Copilot, Cursor}
}

// Reply is what narrowd answers one hook call with: for a command hook the
// shim prints Stdout, writes Stderr and exits with ExitCode; for Claude's
// http hook the daemon sends Stdout as a 200 body and ignores the rest.
type Reply struct {
	Stdout   []byte `json:"stdout"`
	Stderr   string `json:"stderr"`
	ExitCode int    `json:"exit_code"`
}

// Options describe the agent session a reply is for.
type Options struct {
	// Interactive reports that a person can answer the agent's prompts
	// (not a headless -p/exec run). Only then is ask sent as ask, and
	// only to agents that are proven to ask rather than run or hang.
	Interactive bool
	// Rewrite is the command narrowd runs in place of a call whose
	// outcome is sandbox (`narrowd exec --ticket T`). Where the agent's
	// input rewrite is proven, a sandbox outcome becomes an allow of the
	// rewritten call; elsewhere a deny that tells the agent to run exactly
	// this. Empty: a sandbox outcome blocks.
	Rewrite string
}

// Detect names the agent that sent payload from its shape
// (real-clients.md §5, hooks.md §8.6): Copilot sends camelCase
// toolName/toolArgs, Cursor conversation_id or cursor_version, Gemini its
// own event names (BeforeTool, AfterTool, …), Codex turn_id, Copilot's
// PascalCase events an ISO timestamp and no transcript_path, and Claude the
// rest of the hook_event_name payloads. It applies the same strict checks
// as Decode.
func Detect(payload []byte) (string, error) {
	if len(payload) > MaxPayload {
		return "", fmt.Errorf("%w: more than %d bytes", ErrTooLarge, MaxPayload)
	}
	obj, err := parseObject(payload)
	if err != nil {
		return "", err
	}
	return detect(obj)
}

func detect(obj fields) (string, error) {
	has := func(k string) bool { _, ok := obj[k]; return ok }
	event, _ := obj["hook_event_name"].(string)
	switch {
	case has("toolName") || has("toolArgs") || has("toolResult") || has("sessionId"):
		return Copilot, nil
	case has("cursor_version") || has("conversation_id"):
		return Cursor, nil
	case isGeminiEvent(event):
		return Gemini, nil
	case has("turn_id"):
		return Codex, nil
	case event != "":
		_, ts := obj["timestamp"].(string)
		if ts && !has("transcript_path") && !has("prompt_id") {
			return Copilot, nil
		}
		return Claude, nil
	}
	return "", fmt.Errorf("%w: payload has no known agent's shape", ErrUnknownAgent)
}

// Decode reads one hook payload from r, as the named agent sends it, and
// returns the call it describes. It reads at most [MaxPayload]+1 bytes.
// On any error the returned Call is the zero value.
func Decode(agent string, r io.Reader) (rules.Call, error) {
	return DecodeEvent(agent, "", r)
}

// DecodeEvent is [Decode] for a hook whose configured event is known, such
// as from the hook command line. Copilot's camelCase payloads name no
// event, and its permissionRequest payload cannot be told from a
// preToolUse one by its fields, so for them event decides; a reply
// encoded for the wrong one of the two might not block. Where the payload
// names its event, it must be event (compared without case: Copilot's
// camelCase and PascalCase dialects spell the same events), or Decode
// fails with ErrMalformed. An empty event is the same as Decode.
func DecodeEvent(agent, event string, r io.Reader) (rules.Call, error) {
	if _, ok := decoderFor(agent); !ok {
		return rules.Call{}, fmt.Errorf("%w %q (want one of %s)", ErrUnknownAgent, agent, strings.Join(Names(), ", "))
	}
	b, err := io.ReadAll(io.LimitReader(r, MaxPayload+1))
	if err != nil {
		return rules.Call{}, fmt.Errorf("failed to read %s hook payload: %w", agent, err)
	}
	return DecodeEventBytes(agent, event, b)
}

// DecodeEventBytes is [DecodeEvent] for a payload already in memory (the
// daemon reads each request body once). It keeps no reference to b.
func DecodeEventBytes(agent, event string, b []byte) (rules.Call, error) {
	dec, ok := decoderFor(agent)
	if !ok {
		return rules.Call{}, fmt.Errorf("%w %q (want one of %s)", ErrUnknownAgent, agent, strings.Join(Names(), ", "))
	}
	if len(b) > MaxPayload {
		return rules.Call{}, fmt.Errorf("%s: %w: more than %d bytes", agent, ErrTooLarge, MaxPayload)
	}
	obj, err := parseObject(b)
	if err != nil {
		return rules.Call{}, fmt.Errorf("%s: %w", agent, err)
	}
	if from, err := detect(obj); err == nil && from != agent {
		return rules.Call{}, fmt.Errorf("%s: %w: it has %s's shape", agent, ErrAgentMismatch, from)
	}
	call, err := dec(obj, event)
	if err != nil {
		return rules.Call{}, fmt.Errorf("%s: %w", agent, err)
	}
	if event != "" && !strings.EqualFold(call.Event, event) {
		return rules.Call{}, fmt.Errorf("%s: %w: payload is for %q, hook is configured for %q", agent, ErrMalformed, call.Event, event)
	}
	call.Agent = agent
	return call, nil
}

func decoderFor(agent string) (func(f fields, event string) (rules.Call, error), bool) {
	switch agent {
	case Claude:
		return decodeClaude, true
	case Codex:
		return decodeCodex, true
	case Gemini:
		return decodeGemini, true
	case Copilot:
		return decodeCopilot, true
	case Cursor:
		return decodeCursor, true
	}
	return nil, false
}

// Encode turns a decision into the reply the agent obeys. Any outcome but
// allow becomes a reply that blocks the call in that agent (or, for ask,
// one that makes the agent ask a person, only where opt.Interactive and
// the agent is proven to ask). Post-tool events get [Abstain]: the tool
// already ran. An unknown agent gets a reply that blocks in every agent.
func Encode(agent string, call rules.Call, d rules.Decision, opt Options) Reply {
	if call.Phase == rules.PostTool {
		return Abstain(agent, call)
	}
	if d.Outcome == rules.Sandbox && opt.Rewrite != "" {
		return encodeSandbox(agent, call, d, opt.Rewrite)
	}
	switch agent {
	case Claude:
		return encodeClaude(call, d, opt)
	case Codex:
		return encodeCodex(call, d, opt)
	case Gemini:
		return encodeGemini(call, d, opt)
	case Copilot:
		return encodeCopilot(call, d, opt)
	case Cursor:
		return encodeCursor(call, d, opt)
	}
	return blockAnywhere(denyReason(d))
}

// Abstain is the "no opinion" reply: exit 0 and nothing on stdout (for
// Claude's http hook, an empty 200 body). The agent's own permission flow
// then decides. Use it only where that flow is safe, such as for calls
// narrowd would allow, or at a permission-request event before a person
// is asked. Cursor gets an empty JSON object instead: narrowd installs its
// Cursor hooks failClosed, and Cursor counts output that is not JSON as a
// failure there.
func Abstain(agent string, _ rules.Call) Reply {
	if agent == Cursor {
		return Reply{Stdout: []byte("{}\n")}
	}
	return Reply{}
}

// Fail is the reply for an internal failure (a payload that did not
// decode, a timeout, a broken engine): it blocks the call in that agent,
// with reason shown to the agent and person. reason must be written for
// them, never internal error text. call may be the zero value when the
// payload did not decode; the reply then blocks for whatever event fired
// wherever the agent's protocol allows it.
func Fail(agent string, call rules.Call, reason string) Reply {
	why := clean(reason)
	if why == "" {
		why = "internal error"
	}
	r := "narrowd: could not check this call: " + why
	switch agent {
	case Claude:
		return failClaude(call, r)
	case Codex:
		return failCodex(call, r)
	case Cursor:
		return failCursor(call, r)
	case Gemini, Copilot:
		// Exit 2 with text on stderr blocks in both (real-clients.md §2–3,
		// and Copilot's permissionRequest documents exit 2 as deny);
		// Gemini reads stdout first, so stdout stays empty.
		return Reply{Stderr: r + "\n", ExitCode: 2}
	}
	return blockAnywhere(r)
}

// blockAnywhere blocks in every agent narrowd knows: exit 2 with stderr
// blocks Claude's and Codex's command hooks, Gemini, Copilot and Cursor;
// the legacy top-level block decision blocks Claude's http hook, Gemini and
// Codex if they read stdout first (real-clients.md §5).
func blockAnywhere(reason string) Reply {
	out := mustJSON(struct {
		Decision string `json:"decision"`
		Reason   string `json:"reason"`
	}{"block", reason})
	return Reply{Stdout: out, Stderr: reason + "\n", ExitCode: 2}
}

// Reasons. Every reason starts with "narrowd" so that no agent can mistake
// it for JSON (Gemini parses stderr as JSON when it can) and so a person
// knows who decided.

func ruleSuffix(d rules.Decision) string {
	if d.Rule == "" {
		return ""
	}
	return " (rule " + clean(d.Rule) + ")"
}

func because(d rules.Decision) string {
	r := clean(d.Reason)
	if r == "" {
		r = "no reason given"
	}
	return r + ruleSuffix(d)
}

// denyReason is the reason for any outcome that blocks: deny, sandbox, or
// an ask the agent cannot put to a person.
func denyReason(d rules.Decision) string {
	switch d.Outcome {
	case rules.Allow:
		return "narrowd: allowed: " + because(d)
	case rules.Ask:
		return "narrowd: needs approval: " + because(d) + approveHint
	case rules.Sandbox:
		return "narrowd: allowed only inside narrowd's sandbox: " + because(d) +
			" — to run it, use narrowd exec or add a rule to your narrowd profile"
	}
	return "narrowd: denied: " + because(d)
}

// askReason is the reason shown with a real ask.
func askReason(d rules.Decision) string { return "narrowd: " + because(d) }

// allowReason is the reason shown with an allow.
func allowReason(d rules.Decision) string { return "narrowd: allowed: " + because(d) }

// clean makes text safe for a reply: valid UTF-8, no control characters
// (they could drive the person's terminal through stderr), at most
// maxReason bytes.
func clean(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || (r >= 0x7f && r < 0xa0) || r == '\u2028' || r == '\u2029' {
			return ' '
		}
		return r
	}, s)
	s = strings.TrimSpace(s)
	if len(s) > maxReason {
		cut := maxReason
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// mustJSON marshals a reply struct. The structs hold only strings and
// nested structs, so it cannot fail; if it ever did, the caller's reply
// would carry an empty stdout, which is why every blocking reply that
// relies on stdout is tested.
func mustJSON(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("agent: marshal reply: %v", err))
	}
	return buf.Bytes()
}

// fields is one decoded JSON object with typed accessors that turn a wrong
// type into ErrMalformed.
type fields map[string]any

// str returns the string at k; "" when absent or null.
func (f fields) str(k string) (string, error) {
	switch v := f[k].(type) {
	case nil:
		return "", nil
	case string:
		return v, nil
	}
	return "", fmt.Errorf("%w: %q is %s, want a string", ErrMalformed, k, kind(f[k]))
}

// required returns the non-empty string at k.
func (f fields) required(k string) (string, error) {
	s, err := f.str(k)
	if err != nil {
		return "", err
	}
	if s == "" {
		return "", fmt.Errorf("%w: missing %q", ErrMalformed, k)
	}
	return s, nil
}

// first returns the first of keys present (non-null) and whether one was.
func (f fields) first(keys ...string) (any, bool) {
	for _, k := range keys {
		if v, ok := f[k]; ok && v != nil {
			return v, true
		}
	}
	return nil, false
}

func kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// toolName checks a tool name: present, and free of control characters.
func toolName(f fields, k string) (string, error) {
	s, err := f.required(k)
	if err != nil {
		return "", err
	}
	if strings.IndexFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0 {
		return "", fmt.Errorf("%w: %q has control characters", ErrMalformed, k)
	}
	return s, nil
}

// input turns a tool's arguments into an object. Absent or null is no
// input; a JSON string is decoded as a JSON object with the same strict
// rules as the payload (Copilot's toolArgs, Cursor's MCP tool_input).
func input(k string, v any) (map[string]any, error) {
	switch v := v.(type) {
	case nil:
		return nil, nil
	case map[string]any:
		return v, nil
	case string:
		if strings.TrimSpace(v) == "" {
			return nil, fmt.Errorf("%w: %q is an empty string, want a JSON object", ErrMalformed, k)
		}
		obj, err := parseObject([]byte(v))
		if err != nil {
			return nil, fmt.Errorf("%q holds bad JSON: %w", k, err)
		}
		return obj, nil
	}
	return nil, fmt.Errorf("%w: %q is %s, want an object", ErrMalformed, k, kind(v))
}

// dir checks a directory the agent reports: empty, or absolute.
func dir(f fields, k string) (string, error) {
	s, err := f.str(k)
	if err != nil || s == "" {
		return "", err
	}
	if !filepath.IsAbs(s) {
		return "", fmt.Errorf("%w: %q is not an absolute path", ErrMalformed, k)
	}
	return s, nil
}

// workspace returns the workspace roots an agent's project dir gives: none
// for an empty, unclean or root directory, which would put everything
// inside. The root comes from the payload, so it is host_asserted; the
// daemon may add the roots its profile declares.
func workspace(d string) []string {
	if d == "" || filepath.Clean(d) != d || d == "/" {
		return nil
	}
	return []string{d}
}

// parseObject decodes b strictly into one JSON object: valid UTF-8, no
// unpaired surrogate or NUL escapes, no duplicate keys, nesting at most
// maxDepth, nothing after the object.
func parseObject(b []byte) (fields, error) {
	if !utf8.Valid(b) {
		return nil, fmt.Errorf("%w: not valid UTF-8", ErrMalformed)
	}
	if obj, ok := parseFast(b); ok {
		return obj, nil
	}
	// Refused (or not taken) by the fast path: encoding/json and the
	// strict walk give the value or, as always, the error.
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w: want a JSON object, not %s", ErrMalformed, kind(v))
	}
	if err := checkStrict(b); err != nil {
		return nil, err
	}
	return obj, nil
}

// checkStrict walks JSON that encoding/json has already accepted and
// rejects what it lets through: duplicate object keys (the last one wins
// in Go but not in every agent's parser), nesting deeper than maxDepth,
// \u0000 (a NUL in a string) and unpaired UTF-16 surrogate escapes, which
// encoding/json silently turns into U+FFFD, so narrowd would judge a
// different string than the agent runs.
func checkStrict(b []byte) error {
	// Each open object's keys are kept in one shared list (a nested
	// object's after its parent's, dropped when it closes) and searched
	// in place; an object with many keys switches to a map, so that a
	// payload of many keys costs no quadratic time. Unescaped keys are
	// slices of b: most payloads check without allocating.
	type frame struct {
		object, wantKey bool
		start           int
		keys            map[string]struct{}
	}
	const maxLinearKeys = 32
	var stackBuf [8]frame
	var keysBuf [32][]byte
	stack, keys := stackBuf[:0], keysBuf[:0]
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '{', '[':
			if len(stack) == maxDepth {
				return fmt.Errorf("%w: nested deeper than %d", ErrMalformed, maxDepth)
			}
			stack = append(stack, frame{object: b[i] == '{', wantKey: b[i] == '{', start: len(keys)})
		case '}', ']':
			keys = keys[:stack[len(stack)-1].start]
			stack = stack[:len(stack)-1]
		case ',':
			if top := len(stack) - 1; stack[top].object {
				stack[top].wantKey = true
			}
		case '"':
			end, escaped, err := scanString(b, i)
			if err != nil {
				return err
			}
			if top := len(stack) - 1; top >= 0 && stack[top].wantKey {
				f := &stack[top]
				f.wantKey = false
				k := b[i+1 : end]
				if escaped {
					var dk string
					if err := json.Unmarshal(b[i:end+1], &dk); err != nil {
						return fmt.Errorf("%w: %v", ErrMalformed, err)
					}
					k = []byte(dk)
				}
				if f.keys != nil {
					if _, dup := f.keys[string(k)]; dup {
						return fmt.Errorf("%w: duplicate key %q", ErrMalformed, k)
					}
					f.keys[string(k)] = struct{}{}
				} else {
					for _, seen := range keys[f.start:] {
						if bytes.Equal(seen, k) {
							return fmt.Errorf("%w: duplicate key %q", ErrMalformed, k)
						}
					}
					keys = append(keys, k)
					if len(keys)-f.start > maxLinearKeys {
						f.keys = make(map[string]struct{}, 2*maxLinearKeys)
						for _, seen := range keys[f.start:] {
							f.keys[string(seen)] = struct{}{}
						}
						keys = keys[:f.start]
					}
				}
			}
			i = end
		}
	}
	return nil
}

// scanString returns the index of the quote closing the JSON string that
// opens at b[at], whether it holds escapes, and an error for a NUL or an
// unpaired surrogate escape. b is valid JSON.
func scanString(b []byte, at int) (end int, escaped bool, err error) {
	for i := at + 1; i < len(b); i++ {
		switch b[i] {
		case '"':
			return i, escaped, nil
		case '\\':
			escaped = true
			i++
			if b[i] != 'u' {
				continue
			}
			r, _ := hex4(b, i+1)
			i += 4
			switch {
			case r == 0:
				return 0, false, fmt.Errorf("%w: NUL character in a string", ErrMalformed)
			case r >= 0xDC00 && r <= 0xDFFF:
				return 0, false, fmt.Errorf("%w: unpaired surrogate escape in a string", ErrMalformed)
			case r >= 0xD800 && r <= 0xDBFF:
				lo, ok := rune(0), false
				if i+6 < len(b) && b[i+1] == '\\' && b[i+2] == 'u' {
					lo, ok = hex4(b, i+3)
				}
				if !ok || lo < 0xDC00 || lo > 0xDFFF {
					return 0, false, fmt.Errorf("%w: unpaired surrogate escape in a string", ErrMalformed)
				}
				i += 6
			}
		}
	}
	return 0, false, fmt.Errorf("%w: unterminated string", ErrMalformed)
}

func hex4(b []byte, at int) (rune, bool) {
	if at+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[at : at+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}
