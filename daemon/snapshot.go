package daemon

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/narrowd/narrowd/proofs"
	"github.com/narrowd/narrowd/rules"
	"github.com/narrowd/narrowd/sandbox/snapshot"
)

// Snapshots preserves the workspace files a call would change, under the
// call's audit id, so that `narrowd undo ID` can put them back. It must
// hold every target or return an error: a partial snapshot would be
// evidence of an undo that cannot happen. *snapshot.Store is one.
type Snapshots interface {
	Take(id string, targets []snapshot.Target) (snapshot.Snapshot, error)
}

// SnapshotDir is where the daemon keeps its snapshot store under its
// state directory; `narrowd undo` and `narrowd snapshots` look there.
func SnapshotDir(stateDir string) string { return filepath.Join(stateDir, "snapshots") }

// snapshotEffect is what a held snapshot proves: the files' prior state
// can be put back, with a person's (or narrowd undo's) effort (§3.3).
var snapshotEffect = rules.Bound(rules.Reversibility, 1)

// openSnapshots opens the engine's store: the one configured, or a store
// in cfg.SnapshotDir, or none.
func openSnapshots(cfg EngineConfig) (Snapshots, error) {
	if cfg.Snapshots != nil || cfg.SnapshotDir == "" {
		return cfg.Snapshots, nil
	}
	s, err := snapshot.Open(cfg.SnapshotDir, cfg.SnapshotBudget)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// storeSensitive returns a sensitive-path pattern for the snapshot store,
// so that a call that writes (or reads) it is asked about: a same-uid
// process that forged an index could make `narrowd undo` write where it
// chose. A directory whose name holds pattern characters gets none (it
// cannot be matched literally); the store's own hashes still apply.
func storeSensitive(dir string) []string {
	if dir == "" || !filepath.IsAbs(dir) || strings.ContainsAny(dir, "*?[]{}\\") {
		return nil
	}
	return []string{strings.TrimPrefix(filepath.Clean(dir), "/") + "/**"}
}

// mayPreserve reports whether a call judged under id should have its
// targets preserved: the engine has a store, the call will be recorded
// under an id, and it has not run yet (a post-tool event would preserve
// the call's result, not what it replaced).
func (e *Engine) mayPreserve(id string, call rules.Call) bool {
	return e.snapshots != nil && id != "" && (call.Phase == rules.PreTool || call.Phase == rules.PermissionAsk)
}

// preserve takes the snapshot of a call's targets and returns its
// evidence: one established record per file, each narrowing
// reversibility. It gives nothing when the list of targets is not
// complete, when the call may also send or spend (a copy of the files
// restores none of that), when a part of it reaches outside the
// workspace (ln /etc/shadow x), when anything raised a label (a sensitive
// name or a link that leaves the workspace), or when the store refuses or
// fails: then no snapshot is held and the labels stay.
func (e *Engine) preserve(id string, targets []proofs.Target, complete bool, ceiling rules.Labels, ev []rules.Evidence) []rules.Evidence {
	if !complete || len(targets) == 0 {
		return nil
	}
	pre := proofs.Narrow(ceiling, ev)
	if pre.Get(rules.Egress) != 0 || pre.Get(rules.Financial) != 0 || pre.Get(rules.Scope) == rules.Scope.Max() || pre.Facts[rules.OpenWorld] {
		return nil
	}
	for _, x := range ev {
		if _, raises := x.Effect.Raised(); raises {
			return nil
		}
	}
	ts := make([]snapshot.Target, len(targets))
	for i, t := range targets {
		ts[i] = snapshot.Target{Root: t.Root, Path: t.Abs, Recursive: t.Recursive}
	}
	snap, err := e.snapshots.Take(id, ts)
	if err != nil {
		return nil
	}
	out := make([]rules.Evidence, 0, len(snap.Files))
	for _, f := range snap.Files {
		subject := f.Path
		if r, err := filepath.Rel(f.Root, f.Path); err == nil {
			subject = r
		}
		var detail string
		if f.Exists {
			how := "copy"
			if f.Reflink {
				how = "reflink"
			}
			detail = fmt.Sprintf("narrowd holds %s as it was at check time (%d bytes, sha256 %s, %s); `narrowd undo %s` puts it back", f.Path, f.Size, f.SHA256[:12], how, id)
		} else {
			detail = fmt.Sprintf("%s does not exist at check time; `narrowd undo %s` removes what the call creates there", f.Path, id)
		}
		out = append(out, rules.Evidence{Kind: rules.KindSnapshot, Strength: rules.Established, Subject: subject, Detail: detail, Effect: snapshotEffect})
	}
	return out
}

// undoHint names the undo command in the reason of a decision that a
// snapshot backs, so the agent, the person and `narrowd log` see it. A
// call that is refused never runs, so there is nothing to undo; one that
// asks may run once a person approves.
func undoHint(id string, outcome rules.Outcome, ev []rules.Evidence) string {
	held := false
	for _, x := range ev {
		held = held || x.Kind == rules.KindSnapshot && x.Strength == rules.Established
	}
	switch {
	case !held:
		return ""
	case outcome == rules.Allow:
		return " (narrowd holds a snapshot of the files; undo with `narrowd undo " + id + "`)"
	case outcome == rules.Ask:
		return " (if a person approves, `narrowd undo " + id + "` puts the files back)"
	}
	return ""
}

// snapshotPruneEvery is how often the daemon prunes its snapshot store.
const snapshotPruneEvery = time.Hour

// pruneSnapshots removes snapshots older than cfg.SnapshotKeep from the
// engine's store, at once and then every hour until ctx ends. The store's
// own lock keeps it from racing a snapshot being taken or `narrowd undo`.
func (s *Server) pruneSnapshots(ctx context.Context) {
	dir := s.cfg.Engine.SnapshotDir
	if dir == "" || s.cfg.SnapshotKeep < 0 {
		return
	}
	t := time.NewTicker(snapshotPruneEvery)
	defer t.Stop()
	for {
		s.pruneOnce(dir, s.cfg.SnapshotKeep)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (s *Server) pruneOnce(dir string, keep time.Duration) {
	store, err := snapshot.Open(dir, s.cfg.Engine.SnapshotBudget)
	if err != nil {
		s.log.Error("snapshot store: prune skipped", "err", err)
		return
	}
	rep, err := store.Prune(keep, 0)
	if err != nil {
		s.log.Error("snapshot store: prune failed", "err", err)
		return
	}
	if len(rep.Removed) > 0 {
		s.log.Info("pruned old snapshots", "removed", len(rep.Removed), "older_than", keep.String())
	}
}
