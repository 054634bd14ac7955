package mcp

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestLocate reads every agent's files, user and project level, in the
// formats the agents document.
func TestLocate(t *testing.T) {
	home, proj, other := t.TempDir(), t.TempDir(), t.TempDir()
	files := map[string]string{
		// Claude Code: user servers, local servers per project, and the
		// project list that adds other's .mcp.json.
		".claude.json": fmt.Sprintf(`{"mcpServers":{"u":{"command":"u-srv","args":["--root","${HOME}"]}},
			"projects":{%q:{"mcpServers":{"local":{"type":"http","url":"http://127.0.0.1:1/mcp","headers":{"Authorization":"Bearer ${TOKEN:-none}"}}}},
			%q:{}}}`, proj, other),
		".codex/config.toml": `
[mcp_servers.docs]
command = "docs-mcp"
args = ["serve"]
env = { A = "1" }
[mcp_servers.remote]
url = "https://example.invalid/mcp"
[mcp_servers.off]
command = "x"
enabled = false
`,
		".gemini/settings.json":      `{"mcpServers":{"g":{"httpUrl":"http://127.0.0.1:2/mcp"},"old":{"url":"http://127.0.0.1:3/sse"},"off":{"command":"x","enabled":false}}}`,
		".copilot/mcp-config.json":   `{"mcpServers":{"cp":{"type":"local","command":"cp-srv","tools":["*"]}}}`,
		".cursor/mcp.json":           `{"mcpServers":{"cu":{"command":"cu-srv","env":{"K":"${env:TOKEN}"}},"dis":{"command":"x","disabled":true}}}`,
		"PROJ/.mcp.json":             `{"mcpServers":{"fs":{"command":"node","args":["${workspaceFolder}/srv.js"]}}}`,
		"PROJ/.github/mcp.json":      `{"gh":{"command":"gh-srv"}}`,
		"PROJ/.cursor/mcp.json":      `{"mcpServers":{"pc":{"type":"sse","url":"http://127.0.0.1:4/sse","headers":{"Authorization":"Bearer ${TOKEN}"}}}}`,
		"PROJ/.gemini/settings.json": `{"theme":"x"}`,
		"OTHER/.mcp.json":            `{"mcpServers":{"o":{"command":"o-srv"}}}`,
	}
	for name, data := range files {
		p := filepath.Join(home, name)
		if rest, ok := strings.CutPrefix(name, "PROJ/"); ok {
			p = filepath.Join(proj, rest)
		} else if rest, ok := strings.CutPrefix(name, "OTHER/"); ok {
			p = filepath.Join(other, rest)
		}
		writeFile(t, p, data)
	}
	env := map[string]string{"HOME": "/home/me", "TOKEN": "t0k"}
	servers, watched, problems := Locate(Locations{Home: home, Projects: []string{proj}, Getenv: func(k string) string { return env[k] }})
	if len(problems) > 0 {
		t.Fatalf("problems: %v", problems)
	}
	var got []string
	for _, s := range servers {
		where := "user"
		switch s.Project {
		case proj:
			where = "proj"
		case other:
			where = "other"
		}
		got = append(got, fmt.Sprintf("%s %s %s %s %s %q %q", s.Agent, where, s.Name, s.Transport, s.Command+s.URL, s.Args, s.Env["K"]+s.Headers["Authorization"]))
	}
	want := []string{
		`claude user u stdio u-srv ["--root" "/home/me"] ""`,
		`claude proj local http http://127.0.0.1:1/mcp [] "Bearer t0k"`,
		`codex user docs stdio docs-mcp ["serve"] ""`,
		`codex user remote http https://example.invalid/mcp [] ""`,
		`gemini user g http http://127.0.0.1:2/mcp [] ""`,
		`gemini user old sse http://127.0.0.1:3/sse [] ""`,
		`copilot user cp stdio cp-srv [] ""`,
		`cursor user cu stdio cu-srv [] "t0k"`,
		`claude proj fs stdio node ["` + proj + `/srv.js"] ""`,
		`copilot proj fs stdio node ["` + proj + `/srv.js"] ""`,
		`copilot proj gh stdio gh-srv [] ""`,
		// A repository's file gets none of narrowd's environment.
		`cursor proj pc sse http://127.0.0.1:4/sse [] "Bearer "`,
		`claude other o stdio o-srv [] ""`,
		`copilot other o stdio o-srv [] ""`,
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("servers:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, s := range servers {
		if inRepo := strings.HasPrefix(s.Source, proj+"/") || strings.HasPrefix(s.Source, other+"/"); s.InRepo != inRepo {
			t.Errorf("%s %s from %s: InRepo %v", s.Agent, s.Name, s.Source, s.InRepo)
		}
	}
	if !slices.Contains(watched, filepath.Join(proj, ".codex", "config.toml")) {
		t.Errorf("watched files miss a project file that does not exist yet: %v", watched)
	}
}

// TestLocateProblems: a broken file is reported with its path and adds
// nothing; the other files still load.
func TestLocateProblems(t *testing.T) {
	tests := []struct {
		name, file, data, want string
	}{
		{"bad json", ".cursor/mcp.json", `{"mcpServers":`, "unexpected end"},
		{"bad toml", ".codex/config.toml", "[mcp_servers.x\n", "table name"},
		{"no command or url", ".gemini/settings.json", `{"mcpServers":{"x":{"args":["a"]}}}`, "neither command nor url"},
		{"unknown type", ".cursor/mcp.json", `{"mcpServers":{"x":{"type":"ws","url":"ws://x"}}}`, "unknown type"},
		{"servers not an object", ".copilot/mcp-config.json", `{"mcpServers":[1]}`, "mcpServers"},
		{"slash in server name", ".cursor/mcp.json", `{"mcpServers":{"a/b":{"command":"x"}}}`, "server name"},
		{"control character in server name", ".codex/config.toml", "[mcp_servers.\"a\\u001bb\"]\ncommand = \"x\"\n", "server name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home := t.TempDir()
			writeFile(t, filepath.Join(home, tt.file), tt.data)
			writeFile(t, filepath.Join(home, ".claude.json"), `{"mcpServers":{"ok":{"command":"ok"}}}`)
			servers, _, problems := Locate(Locations{Home: home})
			if len(problems) != 1 || !strings.Contains(problems[0].Error(), tt.want) || !strings.Contains(problems[0].Error(), tt.file) {
				t.Errorf("problems %v, want one naming %s and %q", problems, tt.file, tt.want)
			}
			if len(servers) != 1 || servers[0].Name != "ok" {
				t.Errorf("servers %+v, want only the good file's", servers)
			}
		})
	}
}
