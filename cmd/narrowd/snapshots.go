package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

const snapshotsUsage = `snapshots [--json] [--state-dir DIR] [--config FILE]
       snapshots prune [--older-than 7d] [--max-bytes N] [--state-dir DIR] [--config FILE]`

// runSnapshots lists the snapshots narrowd holds (id, time, files,
// bytes), or prunes them.
func runSnapshots(_ context.Context, e env, args []string) error {
	if len(args) > 0 && args[0] == "prune" {
		return runPrune(e, args[1:])
	}
	fs := newFlags(e, "snapshots", snapshotsUsage)
	asJSON := fs.Bool("json", false, "print one JSON object per snapshot")
	stateDir, configPath := stateFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return exitError{1}
	}
	store, err := openStore(e, *stateDir, *configPath)
	if err != nil {
		return err
	}
	list, err := store.List()
	if err != nil {
		return err
	}
	if !*asJSON {
		fmt.Fprintf(e.stdout, "%-24s  %-20s %5s %12s  %s\n", "ID", "TIME", "FILES", "BYTES", "FIRST FILE")
	}
	for _, s := range list {
		if *asJSON {
			b, _ := json.Marshal(s)
			fmt.Fprintf(e.stdout, "%s\n", b)
			continue
		}
		first, n := "", len(s.Files)
		if len(s.Files) > 0 {
			first = oneLine(s.Files[0].Path)
		}
		for _, r := range s.Runs {
			n += len(r.Changes)
			if first == "" {
				first = "sandboxed run in " + oneLine(r.Root) + " (" + r.State + ")"
			}
		}
		fmt.Fprintf(e.stdout, "%-24s  %-20s %5d %12d  %s\n", s.ID, s.Time.Local().Format("2006-01-02 15:04:05"), n, s.Bytes(), first)
	}
	return nil
}

func runPrune(e env, args []string) error {
	fs := newFlags(e, "snapshots prune", snapshotsUsage)
	olderThan := fs.String("older-than", "", "remove snapshots taken longer ago than this (90m, 72h, 7d)")
	maxBytes := fs.Int64("max-bytes", 0, "then remove the oldest until the store holds at most this many bytes")
	stateDir, configPath := stateFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 || *maxBytes < 0 {
		fs.Usage()
		return exitError{1}
	}
	age, err := parseAge(*olderThan)
	if err != nil {
		return err
	}
	store, err := openStore(e, *stateDir, *configPath)
	if err != nil {
		return err
	}
	rep, err := store.Prune(age, *maxBytes)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "removed %d snapshots, freed %d bytes, %d bytes left\n", len(rep.Removed), rep.Freed, rep.Left)
	return nil
}

// parseAge reads a Go duration or a number of days ("7d"); "" is zero.
func parseAge(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		if n, err := strconv.Atoi(days); err == nil && n > 0 {
			return time.Duration(n) * 24 * time.Hour, nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("bad --older-than %q: want a duration such as 72h or 7d", s)
	}
	return d, nil
}
