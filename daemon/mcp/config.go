package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
)

// Transports a server can be reached over.
const (
	Stdio = "stdio"
	HTTP  = "http" // streamable HTTP
	SSE   = "sse"  // the older HTTP+SSE transport
)

// maxConfigSize bounds one config file: ~/.claude.json grows with history
// but stays far below this.
const maxConfigSize = 16 << 20

// Server is one MCP server as one agent's configuration declares it.
type Server struct {
	// Agent is the agent whose configuration names the server.
	Agent string `json:"agent"`
	// Name is the server's name in that configuration: the namespace of
	// its tools' keys (spec §1).
	Name string `json:"name"`
	// Project is the project directory a project-level configuration
	// belongs to; empty for user-level servers.
	Project string `json:"project,omitempty"`
	// Source is the file that declared it.
	Source string `json:"source"`
	// InRepo reports that Source lives in the project, where whoever
	// wrote the repository chose it: narrowd does not expand its
	// environment into such a server, nor contact a remote one.
	InRepo bool `json:"in_repo,omitempty"`

	Transport string            `json:"transport"`
	Command   string            `json:"command,omitempty"`
	Args      []string          `json:"args,omitempty"`
	Env       map[string]string `json:"-"` // may hold secrets: never shown
	Dir       string            `json:"dir,omitempty"`
	URL       string            `json:"url,omitempty"`
	Headers   map[string]string `json:"-"` // may hold tokens: never shown
}

// launchKey identifies what would run or be contacted: two agents that
// configure the same program or URL share one listing.
func (s Server) launchKey() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\x00%s\x00%s\x00%s\x00%q\x00", s.Transport, s.URL, s.Command, s.Dir, s.Args)
	for _, k := range sortedKeys(s.Env) {
		fmt.Fprintf(&b, "%s=%s\x00", k, s.Env[k])
	}
	for _, k := range sortedKeys(s.Headers) {
		fmt.Fprintf(&b, "%s:%s\x00", k, s.Headers[k])
	}
	return b.String()
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Locations says where to look for the agents' MCP configuration.
type Locations struct {
	// Home is the user's home directory; empty skips user-level files.
	Home string
	// CodexHome is $CODEX_HOME; empty means Home/.codex.
	CodexHome string
	// CopilotHome is $COPILOT_HOME; empty means Home/.copilot.
	CopilotHome string
	// Projects are project directories whose project-level files are
	// read. Projects Claude Code records in ~/.claude.json are added.
	Projects []string
	// Getenv expands ${VAR} in configurations; nil expands to "".
	Getenv func(string) string
}

// configFile is one place an agent keeps MCP servers.
type configFile struct {
	agent   string
	path    string
	project string
	inRepo  bool
	read    func(data []byte, f configFile, loc Locations) ([]Server, []string, error)
}

// Locate reads every agent's MCP configuration and returns the servers it
// declares, the files it looked at (present or not, for a watcher) and
// the problems it met, one per file. A file that does not parse adds no
// servers; its tools stay unlabelled.
func Locate(loc Locations) (servers []Server, files []string, problems []error) {
	var cands []configFile
	projects := slices.Clone(loc.Projects)
	if loc.Home != "" {
		codex := loc.CodexHome
		if codex == "" {
			codex = filepath.Join(loc.Home, ".codex")
		}
		copilot := loc.CopilotHome
		if copilot == "" {
			copilot = filepath.Join(loc.Home, ".copilot")
		}
		cands = append(cands,
			// Claude Code: user servers and per-project servers in ~/.claude.json.
			configFile{agent: "claude", path: filepath.Join(loc.Home, ".claude.json"), read: readClaudeUser},
			// Codex: [mcp_servers.NAME] in config.toml.
			configFile{agent: "codex", path: filepath.Join(codex, "config.toml"), read: readCodex},
			// Gemini CLI: mcpServers in settings.json.
			configFile{agent: "gemini", path: filepath.Join(loc.Home, ".gemini", "settings.json"), read: readMCPServers},
			// Copilot CLI: mcpServers in ~/.copilot/mcp-config.json.
			configFile{agent: "copilot", path: filepath.Join(copilot, "mcp-config.json"), read: readMCPServers},
			// Cursor: mcpServers in ~/.cursor/mcp.json.
			configFile{agent: "cursor", path: filepath.Join(loc.Home, ".cursor", "mcp.json"), read: readMCPServers},
		)
		// Claude Code records the projects it was used in; their
		// .mcp.json files are project-level servers too.
		if data, err := readBounded(filepath.Join(loc.Home, ".claude.json")); err == nil {
			projects = append(projects, claudeProjects(data)...)
		}
	}
	seen := map[string]bool{}
	for _, p := range projects {
		p = filepath.Clean(p)
		if p == "" || !filepath.IsAbs(p) || seen[p] {
			continue
		}
		seen[p] = true
		cands = append(cands,
			configFile{agent: "claude", path: filepath.Join(p, ".mcp.json"), project: p, inRepo: true, read: readMCPServers},
			configFile{agent: "codex", path: filepath.Join(p, ".codex", "config.toml"), project: p, inRepo: true, read: readCodex},
			configFile{agent: "gemini", path: filepath.Join(p, ".gemini", "settings.json"), project: p, inRepo: true, read: readMCPServers},
			// Copilot CLI reads .mcp.json and .github/mcp.json in the
			// workspace (github/docs#44234); it dropped .vscode/mcp.json
			// in 1.0.37 (github/copilot-cli#3019).
			configFile{agent: "copilot", path: filepath.Join(p, ".mcp.json"), project: p, inRepo: true, read: readMCPServers},
			configFile{agent: "copilot", path: filepath.Join(p, ".github", "mcp.json"), project: p, inRepo: true, read: readMCPServers},
			configFile{agent: "cursor", path: filepath.Join(p, ".cursor", "mcp.json"), project: p, inRepo: true, read: readMCPServers},
		)
	}
	for _, c := range cands {
		files = append(files, c.path)
		data, err := readBounded(c.path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			problems = append(problems, fmt.Errorf("%s: %w", c.path, err))
			continue
		}
		got, bad, err := c.read(data, c, loc)
		if err != nil {
			problems = append(problems, fmt.Errorf("%s: %w", c.path, err))
			continue
		}
		for _, b := range bad {
			problems = append(problems, fmt.Errorf("%s: %s", c.path, b))
		}
		servers = append(servers, got...)
	}
	return servers, files, problems
}

func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxConfigSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxConfigSize {
		return nil, fmt.Errorf("larger than %d bytes", maxConfigSize)
	}
	return data, nil
}

// jsonServer is the common JSON shape of one server entry: Claude Code,
// Gemini CLI, Copilot CLI and Cursor all use it, with small differences
// in how the transport is named.
type jsonServer struct {
	Type    string            `json:"type"`
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
	Cwd     string            `json:"cwd"`
	URL     string            `json:"url"`
	HTTPURL string            `json:"httpUrl"` // Gemini CLI's streamable HTTP
	Headers map[string]string `json:"headers"`
	// Disabled (Claude Code, Cursor) and enabled (Gemini) switch a
	// server off; an off server is not started.
	Disabled bool  `json:"disabled"`
	Enabled  *bool `json:"enabled"`
}

// readMCPServers reads {"mcpServers": {NAME: {...}}}. Copilot CLI also
// accepts a bare {NAME: {...}} object (github/docs#44234).
func readMCPServers(data []byte, f configFile, loc Locations) ([]Server, []string, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, nil, err
	}
	raw, ok := top["mcpServers"]
	if !ok {
		if f.agent != "copilot" || strings.HasSuffix(f.path, "mcp-config.json") {
			return nil, nil, nil
		}
		raw = data
	}
	return decodeServers(raw, f, loc)
}

func decodeServers(raw json.RawMessage, f configFile, loc Locations) ([]Server, []string, error) {
	var entries map[string]jsonServer
	if err := json.Unmarshal(raw, &entries); err != nil {
		return nil, nil, fmt.Errorf("mcpServers: %w", err)
	}
	var out []Server
	var bad []string
	for _, name := range sortedNames(entries) {
		js := entries[name]
		if js.Disabled || js.Enabled != nil && !*js.Enabled {
			continue
		}
		if !validToolName(name) {
			bad = append(bad, fmt.Sprintf("server name %q is not 1-128 printable characters without '/'", name))
			continue
		}
		s, err := js.server(f, name, loc)
		if err != nil {
			bad = append(bad, fmt.Sprintf("server %q: %v", name, err))
			continue
		}
		out = append(out, s)
	}
	return out, bad, nil
}

func sortedNames[V any](m map[string]V) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

func (js jsonServer) server(f configFile, name string, loc Locations) (Server, error) {
	getenv := loc.Getenv
	if f.inRepo {
		// A repository must not pull narrowd's secrets into a server's
		// arguments, environment or headers.
		getenv = nil
	}
	x := expander(f.project, getenv)
	s := Server{Agent: f.agent, Name: name, Project: f.project, Source: f.path, InRepo: f.inRepo}
	switch {
	case js.HTTPURL != "":
		s.Transport, s.URL = HTTP, x(js.HTTPURL)
	case js.URL != "":
		s.Transport, s.URL = HTTP, x(js.URL)
		// Gemini CLI reads a bare url as SSE; the others say so in type.
		if js.Type == "sse" || f.agent == "gemini" && js.Type == "" {
			s.Transport = SSE
		}
	case js.Command != "":
		s.Transport, s.Command = Stdio, x(js.Command)
		for _, a := range js.Args {
			s.Args = append(s.Args, x(a))
		}
		s.Dir = x(js.Cwd)
	default:
		return Server{}, errors.New("neither command nor url")
	}
	switch js.Type {
	case "", "stdio", "local", "http", "streamable-http", "streamableHttp", "sse":
	default:
		return Server{}, fmt.Errorf("unknown type %q", js.Type)
	}
	s.Env = expandMap(js.Env, x)
	s.Headers = expandMap(js.Headers, x)
	return s, nil
}

func expandMap(m map[string]string, x func(string) string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = x(v)
	}
	return out
}

// expander expands ${VAR}, ${VAR:-default}, ${env:VAR} (Cursor) and
// ${workspaceFolder} the way the agents do. A name it cannot expand
// becomes empty: the server then fails or runs without it, and its tools
// are whatever it lists.
func expander(project string, getenv func(string) string) func(string) string {
	return func(s string) string {
		if !strings.Contains(s, "${") {
			return s
		}
		var b strings.Builder
		for {
			i := strings.Index(s, "${")
			if i < 0 {
				b.WriteString(s)
				return b.String()
			}
			j := strings.IndexByte(s[i:], '}')
			if j < 0 {
				b.WriteString(s)
				return b.String()
			}
			b.WriteString(s[:i])
			name := s[i+2 : i+j]
			s = s[i+j+1:]
			def := ""
			if n, d, ok := strings.Cut(name, ":-"); ok {
				name, def = n, d
			}
			name = strings.TrimPrefix(name, "env:")
			val := ""
			switch {
			case name == "workspaceFolder":
				val = project
			case getenv != nil:
				val = getenv(name)
			}
			if val == "" {
				val = def
			}
			b.WriteString(val)
		}
	}
}

// readClaudeUser reads ~/.claude.json: user servers in mcpServers and
// local (per-project) servers in projects[DIR].mcpServers.
func readClaudeUser(data []byte, f configFile, loc Locations) ([]Server, []string, error) {
	var top struct {
		MCPServers json.RawMessage `json:"mcpServers"`
		Projects   map[string]struct {
			MCPServers json.RawMessage `json:"mcpServers"`
		} `json:"projects"`
	}
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, nil, err
	}
	var out []Server
	var bad []string
	if len(top.MCPServers) > 0 {
		s, b, err := decodeServers(top.MCPServers, f, loc)
		if err != nil {
			return nil, nil, err
		}
		out, bad = append(out, s...), append(bad, b...)
	}
	for _, dir := range sortedNames(top.Projects) {
		p := top.Projects[dir]
		if len(p.MCPServers) == 0 || !filepath.IsAbs(dir) {
			continue
		}
		pf := f
		pf.project = filepath.Clean(dir)
		s, b, err := decodeServers(p.MCPServers, pf, loc)
		if err != nil {
			bad = append(bad, fmt.Sprintf("project %s: %v", dir, err))
			continue
		}
		out, bad = append(out, s...), append(bad, b...)
	}
	return out, bad, nil
}

// claudeProjects returns the project directories ~/.claude.json records.
func claudeProjects(data []byte) []string {
	var top struct {
		Projects map[string]json.RawMessage `json:"projects"`
	}
	if json.Unmarshal(data, &top) != nil {
		return nil
	}
	return sortedNames(top.Projects)
}

// readCodex reads [mcp_servers.NAME] tables from Codex's config.toml:
// command, args, env, cwd for stdio; url and http_headers for streamable
// HTTP; enabled = false switches one off.
func readCodex(data []byte, f configFile, loc Locations) ([]Server, []string, error) {
	var top struct {
		MCPServers map[string]struct {
			Command     string            `toml:"command"`
			Args        []string          `toml:"args"`
			Env         map[string]string `toml:"env"`
			Cwd         string            `toml:"cwd"`
			URL         string            `toml:"url"`
			HTTPHeaders map[string]string `toml:"http_headers"`
			Enabled     *bool             `toml:"enabled"`
		} `toml:"mcp_servers"`
	}
	if _, err := toml.Decode(string(data), &top); err != nil {
		return nil, nil, err
	}
	var out []Server
	var bad []string
	for _, name := range sortedNames(top.MCPServers) {
		c := top.MCPServers[name]
		if c.Enabled != nil && !*c.Enabled {
			continue
		}
		if !validToolName(name) {
			bad = append(bad, fmt.Sprintf("server name %q is not 1-128 printable characters without '/'", name))
			continue
		}
		s := Server{Agent: f.agent, Name: name, Project: f.project, Source: f.path, InRepo: f.inRepo, Env: c.Env, Headers: c.HTTPHeaders}
		switch {
		case c.URL != "":
			s.Transport, s.URL = HTTP, c.URL
		case c.Command != "":
			s.Transport, s.Command, s.Args, s.Dir = Stdio, c.Command, c.Args, c.Cwd
		default:
			bad = append(bad, fmt.Sprintf("server %q: neither command nor url", name))
			continue
		}
		out = append(out, s)
	}
	return out, bad, nil
}
