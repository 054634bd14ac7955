package sandbox

import (
	_ "embed"
	"fmt"
	"path"
	"strings"

	"github.com/BurntSushi/toml"
)

//go:embed home.toml
var homeTable string

//go:embed protected.toml
var protectedTable string

// HomeEntry is one path the sandbox shows of a hidden home directory.
type HomeEntry struct {
	// Path is relative to the home directory.
	Path string `toml:"path" json:"path"`
	// Mode is "ro" (read-only) or "cache" (writable through an overlay
	// whose writes are discarded at exit).
	Mode string `toml:"mode" json:"mode"`
	Why  string `toml:"why" json:"-"`
}

// DefaultHome returns the embedded home allowlist (home.toml).
func DefaultHome() ([]HomeEntry, error) {
	var t struct {
		Path []HomeEntry `toml:"path"`
	}
	if _, err := toml.Decode(homeTable, &t); err != nil {
		return nil, fmt.Errorf("home.toml: %w", err)
	}
	for _, e := range t.Path {
		if err := checkHomeEntry(e); err != nil {
			return nil, fmt.Errorf("home.toml: %w", err)
		}
	}
	return t.Path, nil
}

// ParseHomeAllow turns a profile's extra entries ("PATH" or "PATH:cache")
// into home entries, read-only unless ":cache" is given.
func ParseHomeAllow(extra []string) ([]HomeEntry, error) {
	var out []HomeEntry
	for _, s := range extra {
		e := HomeEntry{Path: s, Mode: "ro"}
		if p, ok := strings.CutSuffix(s, ":cache"); ok {
			e.Path, e.Mode = p, "cache"
		}
		if err := checkHomeEntry(e); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

func checkHomeEntry(e HomeEntry) error {
	if e.Mode != "ro" && e.Mode != "cache" {
		return fmt.Errorf("home entry %q: mode %q is neither ro nor cache", e.Path, e.Mode)
	}
	if e.Path == "" || path.IsAbs(e.Path) || path.Clean(e.Path) != e.Path || e.Path == "." || e.Path == ".." || strings.HasPrefix(e.Path, "../") {
		return fmt.Errorf("home entry %q is not a clean path relative to the home directory", e.Path)
	}
	return nil
}

// DefaultProtectedPatterns returns the embedded fallback list of
// protected patterns (protected.toml), relative to a writable root.
func DefaultProtectedPatterns() ([]string, error) {
	var t struct {
		Patterns []string `toml:"patterns"`
	}
	if _, err := toml.Decode(protectedTable, &t); err != nil {
		return nil, fmt.Errorf("protected.toml: %w", err)
	}
	return t.Patterns, nil
}
