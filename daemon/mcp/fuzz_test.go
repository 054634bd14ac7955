package mcp

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/narrowd/narrowd/rules"
)

// FuzzConfig feeds one agent configuration file, as a repository could
// write it, to Locate: it never panics, and every server it returns has a
// name, a known transport and what that transport needs.
func FuzzConfig(f *testing.F) {
	for _, s := range []string{
		`{"mcpServers":{"a":{"command":"x","args":["${HOME}"],"env":{"K":"${env:K}"}}}}`,
		`{"mcpServers":{"a":{"type":"http","url":"http://h/${X:-d}","headers":{"A":"${workspaceFolder}"}}}}`,
		`{"a":{"type":"local","command":"c"}}`,
		`{"mcpServers":{"a":{"httpUrl":"u"},"b":{"url":"v"},"c":{"disabled":true,"command":"x"}}}`,
		`{"mcpServers":[]}`, `[]`, `{"mcpServers":{"a":{"type":"ws"}}}`, "\x00", `{"mcpServers":{"a":{"command":"${"}}}`,
	} {
		f.Add(s, ".mcp.json")
		f.Add(s, ".cursor/mcp.json")
	}
	f.Add("[mcp_servers.a]\ncommand = \"x\"\n[mcp_servers.b]\nurl = \"u\"\n", ".codex/config.toml")
	f.Add(`{"projects":{"/p":{"mcpServers":{"a":{"command":"x"}}}}}`, "HOME/.claude.json")
	f.Fuzz(func(t *testing.T, data, name string) {
		files := map[string]bool{".mcp.json": true, ".cursor/mcp.json": true, ".codex/config.toml": true, ".gemini/settings.json": true, ".github/mcp.json": true, "HOME/.claude.json": true}
		if !files[name] {
			return
		}
		home, proj := t.TempDir(), t.TempDir()
		path := filepath.Join(proj, name)
		if rest, ok := strings.CutPrefix(name, "HOME/"); ok {
			path = filepath.Join(home, rest)
		}
		writeFile(t, path, data)
		servers, _, _ := Locate(Locations{Home: home, Projects: []string{proj}, Getenv: func(string) string { return "v" }})
		for _, s := range servers {
			if s.Name == "" && s.Agent == "" {
				t.Errorf("server without agent and name: %+v", s)
			}
			switch s.Transport {
			case Stdio:
				if s.Command == "" {
					t.Errorf("stdio server without a command: %+v", s)
				}
			case HTTP, SSE:
				if s.URL == "" {
					t.Errorf("remote server without a URL: %+v", s)
				}
			default:
				t.Errorf("transport %q", s.Transport)
			}
			if s.InRepo && strings.Contains(strings.Join(append(s.Args, s.URL, s.Command), " "), "v") && !strings.Contains(data, "v") && !strings.Contains(proj, "v") {
				t.Errorf("a repository's file got narrowd's environment: %+v", s)
			}
		}
	})
}

// FuzzToolDefinition feeds one tools/list entry, as a server could send
// it, to the check and hash discovery applies: it never panics, and an
// entry it accepts has a valid name and the spec's def_hash.
func FuzzToolDefinition(f *testing.F) {
	for _, s := range []string{
		`{"name":"read","description":"d","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}`,
		`{"name":"a/b","inputSchema":{}}`, `{"name":""}`, `{"name":"x\u0000"}`, `{"name":1}`, `[]`, `{"name":"é","description":"e\u0301"}`,
		`{"name":"n","inputSchema":{"type":"object","properties":{"p":{"type":"string"}}},"x":1e400}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, def []byte) {
		tool, err := toolOf("srv", def, DefaultLimits)
		if err != nil {
			return
		}
		if !validToolName(tool.Name) || tool.Key != "srv/"+tool.Name {
			t.Errorf("accepted name %q key %q", tool.Name, tool.Key)
		}
		if h, err := rules.DefHash(def); err != nil || h != tool.DefHash {
			t.Errorf("def_hash %s, want %s (%v)", tool.DefHash, h, err)
		}
	})
}
