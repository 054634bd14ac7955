package daemon

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/narrowd/narrowd/daemon/mcp"
	"github.com/narrowd/narrowd/internal/npmcache"
	"github.com/narrowd/narrowd/rules"
)

// The real MCP servers the tests start, pinned.
var (
	fsServer         = npmcache.Package{Name: "@modelcontextprotocol/server-filesystem", Version: "2026.8.31", Bin: "mcp-server-filesystem", IgnoreScripts: true}
	everythingServer = npmcache.Package{Name: "@modelcontextprotocol/server-everything", Version: "2026.8.31", Bin: "mcp-server-everything", IgnoreScripts: true}
)

// installServer returns the server's executable from the e2e suite's npm
// cache, installing it once. It skips the test with one loud line when
// npm or the registry is missing, and fails it when that is required.
func installServer(t *testing.T, s npmcache.Package) string {
	t.Helper()
	bin, err := npmcache.Install(s)
	if err != nil {
		msg := fmt.Sprintf("MCP E2E SKIPPED: %s: %v", s.ID(), err)
		if npmcache.Required() {
			t.Fatal("MCP E2E FAILED: " + msg + " (CI or NARROWD_E2E_REQUIRE=1 is set)")
		}
		fmt.Fprintln(os.Stderr, msg)
		t.Skip(msg)
	}
	return bin
}

// TestMCPRealServers discovers the real filesystem and everything
// servers from npm, started confined through narrowd exec --confine, as
// an agent's configuration declares them. Keys and def_hashes are the
// same on every listing; a labelled filesystem read of a workspace file
// is allowed and the same tool reading ~/.ssh/id_rsa is not; the
// everything server's tools, which nobody labelled, are never allowed.
func TestMCPRealServers(t *testing.T) {
	fsBin := installServer(t, fsServer)
	everythingBin := installServer(t, everythingServer)
	narrowd := narrowdBinary(t)

	home, ws := t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(home, ".ssh"), 0o700)
	os.WriteFile(filepath.Join(home, ".ssh", "id_rsa"), []byte("-----BEGIN OPENSSH PRIVATE KEY-----\n"), 0o600)
	os.WriteFile(filepath.Join(ws, "notes.md"), []byte("hello\n"), 0o600)
	// The filesystem server is given the home directory, as people do:
	// the label's scope is the ceiling of what the path can address.
	os.WriteFile(filepath.Join(home, ".claude.json"), []byte(fmt.Sprintf(`{"mcpServers":{
		"fs":{"command":%q,"args":[%q]},
		"everything":{"command":%q}}}`, fsBin, home, everythingBin)), 0o600)

	disc := func() *mcp.Discovery {
		return &mcp.Discovery{
			Locations: mcp.Locations{Home: home},
			Lister:    &mcp.Lister{Launcher: mcp.ExecLauncher{Narrowd: narrowd, TempDir: t.TempDir()}, Limits: mcp.Limits{Timeout: 60 * time.Second}},
			Registry:  mcp.NewRegistry(),
		}
	}
	first := disc()
	start := time.Now()
	first.Round(context.Background())
	t.Logf("figure: one discovery round of the filesystem and everything servers under narrowd exec --confine took %v", time.Since(start))
	for _, l := range first.Registry.Snapshot().Listings {
		if l.Err != "" {
			t.Fatalf("%s did not list: %s", l.Server.Name, l.Err)
		}
	}
	second := disc()
	second.Round(context.Background())
	a, b := first.Registry.Tools(), second.Registry.Tools()
	if len(a) < 10 || len(a) != len(b) {
		t.Fatalf("listed %d then %d tools", len(a), len(b))
	}
	hashOf := map[string]string{}
	for i := range a {
		if a[i].Key != b[i].Key || a[i].DefHash != b[i].DefHash {
			t.Errorf("listing %d differs: %s %s then %s %s", i, a[i].Key, a[i].DefHash, b[i].Key, b[i].DefHash)
		}
		hashOf[a[i].Key] = a[i].DefHash
	}
	for _, k := range []string{"fs/read_text_file", "fs/write_file", "everything/echo"} {
		if hashOf[k] == "" {
			t.Errorf("%s was not discovered; keys: %v", k, keysOf(hashOf))
		}
	}

	labels := filepath.Join(t.TempDir(), "labels.toml")
	os.WriteFile(labels, []byte(readLabels("fs/read_text_file", hashOf["fs/read_text_file"])), 0o600)
	e, err := NewEngine(EngineConfig{LabelFiles: []string{labels}, MCP: first.Registry})
	if err != nil {
		t.Fatal(err)
	}
	judge := func(tool string, input map[string]any) rules.Verdict {
		return e.Judge(rules.Call{Agent: "claude", Phase: rules.PreTool, Cwd: ws, Workspaces: []string{ws}, Tool: tool, Input: input}, rules.Session{Known: true})
	}
	if v := judge("mcp__fs__read_text_file", map[string]any{"path": filepath.Join(ws, "notes.md")}); v.Decision.Outcome != rules.Allow || v.Key != "fs/read_text_file" {
		t.Errorf("labelled read of a workspace file: %s %s (%s), want allow", v.Key, v.Decision.Outcome, v.Decision.Reason)
	}
	for _, p := range []string{filepath.Join(home, ".ssh", "id_rsa"), "~/.ssh/id_rsa", "notes.md", filepath.Join(ws, "..", filepath.Base(home), ".ssh", "id_rsa")} {
		if v := judge("mcp__fs__read_text_file", map[string]any{"path": p}); v.Decision.Outcome == rules.Allow {
			t.Errorf("read of %s through the labelled tool was allowed", p)
		}
	}
	for _, tool := range []string{"mcp__fs__write_file", "mcp__everything__echo", "mcp__everything__get-env"} {
		if v := judge(tool, map[string]any{"path": filepath.Join(ws, "notes.md"), "message": "hi"}); v.Decision.Outcome == rules.Allow || v.Ceiling != nil {
			t.Errorf("%s, which nobody labelled: %s with ceiling %v", tool, v.Decision.Outcome, v.Ceiling)
		}
	}
}

func keysOf(m map[string]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}
