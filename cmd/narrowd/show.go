package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"

	"github.com/narrowd/narrowd/sandbox/changes"
	"github.com/narrowd/narrowd/sandbox/snapshot"
)

const showUsage = `show [--json] [--state-dir DIR] [--config FILE] CALL-ID`

// runShow lists what narrowd holds for a call: the files preserved
// before it, and what a sandboxed run created, changed and deleted (read
// from its overlay when the changes were not applied).
func runShow(_ context.Context, e env, args []string) error {
	fs := newFlags(e, "show", showUsage)
	asJSON := fs.Bool("json", false, "print the snapshot as JSON, every entry included")
	stateDir, configPath := stateFlags(fs)
	store, err := storeForID(e, fs, args, stateDir, configPath)
	if err != nil {
		return err
	}
	snap, err := store.Preview(fs.Arg(0))
	if err != nil {
		return err
	}
	if *asJSON {
		b, _ := json.Marshal(snap)
		fmt.Fprintf(e.stdout, "%s\n", b)
		return nil
	}
	printSnapshot(e.stdout, snap)
	return nil
}

func printSnapshot(w io.Writer, snap snapshot.Snapshot) {
	fmt.Fprintf(w, "call %s, %s\n", snap.ID, snap.Time.Local().Format("2006-01-02 15:04:05"))
	if snap.Of != "" {
		fmt.Fprintf(w, "what `narrowd undo %s` replaced\n", snap.Of)
	}
	for _, f := range snap.Files {
		if f.Exists {
			fmt.Fprintf(w, "preserved %s (%d bytes)\n", oneLine(f.Path), f.Size)
		} else {
			fmt.Fprintf(w, "absent    %s (undo removes what the call made there)\n", oneLine(f.Path))
		}
	}
	for _, r := range snap.Runs {
		fmt.Fprintf(w, "sandboxed run in %s: %s", oneLine(r.Root), runState(r.State))
		if r.Why != "" {
			fmt.Fprintf(w, " (%s)", oneLine(r.Why))
		}
		fmt.Fprintln(w)
		for _, c := range r.Changes {
			side := c.After
			if c.Action == changes.Deleted {
				side = c.Before
			}
			what := describeSide(side)
			if c.ModeOnly {
				what = fmt.Sprintf("directory mode %04o -> %04o", c.Before[0].Mode, c.After[0].Mode)
			}
			fmt.Fprintf(w, "  %-8s %s (%s)\n", c.Action, oneLine(filepath.Join(r.Root, c.Path)), what)
		}
		switch r.State {
		case snapshot.RunApplied, snapshot.RunApplying:
			fmt.Fprintf(w, "  narrowd undo %s puts the originals back\n", snap.ID)
		case snapshot.RunPending, snapshot.RunFailed, snapshot.RunRunning:
			fmt.Fprintf(w, "  narrowd apply %s applies these changes; narrowd discard %s drops them\n", snap.ID, snap.ID)
		}
	}
}

func runState(s string) string {
	switch s {
	case snapshot.RunApplied:
		return "changes applied"
	case snapshot.RunPending:
		return "changes NOT applied"
	case snapshot.RunRunning:
		return "running, or its end was never reported; changes NOT applied"
	case snapshot.RunFailed:
		return "applying failed and was rolled back; changes NOT applied"
	case snapshot.RunApplying:
		return "narrowd stopped while applying the changes; narrowd undo puts back what was applied"
	case snapshot.RunUndone:
		return "undone"
	case snapshot.RunDiscarded:
		return "changes discarded"
	}
	return s
}

// describeSide says what one side of a change is: a file and its size, a
// symlink and its target, a directory and what it holds.
func describeSide(es []changes.Entry) string {
	if len(es) == 0 {
		return "nothing"
	}
	e := es[0]
	switch e.Type {
	case "file":
		return fmt.Sprintf("file %04o, %d bytes", e.Mode, e.Size)
	case "symlink":
		return "symlink to " + oneLine(e.Target)
	case "dir":
		var n int
		var bytes int64
		for _, x := range es[1:] {
			n++
			bytes += x.Size
		}
		return fmt.Sprintf("directory, %d entries, %d bytes", n, bytes)
	}
	return e.Type
}

const applyUsage = `apply [--force] [--state-dir DIR] [--config FILE] CALL-ID`

// runApply applies a sandboxed run's changes that narrowd left in its
// overlay (over the budget, or changed meanwhile in the workspace),
// keeping the originals so that `narrowd undo` still works.
func runApply(_ context.Context, e env, args []string) error {
	fs := newFlags(e, "apply", applyUsage)
	force := fs.Bool("force", false, "also replace paths changed in the workspace during the run (their versions are kept for undo)")
	stateDir, configPath := stateFlags(fs)
	store, err := storeForID(e, fs, args, stateDir, configPath)
	if err != nil {
		return err
	}
	snap, err := store.ApplyRun(fs.Arg(0), *force)
	if err != nil {
		return fmt.Errorf("apply %s: %w", fs.Arg(0), err)
	}
	printSnapshot(e.stdout, snap)
	for _, r := range snap.Runs {
		if r.State != snapshot.RunApplied && r.State != snapshot.RunUndone && r.State != snapshot.RunDiscarded {
			return fmt.Errorf("apply %s: the changes in %s were not applied: %s", fs.Arg(0), r.Root, r.Why)
		}
	}
	return nil
}

const discardUsage = `discard [--state-dir DIR] [--config FILE] CALL-ID`

// runDiscard drops a sandboxed run's changes that were not applied.
func runDiscard(_ context.Context, e env, args []string) error {
	fs := newFlags(e, "discard", discardUsage)
	stateDir, configPath := stateFlags(fs)
	store, err := storeForID(e, fs, args, stateDir, configPath)
	if err != nil {
		return err
	}
	snap, err := store.DiscardRun(fs.Arg(0))
	if err != nil {
		return fmt.Errorf("discard %s: %w", fs.Arg(0), err)
	}
	printSnapshot(e.stdout, snap)
	return nil
}
