package daemon

import (
	"fmt"
	"slices"
	"strings"

	"github.com/narrowd/narrowd/daemon/mcp"
	"github.com/narrowd/narrowd/proofs"
	"github.com/narrowd/narrowd/rules"
)

// MCPTools tells the engine which MCP tool an agent's tool name means and
// the def_hash the agent's configuration lists for it now. The discovery
// registry (daemon/mcp.Registry) implements it; without one every MCP
// tool is unlabelled.
type MCPTools interface {
	// Resolve returns the key for the name agent sent from cwd, and its
	// current def_hash; ok is false when the tool was not discovered or
	// could be one of several definitions.
	Resolve(agent, name, cwd string) (key, defHash string, ok bool)
}

// resolveMCP finds the labels of an MCP call. It reports handled=false
// for calls that are not MCP calls. Labels apply only at the def_hash
// discovery lists now (spec §1): a tool whose definition drifted, or
// that was not discovered, is unlabelled, whatever its key's history
// holds.
func (e *Engine) resolveMCP(call rules.Call) (entry *rules.Entry, key string, handled bool) {
	if e.cfg.MCP != nil {
		k, hash, ok := e.cfg.MCP.Resolve(call.Agent, call.Tool, callDir(call))
		if k != "" {
			if _, builtin := e.catalog.Lookup(call.Agent, call.Tool); builtin || !ok {
				// A name that is both a built-in and an MCP tool, or
				// several definitions at once: nobody knows which runs.
				return nil, k, true
			}
			if entry, bound := e.catalog.Bound(k, hash); bound {
				return entry, k, true
			}
			return nil, k, true
		}
	}
	if server, tool, ok := mcpName(call.Agent, call.Tool); ok {
		return nil, server + "/" + tool, true
	}
	return nil, "", false
}

// callDir is the directory that decides which project-level MCP servers
// apply: the call's cwd, or its project directory.
func callDir(call rules.Call) string {
	if call.Cwd != "" {
		return call.Cwd
	}
	if len(call.Workspaces) > 0 {
		return call.Workspaces[0]
	}
	return ""
}

// mcpEvidence gathers the evidence for a labelled MCP tool's call from
// the arguments its label record names (proofs.MCPTool).
func (e *Engine) mcpEvidence(spec rules.InputSpec, call rules.Call) []rules.Evidence {
	ps := e.paths.WithRoots(append(slices.Clip(call.Workspaces), e.roots...))
	return proofs.MCPTool(spec, call.Input, ps)
}

// mcpName splits an agent's MCP tool name into server and tool, for the
// key of a tool discovery has not listed (it stays unlabelled; the split
// only names it in the record).
func mcpName(agent, name string) (server, tool string, ok bool) {
	switch {
	case strings.HasPrefix(name, "mcp__"):
		server, tool, ok = strings.Cut(strings.TrimPrefix(name, "mcp__"), "__")
	case agent == "gemini" && strings.HasPrefix(name, "mcp_"):
		server, tool, ok = strings.Cut(strings.TrimPrefix(name, "mcp_"), "_")
	case agent == "cursor" && strings.HasPrefix(name, "MCP:"):
		server, tool, ok = "cursor-mcp", strings.TrimPrefix(name, "MCP:"), true
	}
	return server, tool, ok && server != "" && tool != ""
}

// MCP tool states in status and metrics.
const (
	MCPLabelled   = "labelled"   // labels bind to the definition listed now
	MCPUnlabelled = "unlabelled" // nobody labelled the key
	MCPDrifted    = "drifted"    // labels exist for the key, at another definition
)

// MCPLabelState says whether labels bind to key at defHash.
func (e *Engine) MCPLabelState(key, defHash string) string {
	if _, ok := e.catalog.Bound(key, defHash); ok {
		return MCPLabelled
	}
	if len(e.catalog.History(key)) > 0 {
		return MCPDrifted
	}
	return MCPUnlabelled
}

// MCPStatus is what `narrowd status` shows about MCP tools.
type MCPStatus struct {
	Rounds     uint64          `json:"rounds"`
	Servers    []MCPServer     `json:"servers"`
	Tools      []MCPToolStatus `json:"tools"`
	Drifts     []mcp.Drift     `json:"drifts,omitempty"`
	DriftTotal uint64          `json:"drift_total"`
}

// MCPServer is one configured server and how its listing went.
type MCPServer struct {
	Agent     string `json:"agent"`
	Name      string `json:"name"`
	Project   string `json:"project,omitempty"`
	Source    string `json:"source"`
	Transport string `json:"transport"`
	Tools     int    `json:"tools"`
	Error     string `json:"error,omitempty"`
}

// MCPToolStatus is one discovered tool definition and its label state.
type MCPToolStatus struct {
	Key     string `json:"key"`
	DefHash string `json:"def_hash"`
	State   string `json:"state"`
}

// mcpStatus reports discovery's view with the current engine's labels.
func (s *Server) mcpStatus() *MCPStatus {
	if s.cfg.MCP == nil {
		return nil
	}
	reg, e := s.cfg.MCP.Registry, s.engine.Load()
	snap := reg.Snapshot()
	st := &MCPStatus{Rounds: snap.Rounds, Drifts: snap.Drifts, DriftTotal: snap.DriftTotal, Servers: []MCPServer{}, Tools: []MCPToolStatus{}}
	for _, l := range snap.Listings {
		st.Servers = append(st.Servers, MCPServer{Agent: l.Server.Agent, Name: l.Server.Name, Project: l.Server.Project,
			Source: l.Server.Source, Transport: l.Server.Transport, Tools: len(l.Tools), Error: l.Err})
	}
	for _, t := range reg.Tools() {
		st.Tools = append(st.Tools, MCPToolStatus{Key: t.Key, DefHash: t.DefHash, State: e.MCPLabelState(t.Key, t.DefHash)})
	}
	return st
}

// unlabelledWhy says why a call's tool has no labels, for the evidence a
// person reads: for MCP tools, whether discovery has not seen it, sees
// several definitions, or sees a definition nobody labelled, perhaps
// because it changed.
func (e *Engine) unlabelledWhy(call rules.Call) string {
	const plain = "no labels are recorded for this tool (absent is unknown)"
	if e.cfg.MCP == nil {
		return plain
	}
	key, hash, ok := e.cfg.MCP.Resolve(call.Agent, call.Tool, callDir(call))
	switch {
	case key == "":
		if _, _, isMCP := mcpName(call.Agent, call.Tool); isMCP {
			return "narrowd has not discovered this MCP tool in the agent's configuration, so its definition is unknown (absent is unknown)"
		}
		return plain
	case !ok:
		return "several definitions could be meant by this name, so none of their labels apply"
	}
	if _, builtin := e.catalog.Lookup(call.Agent, call.Tool); builtin {
		return "this name is both a built-in tool and an MCP tool, so narrowd cannot tell which runs"
	}
	switch {
	case len(e.catalog.History(key)) > 0:
		return fmt.Sprintf("labels are recorded for another definition of %s; this one (def_hash %s) changed since and nobody reviewed it (spec §1): narrowd label %s", key, hash, key)
	}
	return fmt.Sprintf("nobody labelled %s at def_hash %s (absent is unknown): narrowd label %s", key, hash, key)
}
