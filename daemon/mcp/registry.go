package mcp

import (
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// Listing is the outcome of listing one configured server.
type Listing struct {
	Server Server    `json:"server"`
	Tools  []Tool    `json:"tools,omitempty"`
	Err    string    `json:"error,omitempty"`
	At     time.Time `json:"at"`
}

// Drift is one observed change of a tool's definition.
type Drift struct {
	Key     string    `json:"key"`
	OldHash string    `json:"old_def_hash"`
	NewHash string    `json:"new_def_hash"`
	At      time.Time `json:"at"`
}

// maxDrifts bounds the drift events kept for status.
const maxDrifts = 64

// Registry holds the latest discovery round: which tools each agent can
// call under which name, and each key's def_hash. It is safe for
// concurrent use; the engine reads it on every MCP call.
type Registry struct {
	mu       sync.RWMutex
	listings []Listing
	byName   map[string][]candidate // agent + "\x00" + name the agent sends
	last     map[string]string      // key → def_hash of the last round that saw it unambiguously
	drifts   []Drift
	total    uint64
	rounds   uint64
}

type candidate struct {
	key, hash, project string
}

// NewRegistry returns an empty registry: every MCP tool is unlabelled
// until a round has listed it.
func NewRegistry() *Registry {
	return &Registry{byName: map[string][]candidate{}, last: map[string]string{}}
}

// Update replaces the registry's view with one discovery round and
// returns the drifts it saw: keys whose definition differs from the one
// the previous rounds listed. A server that failed this round lists
// nothing, so its tools are unlabelled until it lists again.
func (r *Registry) Update(ls []Listing, now time.Time) []Drift {
	byName := map[string][]candidate{}
	hashes := map[string]map[string]bool{}
	for _, l := range ls {
		for _, t := range l.Tools {
			c := candidate{key: t.Key, hash: t.DefHash, project: l.Server.Project}
			for _, n := range AgentNames(l.Server.Agent, l.Server.Name, t.Name) {
				k := l.Server.Agent + "\x00" + n
				byName[k] = append(byName[k], c)
			}
			if hashes[t.Key] == nil {
				hashes[t.Key] = map[string]bool{}
			}
			hashes[t.Key][t.DefHash] = true
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var drifts []Drift
	keys := make([]string, 0, len(hashes))
	for k := range hashes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		hs := hashes[key]
		if len(hs) != 1 {
			continue // several definitions under one key: none binds
		}
		var h string
		for h = range hs {
		}
		if old, ok := r.last[key]; ok && old != h {
			drifts = append(drifts, Drift{Key: key, OldHash: old, NewHash: h, At: now})
		}
		r.last[key] = h
	}
	r.listings, r.byName = ls, byName
	r.total += uint64(len(drifts))
	r.rounds++
	r.drifts = append(r.drifts, drifts...)
	if len(r.drifts) > maxDrifts {
		r.drifts = append([]Drift(nil), r.drifts[len(r.drifts)-maxDrifts:]...)
	}
	return drifts
}

// Resolve maps the tool name an agent sent to a key and the def_hash the
// agent's configuration currently lists for it. Only tools discovered
// from that agent's own configuration match, by the exact name that
// agent gives them; project-level servers apply only to calls whose cwd
// is inside their project and take precedence over user-level ones, as
// in the agents. ok is false when nothing matches, or when several
// definitions could be meant (the key is then still returned, for the
// record): an ambiguous tool is unlabelled.
func (r *Registry) Resolve(agent, name, cwd string) (key, defHash string, ok bool) {
	r.mu.RLock()
	cands := r.byName[agent+"\x00"+name]
	r.mu.RUnlock()
	if len(cands) == 0 {
		return "", "", false
	}
	best := -1
	var picked []candidate
	for _, c := range cands {
		depth := 0
		if c.project != "" {
			if !inside(cwd, c.project) {
				continue
			}
			depth = len(c.project)
		}
		switch {
		case depth > best:
			best, picked = depth, []candidate{c}
		case depth == best:
			picked = append(picked, c)
		}
	}
	if len(picked) == 0 {
		return "", "", false
	}
	for _, c := range picked[1:] {
		if c.key != picked[0].key || c.hash != picked[0].hash {
			return picked[0].key, "", false
		}
	}
	return picked[0].key, picked[0].hash, true
}

func inside(cwd, dir string) bool {
	if cwd == "" || !filepath.IsAbs(cwd) {
		return false
	}
	cwd = filepath.Clean(cwd)
	return cwd == dir || strings.HasPrefix(cwd, dir+string(filepath.Separator))
}

// Snapshot is the registry's state for status pages.
type Snapshot struct {
	Rounds     uint64    `json:"rounds"`
	Listings   []Listing `json:"servers"`
	Drifts     []Drift   `json:"drifts,omitempty"`
	DriftTotal uint64    `json:"drift_total"`
}

// Snapshot returns a copy of the registry's state.
func (r *Registry) Snapshot() Snapshot {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return Snapshot{
		Rounds:     r.rounds,
		Listings:   append([]Listing(nil), r.listings...),
		Drifts:     append([]Drift(nil), r.drifts...),
		DriftTotal: r.total,
	}
}

// DriftTotal is the number of drifts seen since the registry was made.
func (r *Registry) DriftTotal() uint64 {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.total
}

// Tools returns every discovered tool once per key and def_hash, sorted
// by key.
func (r *Registry) Tools() []Tool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	seen := map[string]bool{}
	var out []Tool
	for _, l := range r.listings {
		for _, t := range l.Tools {
			if k := t.Key + "\x00" + t.DefHash; !seen[k] {
				seen[k] = true
				out = append(out, t)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Key < out[j].Key || out[i].Key == out[j].Key && out[i].DefHash < out[j].DefHash
	})
	return out
}

// AgentNames returns the tool names an agent sends for tool on server
// (research/hooks.md §0): Claude Code and Codex mcp__server__tool with
// characters outside [A-Za-z0-9_-] replaced by '_' (Claude Code 2.1.328's
// own normalisation), Gemini CLI mcp_server_tool as [geminiName] makes it,
// Copilot CLI server-tool, Cursor MCP:tool.
func AgentNames(agent, server, tool string) []string {
	switch agent {
	case "claude", "codex":
		return []string{"mcp__" + normName(server) + "__" + normName(tool)}
	case "gemini":
		return []string{geminiName(server + "_" + tool)}
	case "copilot":
		return []string{server + "-" + tool}
	case "cursor":
		return []string{"MCP:" + tool}
	}
	return nil
}

func normName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || r == '-' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' {
			return r
		}
		return '_'
	}, s)
}

// geminiName is Gemini CLI 0.61.0's generateValidName
// (packages/core/src/tools/mcp-tool.ts): "mcp_" unless already there,
// characters outside [A-Za-z0-9_.:-] replaced by '_', a leading
// non-letter guarded by '_', and names over 63 characters cut to their
// first and last 30 around "...".
func geminiName(qualified string) string {
	n := qualified
	if !strings.HasPrefix(n, "mcp_") {
		n = "mcp_" + n
	}
	n = strings.Map(func(r rune) rune {
		if r == '_' || r == '-' || r == '.' || r == ':' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' {
			return r
		}
		return '_'
	}, n)
	if c := n[0]; !(c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
		n = "_" + n
	}
	// JavaScript counts UTF-16 units; after the mapping every character
	// is ASCII, so bytes are the same count.
	if len(n) > 63 {
		n = n[:30] + "..." + n[len(n)-30:]
	}
	return n
}
