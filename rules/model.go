package rules

import (
	"fmt"
)

// Call is one tool call an agent is about to make, decoded from its hook
// payload into the shape every agent shares.
type Call struct {
	// Agent is the agent that sent the call: claude, codex, gemini,
	// copilot or cursor.
	Agent string `json:"agent"`
	// Event is the hook event as the agent named it (PreToolUse,
	// BeforeTool, preToolUse, PermissionRequest, …).
	Event string `json:"event,omitempty"`
	// Phase is what the event means to narrowd, independent of agent.
	Phase Phase `json:"phase"`
	// Session identifies the agent session, for history. Empty when the
	// agent sent none.
	Session string `json:"session,omitempty"`
	// Cwd is the working directory of the call, absolute.
	Cwd string `json:"cwd,omitempty"`
	// Workspaces are the roots a path must stay under to count as inside:
	// the agent's project dir, plus roots the profile or flags declare.
	Workspaces []string `json:"workspaces,omitempty"`
	// Tool is the tool name exactly as the agent sent it.
	Tool string `json:"tool"`
	// Input is the tool's arguments object as the agent sent it.
	Input map[string]any `json:"input,omitempty"`
	// Response is the tool's result, present only on post-tool events.
	Response any `json:"response,omitempty"`
	// ID is the agent's id for this tool use, when it sends one.
	ID string `json:"id,omitempty"`
	// Mode is the agent's permission mode, recorded as host_asserted.
	Mode string `json:"mode,omitempty"`
}

// Phase is where in a tool call's life a hook event fires.
type Phase string

// The phases narrowd handles.
const (
	// PreTool fires before the call runs; narrowd decides here.
	PreTool Phase = "pre_tool"
	// PermissionAsk fires only when the agent is about to ask a person.
	PermissionAsk Phase = "permission_request"
	// PostTool fires after the call ran; it feeds session history.
	PostTool Phase = "post_tool"
)

// Outcome is what a profile decides for a call.
type Outcome uint8

// Outcomes from least to most restrictive. The order is the precedence
// when several rules match: the most restrictive wins.
const (
	Allow Outcome = iota
	Sandbox
	Ask
	Deny
)

var outcomeNames = [...]string{"allow", "sandbox", "ask", "deny"}

func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return fmt.Sprintf("outcome(%d)", uint8(o))
}

// ParseOutcome reads allow, sandbox, ask or deny.
func ParseOutcome(s string) (Outcome, error) {
	for i, n := range outcomeNames {
		if n == s {
			return Outcome(i), nil
		}
	}
	return 0, fmt.Errorf("unknown outcome %q (want allow, ask, deny or sandbox)", s)
}

// MarshalText writes the outcome's name.
func (o Outcome) MarshalText() ([]byte, error) { return []byte(o.String()), nil }

// UnmarshalText reads an outcome's name strictly.
func (o *Outcome) UnmarshalText(b []byte) error {
	v, err := ParseOutcome(string(b))
	if err != nil {
		return err
	}
	*o = v
	return nil
}

// Decision is the profile's answer for one call.
type Decision struct {
	Outcome Outcome `json:"outcome"`
	// Rule is the id of the rule that decided, or a fixed id such as
	// "no-match" or "error-*" for decisions no profile rule made.
	Rule string `json:"rule"`
	// Reason is written for the agent and the person, never internal
	// error text.
	Reason string `json:"reason"`
}

// Strength is how far a piece of evidence may be trusted (spec §5).
type Strength uint8

// Strengths. Only Proven and Established may relax a label.
const (
	Proven Strength = iota
	Established
	PointInTime
	Guess
	HostAsserted
)

var strengthNames = [...]string{"proven", "established", "point_in_time", "guess", "host_asserted"}

func (s Strength) String() string {
	if int(s) < len(strengthNames) {
		return strengthNames[s]
	}
	return fmt.Sprintf("strength(%d)", uint8(s))
}

// MayRelax reports whether evidence of this strength may make a call
// count as less risky (spec §5 rules 2 and 4).
func (s Strength) MayRelax() bool { return s == Proven || s == Established }

// MarshalText writes the strength's name.
func (s Strength) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a strength's name strictly.
func (s *Strength) UnmarshalText(b []byte) error {
	for i, n := range strengthNames {
		if n == string(b) {
			*s = Strength(i)
			return nil
		}
	}
	return fmt.Errorf("unknown strength %q", b)
}

// Evidence is one claim about one call, with how far it may be trusted.
type Evidence struct {
	// Kind is one of the kinds narrowd emits ([EvidenceKinds]), such as
	// "path-inside" or "sensitive-name". Users match on it in profiles.
	Kind     EvidenceKind `json:"kind"`
	Strength Strength     `json:"strength"`
	// Subject is what the claim is about: a path, a command, a URL.
	Subject string `json:"subject"`
	// Detail explains the claim for a person.
	Detail string `json:"detail"`
	// Effect is what the claim did to the labels: "mutation<=read",
	// "raise:scope", or "none" for evidence that is only recorded.
	Effect Effect `json:"effect"`
}

// Verdict is the full answer for one call: the public JSON schema of
// `narrowd check`. Keep it stable.
type Verdict struct {
	Agent string `json:"agent"`
	Tool  string `json:"tool"`
	Key   string `json:"key"`
	// Ceiling is the tool's labels from the catalog; nil when the tool is
	// unlabelled (unknown, spec §1 and seed 001).
	Ceiling *Labels `json:"ceiling"`
	// Narrowed is the ceiling after proven evidence; nil when unlabelled.
	Narrowed *Labels `json:"narrowed"`
	// Evidence is never nil in a verdict the engine returns, so the
	// JSON is always a list.
	Evidence       []Evidence `json:"evidence"`
	Decision       Decision   `json:"decision"`
	CeilingOutcome Outcome    `json:"ceiling_outcome"`
	RiskClass      string     `json:"risk_class"`
}

// Session is what narrowd knows of the earlier calls in the same agent
// session. The zero value is an unknown session, which never counts as
// clean.
type Session struct {
	// Known reports that narrowd holds this session's history. When
	// false, every question about the past answers with the worst case.
	Known bool `json:"known"`
	// Called holds the seed 003 labels (reads_untrusted, external_effect,
	// destructive, moves_money, reads_sensitive) carried by any call that
	// ran earlier in the session.
	Called map[string]bool `json:"called,omitempty"`
	// Tools are the keys of the calls that ran, oldest first.
	Tools []string `json:"tools,omitempty"`
}

// Input is everything a profile may read about one call.
type Input struct {
	Call *Call
	// Key is the catalog key of the tool, such as "claude/Bash".
	Key string
	// Ceiling and Narrowed are nil when the tool is unlabelled.
	Ceiling  *Labels
	Narrowed *Labels
	Evidence []Evidence
	Session  Session
	// Command is set only for a shell call proven to run exactly one
	// program with literal words (see [ShellCommand]); nil otherwise.
	Command *ShellCommand
}

// ShellCommand is a shell call that narrowd proved runs exactly one
// program and nothing else: no pipeline, list, substitution, loop or
// function; no wrapper (sudo, env, command, xargs…) between the shell and
// the program; no assignment before it; no redirect but the harmless
// ones (to or from the null device, descriptor duplication); every word
// literal, so Argv is exactly what the program receives; and a program
// form the command knowledge table knows, with every flag it was given.
// It is what command_is and command_exactly match, and what call.program
// and call.argv read. The engine fills it from its analysis of the shell
// text; rules never parses shell itself.
type ShellCommand struct {
	// Argv is the program's name as written (argv[0]) and its
	// arguments.
	Argv []string
}
