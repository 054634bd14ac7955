package proofs

import (
	_ "embed"
	"fmt"
	"strings"
	"sync"

	"github.com/BurntSushi/toml"
	"github.com/bmatcuk/doublestar/v4"
)

// standingFile is the table of standing configuration: files other
// tools load or run on their own (standing.toml says what is on it and
// why build files are not).
//
//go:embed standing.toml
var standingFile []byte

// StandingEntry is one pattern of the standing-configuration table.
type StandingEntry struct {
	// Pattern is doublestar syntax, relative to a workspace root and
	// lower case; it is matched case-folded.
	Pattern string `toml:"pattern"`
	// LoadedBy names the tool that loads or runs what matches.
	LoadedBy string `toml:"loaded_by"`
	// Reason says in one line what the tool does with it.
	Reason string `toml:"reason"`
	// Removable reports that deleting it plants nothing and an install
	// recreates it (a virtualenv, compiled caches): a removal of it is
	// not a change of standing configuration.
	Removable bool `toml:"removable"`
}

// InertName is a dotfile name that nothing loads as code, so that a
// write may treat it as an ordinary file.
type InertName struct {
	Name   string `toml:"name"`
	Reason string `toml:"reason"`
}

// StandingTable is the parsed standing-configuration table. It is
// immutable and safe for concurrent use.
type StandingTable struct {
	entries []StandingEntry
	inert   map[string]bool
	// matchers are entries compiled for the common shapes; see compileEntry.
	matchers []standingMatcher
}

// Standing returns the built-in standing-configuration table, parsed once.
// The sandbox makes every [StandingTable.Patterns] path read-only; the
// proofs refuse to call a write to one "one ordinary workspace file".
func Standing() (*StandingTable, error) { return defaultStanding() }

var defaultStanding = sync.OnceValues(func() (*StandingTable, error) {
	return LoadStanding(standingFile)
})

// LoadStanding parses a table in standing.toml's format. Every entry
// needs a valid pattern, a loaded_by and a reason; an inert name must be
// one dotfile name.
func LoadStanding(data []byte) (*StandingTable, error) {
	var f struct {
		Entry []StandingEntry `toml:"entry"`
		Inert []InertName     `toml:"inert"`
	}
	md, err := toml.Decode(string(data), &f)
	if err != nil {
		return nil, fmt.Errorf("standing table: %w", err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		return nil, fmt.Errorf("standing table: unknown key %s", und[0])
	}
	t := &StandingTable{inert: map[string]bool{}}
	for i, e := range f.Entry {
		switch {
		case e.Pattern == "" || e.LoadedBy == "" || e.Reason == "":
			return nil, fmt.Errorf("standing table: entry %d (%q) needs pattern, loaded_by and reason", i+1, e.Pattern)
		case e.Pattern != strings.ToLower(e.Pattern):
			return nil, fmt.Errorf("standing table: pattern %q must be lower case (matching is case-folded)", e.Pattern)
		case strings.HasPrefix(e.Pattern, "/") || !doublestar.ValidatePattern(e.Pattern):
			return nil, fmt.Errorf("standing table: pattern %q is not a relative doublestar pattern", e.Pattern)
		}
		t.entries = append(t.entries, e)
		t.matchers = append(t.matchers, compileEntry(e.Pattern))
	}
	for _, n := range f.Inert {
		if !strings.HasPrefix(n.Name, ".") || strings.ContainsRune(n.Name, '/') || n.Name == "." || n.Name == ".." || n.Reason == "" {
			return nil, fmt.Errorf("standing table: inert name %q must be one dotfile name with a reason", n.Name)
		}
		t.inert[n.Name] = true
	}
	return t, nil
}

// Entries returns the table's entries in file order.
func (t *StandingTable) Entries() []StandingEntry { return append([]StandingEntry(nil), t.entries...) }

// Patterns returns every entry's pattern, relative to a workspace root:
// what the sandbox turns into read-only paths under each root.
func (t *StandingTable) Patterns() []string {
	out := make([]string, len(t.entries))
	for i, e := range t.entries {
		out[i] = e.Pattern
	}
	return out
}

// Match returns the first entry that rel (slash-separated, relative to a
// workspace root, no leading slash) matches, case-folded. A pattern
// "dir/**" also matches dir itself.
func (t *StandingTable) Match(rel string) (StandingEntry, bool) {
	low := strings.ToLower(strings.Trim(rel, "/"))
	if low == "" || low == "." {
		return StandingEntry{}, false
	}
	for i, m := range t.matchers {
		if m.match(low) {
			return t.entries[i], true
		}
	}
	return StandingEntry{}, false
}

// MatchRemoval returns the first entry rel matches whose removal is a
// change of standing configuration (an entry not marked removable).
func (t *StandingTable) MatchRemoval(rel string) (StandingEntry, bool) {
	low := strings.ToLower(strings.Trim(rel, "/"))
	if low == "" || low == "." {
		return StandingEntry{}, false
	}
	for i, m := range t.matchers {
		if !t.entries[i].Removable && m.match(low) {
			return t.entries[i], true
		}
	}
	return StandingEntry{}, false
}

// Ordinary reports why a path relative to a workspace root is not one
// ordinary file, or "" when it is: an ordinary path has no dot segment
// (a component starting with ".") other than a last one on the inert
// list, and matches no entry of the table.
func (t *StandingTable) Ordinary(rel string) string {
	rel = strings.Trim(rel, "/")
	if rel == "" || rel == "." {
		return "the workspace root is a directory, not one file"
	}
	segs := strings.Split(rel, "/")
	for i, s := range segs {
		if !strings.HasPrefix(s, ".") {
			continue
		}
		if i == len(segs)-1 && t.inert[s] {
			continue
		}
		if e, ok := t.Match(rel); ok {
			return standingWhy(e)
		}
		return fmt.Sprintf("%s has the dot segment %q, which is not on the list of inert dotfiles; tools load many dotfiles as configuration", rel, s)
	}
	if e, ok := t.Match(rel); ok {
		return standingWhy(e)
	}
	return ""
}

func standingWhy(e StandingEntry) string {
	return fmt.Sprintf("standing configuration %s (loaded by %s: %s)", e.Pattern, e.LoadedBy, e.Reason)
}

// standingMatcher matches one compiled pattern against a lower-case
// relative path. Most patterns are "**/NAME" or "**/DIR/**" with a
// literal middle, matched by string search instead of doublestar.
type standingMatcher struct {
	pattern string
	// literal is the middle of a **/literal or **/literal/** pattern.
	literal string
	// suffix: **/literal; tree: **/literal/**; neither: doublestar.
	suffix, tree bool
}

func compileEntry(pat string) standingMatcher {
	m := standingMatcher{pattern: pat}
	if mid, ok := strings.CutPrefix(pat, "**/"); ok && !strings.ContainsAny(mid, "*?[]{}\\") {
		m.literal, m.suffix = mid, true
		return m
	}
	if mid, ok := strings.CutPrefix(pat, "**/"); ok {
		if dir, ok := strings.CutSuffix(mid, "/**"); ok && !strings.ContainsAny(dir, "*?[]{}\\") {
			m.literal, m.tree = dir, true
		}
	}
	return m
}

func (m standingMatcher) match(rel string) bool {
	switch {
	case m.suffix:
		return hasSegments(rel, m.literal, false)
	case m.tree:
		return hasSegments(rel, m.literal, true)
	}
	if ok, _ := doublestar.Match(m.pattern, rel); ok {
		return true
	}
	if dir, ok := strings.CutSuffix(m.pattern, "/**"); ok {
		ok, _ := doublestar.Match(dir, rel)
		return ok
	}
	return false
}

// hasSegments reports that the segments of lit appear in rel as whole
// segments: at its end, or (tree) anywhere.
func hasSegments(rel, lit string, tree bool) bool {
	if rel == lit || strings.HasSuffix(rel, "/"+lit) {
		return true
	}
	if !tree {
		return false
	}
	return strings.HasPrefix(rel, lit+"/") || strings.Contains(rel, "/"+lit+"/")
}
