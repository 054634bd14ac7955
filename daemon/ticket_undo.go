package daemon

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/narrowd/narrowd/daemon/hookclient"
	"github.com/narrowd/narrowd/proofs"
	"github.com/narrowd/narrowd/rules"
	"github.com/narrowd/narrowd/sandbox/changes"
	"github.com/narrowd/narrowd/sandbox/snapshot"
)

// Undo of sandboxed runs (issue 16, item 2). With Config.SandboxUndo the
// sandbox of every ticket mounts an overlay over each writable root,
// its upper layer in the snapshot store: the run cannot write the real
// workspace. The daemon checks the mount from outside before it releases
// the command; when the wrapper reports the exit, the daemon applies the
// changes with the originals kept under the call's audit id (`narrowd
// undo ID`), or, over the budget or when something else changed the same
// paths during the run, applies nothing and tells the person
// (`narrowd apply ID`, `narrowd discard ID`).

// runsTTL is how long the daemon waits for a run's exit report. A run
// never reported stays in the store as running, for `narrowd apply`.
const runsTTL = 24 * time.Hour

// sandboxRun is a released command whose changes wait in its overlay.
type sandboxRun struct {
	callID     string
	wrapperPid int
	t          *ticket
	started    time.Time
}

// sandboxRuns are the runs released and not yet reported.
type sandboxRuns struct {
	mu sync.Mutex
	m  map[string]*sandboxRun
}

func (rs *sandboxRuns) add(r *sandboxRun, now time.Time) string {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.m == nil {
		rs.m = map[string]*sandboxRun{}
	}
	for k, old := range rs.m {
		if now.Sub(old.started) > runsTTL {
			delete(rs.m, k)
		}
	}
	token := randomID()
	rs.m[token] = r
	return token
}

func (rs *sandboxRuns) take(token string) (*sandboxRun, bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	r, ok := rs.m[token]
	delete(rs.m, token)
	return r, ok
}

// undoStore opens the snapshot store that keeps runs' changes, or nil
// when the daemon keeps none.
func undoStore(cfg Config) *snapshot.Store {
	if !cfg.SandboxUndo || cfg.NoSnapshots || cfg.Engine.SnapshotDir == "" {
		return nil
	}
	s, err := snapshot.Open(cfg.Engine.SnapshotDir, cfg.Engine.SnapshotBudget)
	if err != nil {
		return nil
	}
	return s
}

// prepareUndo makes the overlay layers for a claimed ticket's run, under
// the audit id of the call that issued it. It returns none when the
// daemon keeps no undo.
func (ts *tickets) prepareUndo(c *claim, now time.Time) ([]hookclient.ExecLayer, error) {
	if ts.undo == nil {
		return nil, nil
	}
	if !snapshot.ValidID(c.t.callID) {
		return nil, errors.New("the ticket has no audit id to keep its changes under")
	}
	layers, err := ts.undo.PrepareRun(c.t.callID, c.t.writable, now)
	if err != nil {
		return nil, fmt.Errorf("narrowd cannot keep this run's changes for undo: %w", err)
	}
	c.layers = layers
	out := make([]hookclient.ExecLayer, len(layers))
	for i, l := range layers {
		out[i] = hookclient.ExecLayer{Root: l.Root, Upper: l.Upper, Work: l.Work}
	}
	return out, nil
}

// checkOverlay verifies from outside that the held sandbox pid has
// narrowd's overlay over every writable root, when the claim has
// layers: the undo evidence holds only then.
func checkOverlay(c *claim, pid int) error {
	if len(c.layers) == 0 {
		return nil
	}
	info, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/mountinfo")
	if err != nil {
		return fmt.Errorf("failed to read the sandbox's mounts: %w", err)
	}
	for _, l := range c.layers {
		if err := changes.OverlayMounted(string(info), l.Root, l.Upper, l.Work); err != nil {
			return err
		}
	}
	return nil
}

// undoEvidence is what a verified overlay establishes for the exec
// record: every change the run makes can be put back.
func undoEvidence(c *claim) []rules.Evidence {
	if len(c.layers) == 0 {
		return nil
	}
	roots := make([]string, len(c.layers))
	for i, l := range c.layers {
		roots[i] = l.Root
	}
	return []rules.Evidence{{
		Kind: rules.KindSandboxUndo, Strength: rules.Established, Subject: strings.Join(roots, ":"),
		Detail: "each writable root is behind narrowd's overlay (checked in the sandbox's mountinfo from outside): the run cannot write the workspace; " +
			"after it exits narrowd applies its changes with the originals kept (`narrowd undo " + c.t.callID + "`), or, over the budget, applies nothing and says so",
		Effect: snapshotEffect,
	}}
}

// pendingUndo is the evidence a sandbox with undo will establish, for
// the decision that sends a call there: like the rest of pendingSandbox
// it holds because the command is released only once the overlay is
// verified.
func pendingUndo() rules.Evidence {
	return rules.Evidence{
		Kind: rules.KindSandboxUndo, Strength: rules.Established, Subject: "narrowd exec",
		Detail: "narrowd exec runs the command behind an overlay of the workspace that the daemon verifies from outside before it releases the command; " +
			"the changes are applied afterwards with the originals kept for `narrowd undo`, or not at all when over the budget",
		Effect: snapshotEffect,
	}
}

// abandonRun drops the layers of a claim whose sandbox never ran.
func (ts *tickets) abandonRun(c *claim) {
	if ts.undo != nil && len(c.layers) > 0 {
		ts.undo.DiscardRun(c.t.callID)
	}
}

// serveExecDone applies what a released run left in its overlay once its
// wrapper reports the exit, records the change set in the audit log, and
// answers with what the wrapper must tell the person.
func (s *Server) serveExecDone(w http.ResponseWriter, r *http.Request) {
	refuse := func(err error) {
		s.log.Warn("refused a sandbox run's exit report", "err", err)
		writeJSON(w, http.StatusForbidden, hookclient.ExecRefusal{Error: err.Error()})
	}
	if s.tickets == nil || s.tickets.undo == nil {
		refuse(errors.New("this daemon keeps no sandbox changes"))
		return
	}
	var req hookclient.DoneRequest
	if err := readSmall(w, r, &req); err != nil || req.Run == "" {
		refuse(errors.New("malformed exit report"))
		return
	}
	pid, pfd, err := peerProcess(r)
	closeFD(pfd)
	if err != nil {
		refuse(err)
		return
	}
	run, ok := s.tickets.runs.take(req.Run)
	if !ok {
		refuse(errors.New("no such run: it was never released or was already reported"))
		return
	}
	if pid != run.wrapperPid {
		refuse(fmt.Errorf("the report comes from pid %d, not the wrapper %d", pid, run.wrapperPid))
		return
	}
	snap, ferr := s.tickets.undo.FinishRun(run.callID, s.cfg.UndoBudget)
	rec, message := changesRecord(run, snap, ferr, req.Code, s.cfg.now())
	if err := s.audit.Append(rec); err != nil {
		s.metrics.auditErrors.Inc()
		s.log.Error("audit write failed for a sandbox run's changes", "err", err)
	}
	writeJSON(w, http.StatusOK, hookclient.DoneReply{Message: message})
}

// changesRecord is the audit record of a run's changes and the message
// for the command's stderr (none when everything was applied: the
// command's output stays its own).
func changesRecord(run *sandboxRun, snap snapshot.Snapshot, ferr error, code int, now time.Time) (*Record, string) {
	t := run.t
	id := run.callID
	rec := &Record{
		ID: newID(), ToolName: t.tool, RiskClass: "process_execution", SideEffectClass: "unknown", ResourceScope: "workspace",
		Timestamp: now.UTC().Format(time.RFC3339Nano), Agent: t.agent, Phase: "exec", Session: t.session, Cwd: t.cwd,
		ToolUseID: t.toolUse, Summary: summarize(map[string]any{"command": t.command}), Via: "exec",
		Decision: "allow", PolicyRule: "sandbox-changes", Answer: "exec-changes", Outcome: "allow",
	}
	var applied, notApplied []string
	var created, changed, deleted int
	for _, r := range snap.Runs {
		switch r.State {
		case snapshot.RunApplied:
			applied = append(applied, r.Root)
			for _, c := range r.Changes {
				switch c.Action {
				case changes.Created:
					created++
				case changes.Changed:
					changed++
				case changes.Deleted:
					deleted++
				}
			}
		default:
			notApplied = append(notApplied, r.Root+": "+r.Why)
		}
	}
	var message string
	var ev []rules.Evidence
	switch {
	case ferr != nil:
		rec.Error = ferr.Error()
		rec.Reason = fmt.Sprintf("narrowd could not apply the sandboxed run's changes (call %s, exit %d); they stay in its overlay", id, code)
		message = fmt.Sprintf("narrowd: the command's changes to the workspace were NOT applied: %v. They are kept: `narrowd show %s` lists them, `narrowd apply %s` applies them, `narrowd discard %s` drops them", ferr, id, id, id)
	case len(notApplied) > 0:
		rec.Reason = fmt.Sprintf("the sandboxed run's changes were not applied (call %s, exit %d): %s", id, code, strings.Join(notApplied, "; "))
		message = fmt.Sprintf("narrowd: the command's changes to the workspace were NOT applied (%s). They are kept: `narrowd show %s` lists them, `narrowd apply %s` applies them (undo stays possible), `narrowd discard %s` drops them",
			strings.Join(notApplied, "; "), id, id, id)
		ev = append(ev, rules.Evidence{Kind: rules.KindSandboxUndo, Strength: rules.Established, Subject: id,
			Detail: "the run's changes are held in its overlay, not in the workspace, until a person applies them", Effect: snapshotEffect})
	default:
		rec.Reason = fmt.Sprintf("applied the sandboxed run's changes (call %s, exit %d): %d created, %d changed, %d deleted; `narrowd undo %s` puts the originals back", id, code, created, changed, deleted, id)
	}
	if len(applied) > 0 {
		ev = append(ev, rules.Evidence{Kind: rules.KindSandboxUndo, Strength: rules.Established, Subject: strings.Join(applied, ":"),
			Detail: fmt.Sprintf("narrowd holds the originals of every path the run created, changed or deleted (%d, %d, %d) under %s: `narrowd undo %s`", created, changed, deleted, id, id),
			Effect: snapshotEffect})
	}
	ceiling := t.ceiling
	narrowed := proofs.Narrow(ceiling, append(pendingSandbox(), ev...))
	rec.Verdict = &rules.Verdict{Agent: t.agent, Tool: t.tool, Key: t.agent + "/" + t.tool, Evidence: ev,
		Ceiling: &ceiling, Narrowed: &narrowed, RiskClass: rules.RiskClass(&narrowed, t.tool),
		Decision: rules.Decision{Outcome: rules.Allow, Rule: rec.PolicyRule, Reason: rec.Reason}}
	rec.RiskClass, rec.SideEffectClass = rec.Verdict.RiskClass, sideEffectClass(&narrowed)
	return rec, message
}
