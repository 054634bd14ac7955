package daemon

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/narrowd/narrowd/proofs"
	"github.com/narrowd/narrowd/rules"
	"github.com/narrowd/narrowd/sandbox"
	"github.com/narrowd/narrowd/sandbox/snapshot"
)

// Tickets (issue 4, linux-proofs.md §4.3). A call whose outcome is
// sandbox is answered with a rewrite (or, where the agent's rewrite is not
// proven, a deny that names the command) to `narrowd exec --ticket T`.
// The ticket binds the exact command text and working directory, lives
// only in the daemon, is single-use and expires. The wrapper claims it
// (the daemon checks the wrapper runs narrowd), builds the sandbox, and
// asks the daemon to verify it from outside; only then does the daemon
// hand the command text over. Any failure kills the ticket.

const (
	defaultTicketTTL = 60 * time.Second
	// maxTickets bounds the live tickets: a flood of sandbox calls cannot
	// grow the daemon without bound.
	maxTickets = 4096
	// claimTTL bounds how long a claimed ticket waits for its sandbox.
	claimTTL = 30 * time.Second
)

// errTicket is the reason every refused ticket gives: unknown, expired,
// used, or claimed by something that is not narrowd.
var errTicket = errors.New("no such ticket: it was never issued, was already used, or expired")

// ticket is one issued, unredeemed permission to run one command in the
// sandbox.
type ticket struct {
	id       string
	rewrite  string // the exact command the agent runs instead
	command  string
	cwd      string
	writable []string
	agent    string
	session  string
	tool     string
	toolUse  string
	callID   string // the audit id of the call that issued it
	hostSays []rules.Evidence
	ceiling  rules.Labels // the shell tool's, for the exec record
	expires  time.Time
}

// claim is a ticket a wrapper has taken, waiting for its sandbox check.
type claim struct {
	t          *ticket
	wrapperPid int
	wrapperFD  int // pidfd of the wrapper, taken when it claimed
	expires    time.Time
	// layers are the run's overlay, when its changes are kept for undo.
	layers []snapshot.Layer
}

// tickets is the daemon's ticket store.
type tickets struct {
	ttl time.Duration
	// exes are the binaries wrappers and sandboxes may run: narrowd,
	// and narrowd-exec beside it when there is one.
	exes []string
	// wrapper starts each rewrite: narrowd-exec, which starts faster,
	// or else `narrowd exec`.
	wrapper string
	socket  string
	now     func() time.Time
	// protected are the patterns the sandbox keeps read-only in each
	// writable root, own narrowd's own paths (binaries, state, audit,
	// socket, watched configuration), homeAllow the profile's additions
	// to the home allowlist: sent to the wrapper with the claim and
	// checked from outside by [sandbox.Verify].
	protected, own, homeAllow []string

	mu   sync.Mutex
	live map[string]*ticket
	// byRewrite indexes live by rewrite: every pre-tool call is looked
	// up in it, and a scan of up to maxTickets per call made the daemon's
	// every decision slower the more sandbox calls were waiting.
	byRewrite map[string]*ticket
	// byToolUse indexes live by the call that issued them (agent,
	// session, tool use id), for post-tool events; order is live in the
	// order issued, which with one ttl is the order they expire in. Both
	// spare a scan of up to maxTickets per call.
	byToolUse map[string][]*ticket
	order     []*ticket
	claims    map[string]*claim
	latched   map[string]string // agent\x00session → why rewrites stopped

	// undo keeps the changes of runs behind an overlay (ticket_undo.go);
	// nil when the daemon keeps none. runs are those released and not yet
	// reported.
	undo *snapshot.Store
	runs sandboxRuns
}

// newTickets returns the store, or nil when this daemon cannot issue
// tickets: no Landlock, no socket path a wrapper could reach, or no
// binary to point the rewrite at.
func newTickets(cfg Config) *tickets {
	if sandbox.LandlockABI() < 1 || cfg.SocketPath == "" {
		return nil
	}
	exe, err := os.Executable()
	if err != nil {
		return nil
	}
	if exe, err = filepath.EvalSymlinks(exe); err != nil {
		return nil
	}
	exes, wrapper := ticketBinaries(exe)
	protected, err := protectedPatterns()
	if err != nil {
		return nil
	}
	own := append(slices.Clone(exes), cfg.StateDir, cfg.AuditDir, filepath.Dir(cfg.SocketPath))
	own = append(own, cfg.Watch...)
	return &tickets{
		ttl: cfg.TicketTTL, exes: exes, wrapper: wrapper, socket: cfg.SocketPath, now: cfg.now,
		protected: protected, own: own, homeAllow: cfg.SandboxHomeAllow,
		live: map[string]*ticket{}, byRewrite: map[string]*ticket{}, byToolUse: map[string][]*ticket{},
		claims: map[string]*claim{}, latched: map[string]string{}, undo: undoStore(cfg),
	}
}

// protectedPatterns are the paths, relative to a workspace, that a
// sandboxed command may not change: the standing-configuration table the
// write proofs use (proofs.Standing: .git, agent settings, hooks, IDE
// tasks, CI, toolchain files, ...), files that run later outside any
// sandbox, and the sandbox's own fallback list. One table for both, so
// a write the proofs ask about is also one the sandbox refuses.
func protectedPatterns() ([]string, error) {
	base, err := sandbox.DefaultProtectedPatterns()
	if err != nil {
		return nil, err
	}
	t, err := proofs.Standing()
	if err != nil {
		return nil, err
	}
	return slices.Compact(slices.Sorted(slices.Values(append(base, t.Patterns()...)))), nil
}

// ExecBinaryName is `narrowd exec` as a binary of its own
// (cmd/narrowd-exec).
const ExecBinaryName = "narrowd-exec"

// ticketBinaries returns the binaries a wrapper and its sandbox may run
// when narrowd is exe, and the command a rewrite starts with.
func ticketBinaries(exe string) (exes []string, wrapper string) {
	if w, ok := execBeside(exe); ok {
		return []string{exe, w}, shellQuote(w)
	}
	return []string{exe}, shellQuote(exe) + " exec"
}

// execBeside returns narrowd-exec in exe's directory, its links
// resolved, when it is a regular executable file there.
func execBeside(exe string) (string, bool) {
	w, err := filepath.EvalSymlinks(filepath.Join(filepath.Dir(exe), ExecBinaryName))
	if err != nil {
		return "", false
	}
	fi, err := os.Stat(w)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return "", false
	}
	return w, true
}

func randomID() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// shellQuote quotes s for a POSIX shell, always, so the rewrite's grammar
// is fixed.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// shellCall returns the command text, working directory and ceiling of
// a call to a built-in shell tool, the directory resolved as the engine
// resolved it when it judged the call.
func (e *Engine) shellCall(call rules.Call) (command, cwd string, ceiling rules.Labels, ok bool) {
	// Only built-in shell tools: an MCP tool is never looked up by name
	// in the catalog.
	entry, found := e.catalog.Lookup(call.Agent, call.Tool)
	if !found || entry.Input.Kind != rules.InputShell {
		return "", "", ceiling, false
	}
	command, _ = call.Input[entry.Input.Field].(string)
	cwd, _, why := shellDir(entry.Input, call, e.paths)
	return command, cwd, entry.Labels, command != "" && why == "" && filepath.IsAbs(cwd)
}

// latchKey names a session for the latch.
func latchKey(agent, session string) string { return agent + "\x00" + session }

// toolUseKey names the call a ticket was issued for.
func toolUseKey(agent, session, toolUse string) string {
	return agent + "\x00" + session + "\x00" + toolUse
}

// issue stores a ticket for a call the profile sent to the sandbox and
// returns it; the caller encodes t.rewrite into the agent's answer.
func (ts *tickets) issue(e *Engine, call rules.Call) (*ticket, error) {
	if ts == nil {
		return nil, errors.New("this daemon cannot issue sandbox tickets")
	}
	command, cwd, ceiling, ok := e.shellCall(call)
	if !ok {
		return nil, errors.New("only a shell command with a known working directory can run in narrowd's sandbox")
	}
	writable := slices.Compact(append(slices.Clip(call.Workspaces), e.roots...))
	if len(writable) == 0 {
		return nil, errors.New("the call names no workspace to confine writes to")
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if why, ok := ts.latched[latchKey(call.Agent, call.Session)]; ok && call.Session != "" {
		return nil, errors.New(why)
	}
	now := ts.now()
	ts.expire(now)
	if len(ts.live) >= maxTickets {
		return nil, errors.New("too many sandbox tickets are waiting")
	}
	t := &ticket{
		id: randomID(), command: command, cwd: cwd, writable: writable,
		agent: call.Agent, session: call.Session, tool: call.Tool, toolUse: call.ID,
		hostSays: hostAsserted(call), ceiling: ceiling, expires: now.Add(ts.ttl),
	}
	t.rewrite = ts.wrapper + " --socket " + shellQuote(ts.socket) + " --ticket " + t.id
	ts.live[t.id] = t
	ts.byRewrite[t.rewrite] = t
	if t.toolUse != "" {
		k := toolUseKey(t.agent, t.session, t.toolUse)
		ts.byToolUse[k] = append(ts.byToolUse[k], t)
	}
	ts.order = append(ts.order, t)
	return t, nil
}

// expire drops the tickets that expired by now, oldest first; ts.mu must
// be held.
func (ts *tickets) expire(now time.Time) {
	for len(ts.order) > 0 {
		t := ts.order[0]
		if ts.live[t.id] == t {
			if !now.After(t.expires) {
				break
			}
			ts.drop(t)
		}
		ts.order[0] = nil
		ts.order = ts.order[1:]
	}
	// Tickets taken before they expired stay in order until they reach
	// its front: keep it from outgrowing the live set.
	if len(ts.order) > 2*len(ts.live)+64 {
		kept := make([]*ticket, 0, 2*len(ts.live)+64)
		for _, t := range ts.order {
			if ts.live[t.id] == t {
				kept = append(kept, t)
			}
		}
		ts.order = kept
	}
}

// drop removes t from the live tickets; ts.mu must be held.
func (ts *tickets) drop(t *ticket) {
	delete(ts.live, t.id)
	delete(ts.byRewrite, t.rewrite)
	if t.toolUse == "" {
		return
	}
	k := toolUseKey(t.agent, t.session, t.toolUse)
	same := slices.DeleteFunc(ts.byToolUse[k], func(o *ticket) bool { return o == t })
	if len(same) == 0 {
		delete(ts.byToolUse, k)
	} else {
		ts.byToolUse[k] = same
	}
}

// setCallID links a ticket to the audit id of the call that issued it.
func (ts *tickets) setCallID(t *ticket, id string) {
	ts.mu.Lock()
	t.callID = id
	ts.mu.Unlock()
}

// hostAsserted records what the agent says about its own sandbox: never
// more than a record.
func hostAsserted(call rules.Call) []rules.Evidence {
	var out []rules.Evidence
	for _, k := range []string{"dangerouslyDisableSandbox", "sandbox", "sandbox_permissions", "with_escalated_permissions"} {
		if v, ok := call.Input[k]; ok {
			out = append(out, rules.Evidence{
				Kind: rules.KindAgentSandbox, Strength: rules.HostAsserted, Subject: k,
				Detail: fmt.Sprintf("the agent's own sandbox setting %s=%v; recorded only, it relaxes nothing", k, v), Effect: rules.NoEffect,
			})
		}
	}
	if call.Mode != "" {
		out = append(out, rules.Evidence{
			Kind: rules.KindAgentPermissionMode, Strength: rules.HostAsserted, Subject: call.Mode,
			Detail: "the agent's permission mode; recorded only, it relaxes nothing", Effect: rules.NoEffect,
		})
	}
	return out
}

// redeems reports whether call is exactly the rewrite of a live ticket:
// the agent running `narrowd exec --ticket T` as it was told to. Nothing
// else in the string is allowed.
func (ts *tickets) redeems(e *Engine, call rules.Call) bool {
	if ts == nil || call.Phase == rules.PostTool {
		return false
	}
	command, _, _, ok := e.shellCall(call)
	if !ok {
		return false
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t, ok := ts.byRewrite[command]
	return ok && t.agent == call.Agent && ts.now().Before(t.expires)
}

// redeemVerdict is the verdict for a call that redeems a ticket.
func redeemVerdict(call rules.Call) rules.Verdict {
	return rules.Verdict{
		Agent: call.Agent, Tool: call.Tool, Key: call.Agent + "/" + call.Tool,
		Evidence: []rules.Evidence{{
			Kind: rules.KindSandboxTicket, Strength: rules.Proven, Subject: "narrowd exec --ticket",
			Detail: "the command is exactly narrowd exec redeeming a live ticket this daemon issued", Effect: rules.NoEffect,
		}},
		Decision: rules.Decision{Outcome: rules.Allow, Rule: "sandbox-ticket",
			Reason: "this runs a command narrowd already sent to its sandbox; the sandbox is checked before the command is released"},
		CeilingOutcome: rules.Allow,
		RiskClass:      "process_execution",
	}
}

// postTool latches a session whose call ran while its ticket was never
// claimed: the agent ignored the rewrite and ran the original command
// outside the sandbox. From then on that session gets no rewrites.
func (ts *tickets) postTool(call rules.Call) (latched bool) {
	if ts == nil || call.ID == "" || call.Session == "" {
		return false
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	k := toolUseKey(call.Agent, call.Session, call.ID)
	waiting := ts.byToolUse[k]
	if len(waiting) == 0 {
		return false
	}
	// The call ran: none of its tickets may run it again.
	delete(ts.byToolUse, k)
	for _, t := range waiting {
		ts.drop(t)
	}
	ts.latched[latchKey(call.Agent, call.Session)] =
		"the agent ran an earlier sandboxed call without redeeming its ticket, so narrowd no longer rewrites calls in this session"
	return true
}

// take claims a ticket for the wrapper pid (whose pidfd the caller
// opened). The ticket is gone from the store whatever happens next.
func (ts *tickets) take(id string, wrapperPid, wrapperFD int) (string, *claim, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t, ok := ts.live[id]
	if ok {
		ts.drop(t)
	}
	if !ok || ts.now().After(t.expires) {
		return "", nil, errTicket
	}
	c := &claim{t: t, wrapperPid: wrapperPid, wrapperFD: wrapperFD, expires: ts.now().Add(claimTTL)}
	cid := randomID()
	ts.claims[cid] = c
	return cid, c, nil
}

// takeClaim removes and returns a claim.
func (ts *tickets) takeClaim(id string) (*claim, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	c, ok := ts.claims[id]
	delete(ts.claims, id)
	if !ok || ts.now().After(c.expires) {
		if ok {
			closeFD(c.wrapperFD)
		}
		return nil, errors.New("no such claim: it was never made, was already used, or expired")
	}
	return c, nil
}

// sandboxRecord is the audit record of a sandbox check: established
// evidence when it passed, the reason when it failed.
func sandboxRecord(c *claim, f sandbox.Facts, abi int, verr error, now time.Time, extra ...rules.Evidence) *Record {
	t := c.t
	ev := slices.Clone(t.hostSays)
	rec := &Record{
		ID: newID(), ToolName: t.tool, RiskClass: "process_execution",
		SideEffectClass: "unknown", ResourceScope: "workspace",
		Timestamp: now.UTC().Format(time.RFC3339Nano),
		Agent:     t.agent, Phase: "exec", Session: t.session, Cwd: t.cwd, ToolUseID: t.toolUse,
		Summary: summarize(map[string]any{"command": t.command}), Via: "exec",
	}
	// Answer "exec" and "exec-refused" set these records apart from the
	// hook's decisions, which `narrowd stats` counts by answer.
	if verr != nil {
		rec.Decision, rec.PolicyRule, rec.Answer, rec.Outcome = "deny", "sandbox-check-failed", "exec-refused", "deny"
		rec.Reason = "narrowd's check of its own sandbox failed, so nothing ran (ticket of call " + t.callID + ")"
		rec.Error = verr.Error()
	} else {
		rec.Decision, rec.PolicyRule, rec.Answer, rec.Outcome = "allow", "sandbox-exec", "exec", "allow"
		rec.Reason = "narrowd verified its own sandbox from outside and released the command (ticket of call " + t.callID + ")"
		facts := fmt.Sprintf("pid %d (%s) %s %s %s %s interfaces %v, seccomp %d (socket(AF_UNIX) and io_uring refused), no_new_privs %d, CapEff %s on all %d threads, verified at %s",
			f.Pid, filepath.Base(f.Exe), f.NetNS, f.UserNS, f.MountNS, f.PidNS, f.Interfaces, f.Seccomp, f.NoNewPrivs, f.CapEff, f.Threads, f.VerifiedAt.UTC().Format(time.RFC3339Nano))
		ev = append(ev,
			rules.Evidence{Kind: rules.KindSandboxExec, Strength: rules.Established, Subject: f.NetNS,
				Detail: "no egress: " + facts, Effect: rules.Bound(rules.Egress, 0)},
			rules.Evidence{Kind: rules.KindSandboxExec, Strength: rules.Established, Subject: strings.Join(t.writable, ":"),
				Detail: fmt.Sprintf("writes confined by Landlock ABI %d (reported by narrowd's lock stage) to the workspace and a private tmp; "+
					"not covered: a hard link to a file outside made after the wrapper's check, and the agent's own stdin/stdout/stderr", abi),
				Effect: rules.Bound(rules.Scope, 1)},
			rules.Evidence{Kind: rules.KindSandboxContain, Strength: rules.Established, Subject: f.MountNS,
				Detail: fmt.Sprintf("seen from outside in /proc/%d/mountinfo: read-only mounts of the protected paths %v; home directories %v covered by a tmpfs (only the allowlist shown); "+
					"a /proc of its own PID namespace (private: %v); limits: %s processes, files up to %s bytes; "+
					"not covered: protected paths that did not exist at the start outside a protected directory (moved aside after the run), \"**/\" patterns deeper than the root that appear during the run",
					f.Pid, f.ReadOnly, f.HomeHidden, f.PrivateProc, f.MaxProcs, f.MaxFileSize)})
		ev = append(ev, extra...)
	}
	ceiling := t.ceiling
	narrowed := proofs.Narrow(ceiling, ev)
	rec.Verdict = &rules.Verdict{Agent: t.agent, Tool: t.tool, Key: t.agent + "/" + t.tool, Evidence: ev,
		Ceiling: &ceiling, Narrowed: &narrowed, RiskClass: rules.RiskClass(&narrowed, t.tool),
		Decision: rules.Decision{Outcome: outcomeOf(rec.Outcome), Rule: rec.PolicyRule, Reason: rec.Reason}}
	rec.RiskClass, rec.SideEffectClass = rec.Verdict.RiskClass, sideEffectClass(&narrowed)
	return rec
}

func outcomeOf(s string) rules.Outcome {
	if s == "allow" {
		return rules.Allow
	}
	return rules.Deny
}

// pendingSandbox is the evidence narrowd's sandbox will establish for a
// shell call: no network at all (so no egress and nothing paid for) and
// writes only beneath the workspace. It holds only because the command
// runs nowhere else: narrowd exec releases the text only after the daemon
// verified the sandbox from outside, and the audit records that check.
func pendingSandbox() []rules.Evidence {
	const detail = "narrowd exec runs the command in narrowd's own sandbox (network namespace with only lo, seccomp refusing new AF_UNIX sockets, Landlock writes beneath the workspace); the daemon verifies it from outside before it releases the command, and nothing runs otherwise"
	return []rules.Evidence{
		{Kind: rules.KindSandboxExec, Strength: rules.Established, Subject: "narrowd exec", Detail: detail, Effect: rules.Bound(rules.Egress, 0)},
		{Kind: rules.KindSandboxExec, Strength: rules.Established, Subject: "narrowd exec", Detail: detail, Effect: rules.Bound(rules.Financial, 0)},
		{Kind: rules.KindSandboxExec, Strength: rules.Established, Subject: "narrowd exec", Detail: detail, Effect: rules.Bound(rules.Scope, 1)},
	}
}

// sandboxed re-decides a shell call that was not allowed or refused as it
// would run in narrowd's sandbox. When the profile then sends it to the
// sandbox, the verdict with the sandbox's evidence replaces v; otherwise
// v stands.
func (e *Engine) sandboxed(call rules.Call, sess rules.Session, v rules.Verdict) rules.Verdict {
	if v.Ceiling == nil || v.Decision.Outcome != rules.Ask {
		return v
	}
	if _, _, _, ok := e.shellCall(call); !ok {
		return v
	}
	ev := append(slices.Clone(v.Evidence), pendingSandbox()...)
	if e.cfg.SandboxUndo {
		ev = append(ev, pendingUndo())
	}
	narrowed := proofs.Narrow(*v.Ceiling, ev)
	in := rules.Input{Call: &call, Key: v.Key, Session: sess, Ceiling: v.Ceiling, Narrowed: &narrowed, Evidence: ev}
	if entry, found := e.catalog.Lookup(call.Agent, call.Tool); found {
		in.Command = e.shellCommand(entry.Input, call, false)
	}
	d := e.profile.Decide(in)
	if d.Outcome != rules.Sandbox {
		return v
	}
	out := v
	out.Evidence, out.Narrowed, out.Decision = ev, &narrowed, d
	out.RiskClass = rules.RiskClass(&narrowed, call.Tool)
	return out
}
