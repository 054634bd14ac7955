package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"path/filepath"

	"github.com/narrowd/narrowd/daemon"
	"github.com/narrowd/narrowd/sandbox/snapshot"
)

const undoUsage = `undo [--force] [--json] [--state-dir DIR] [--config FILE] CALL-ID`

// runUndo puts back the files narrowd preserved before the call with
// this audit id (`narrowd log --json` shows ids; the reason of a call
// with a snapshot names its undo command), or, for a sandboxed run, every
// path it created, changed or deleted, whole trees included. It checks
// every stored copy's hash first and refuses if one changed, and it keeps
// what it overwrites as a snapshot of its own, so an undo can be undone.
func runUndo(_ context.Context, e env, args []string) error {
	fs := newFlags(e, "undo", undoUsage)
	force := fs.Bool("force", false, "overwrite files even when their current content cannot be preserved first")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	stateDir, configPath := stateFlags(fs)
	store, err := storeForID(e, fs, args, stateDir, configPath)
	if err != nil {
		return err
	}
	rep, err := store.Restore(fs.Arg(0), *force)
	if *asJSON {
		b, _ := json.Marshal(rep)
		fmt.Fprintf(e.stdout, "%s\n", b)
	} else {
		for _, f := range rep.Files {
			fmt.Fprintf(e.stdout, "%-9s %s (was %s)\n", f.Action, oneLine(f.Path), oneLine(f.Was))
		}
		if rep.Saved != "" {
			fmt.Fprintf(e.stdout, "what undo replaced is kept as snapshot %s (narrowd undo %s to go back)\n", rep.Saved, rep.Saved)
		}
	}
	if err != nil {
		return fmt.Errorf("undo %s: %w", fs.Arg(0), err)
	}
	return nil
}

// stateFlags registers the flags that find the daemon's state directory.
func stateFlags(fs *flag.FlagSet) (stateDir, configPath *string) {
	stateDir = fs.String("state-dir", "", "the daemon's state directory (default from the config file, else $XDG_STATE_HOME/narrowd)")
	configPath = fs.String("config", "", "config file")
	return stateDir, configPath
}

// openStore opens the snapshot store of the daemon's state directory.
func openStore(e env, stateDir, configPath string) (*snapshot.Store, error) {
	if stateDir == "" {
		c, err := loadConfig(e, configPath)
		if err != nil {
			return nil, err
		}
		c.defaults(e)
		stateDir = c.StateDir
	}
	if stateDir == "" {
		return nil, fmt.Errorf("no state directory: set --state-dir, state_dir in the config file, or HOME")
	}
	abs, err := filepath.Abs(stateDir)
	if err != nil {
		return nil, err
	}
	return snapshot.Open(daemon.SnapshotDir(abs), snapshot.Budget{})
}

// storeForID parses the arguments of a command that takes one call id
// (undo, show, apply, discard) and opens the snapshot store; the id is
// fs.Arg(0). stateDir and configPath are fs's flags, read once parsed.
func storeForID(e env, fs *flag.FlagSet, args []string, stateDir, configPath *string) (*snapshot.Store, error) {
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return nil, exitError{1}
	}
	return openStore(e, *stateDir, *configPath)
}
