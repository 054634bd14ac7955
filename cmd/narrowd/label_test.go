package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/narrowd/narrowd/rules"
)

// searchServer is an MCP server over streamable HTTP with one tool.
func searchServer(desc string) *httptest.Server {
	return httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server {
		s := sdk.NewServer(&sdk.Implementation{Name: "search"}, nil)
		yes := true
		s.AddTool(&sdk.Tool{
			Name: "search", Description: desc,
			InputSchema: map[string]any{"type": "object", "properties": map[string]any{"root": map[string]any{"type": "string"}, "query": map[string]any{"type": "string"}}},
			Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &yes},
		}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{}, nil
		})
		return s
	}, &sdk.StreamableHTTPOptions{Stateless: true, JSONResponse: true}))
}

const searchAnswers = `read
read: §3.1 searching changes no state
account_wide
account_wide: §4.3 the root is unconstrained
reversible
reversible: §3.3 reads
none
none: the person says so, but the hint raises it
none
none: no spend
first_party_structured
first_party_structured: the person says so, but the hint raises it
yes
§4.3 the root is the main target
no
no
grep
root
query
`

// TestLabelDiscovers labels a tool whose definition narrowd gets by
// listing the server an agent configures; the record binds to the hash
// discovery computes, and openWorldHint=true raises egress and
// returns_class above the person's answers.
func TestLabelDiscovers(t *testing.T) {
	srv := searchServer("Search files under a root.")
	defer srv.Close()
	home, proj := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(home, ".claude.json"), []byte(fmt.Sprintf(`{"mcpServers":{"search":{"type":"http","url":%q}}}`, srv.URL)), 0o600)
	labels := filepath.Join(proj, ".narrowd", "labels.toml")
	var out, errb bytes.Buffer
	e := env{stdin: strings.NewReader(searchAnswers), stdout: &out, stderr: &errb, getenv: func(k string) string {
		return map[string]string{"HOME": home}[k]
	}}
	code := run(context.Background(), e, []string{"label", "--labels", labels, "--project", proj, "--reviewer", "r", "--method", "m", "search/search"})
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errb.String(), out.String())
	}
	data, err := os.ReadFile(labels)
	if err != nil {
		t.Fatal(err)
	}
	c, err := rules.LoadCatalog(labels, data)
	if err != nil {
		t.Fatal(err)
	}
	recs := c.History("search/search")
	if len(recs) != 1 {
		t.Fatalf("%d records", len(recs))
	}
	r := recs[0]
	if !strings.Contains(out.String(), r.DefHash) || !strings.Contains(out.String(), `claude server "search"`) {
		t.Errorf("output does not show the hash %s and the server it came from:\n%s", r.DefHash, out.String())
	}
	if r.Labels.Value(rules.Egress) != "external" || r.Labels.Value(rules.ReturnsClass) != "third_party_content" || r.Labels.Value(rules.Mutation) != "read" {
		t.Errorf("labels %v: openWorldHint=true must raise egress and returns_class, and readOnlyHint=true lower nothing", r.Labels)
	}
	if r.Input != (rules.InputSpec{Kind: rules.InputGrep, Field: "query", Dir: "root"}) {
		t.Errorf("input %+v", r.Input)
	}
}

// TestLabelAmbiguous: two agents configure servers of one name that list
// different definitions; label refuses to guess which one is meant.
func TestLabelAmbiguous(t *testing.T) {
	a, b := searchServer("Search files."), searchServer("Search files. Also upload them.")
	defer a.Close()
	defer b.Close()
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, ".claude.json"), []byte(fmt.Sprintf(`{"mcpServers":{"search":{"type":"http","url":%q}}}`, a.URL)), 0o600)
	os.MkdirAll(filepath.Join(home, ".cursor"), 0o700)
	os.WriteFile(filepath.Join(home, ".cursor", "mcp.json"), []byte(fmt.Sprintf(`{"mcpServers":{"search":{"url":%q}}}`, b.URL)), 0o600)
	labels := filepath.Join(t.TempDir(), "labels.toml")
	var out, errb bytes.Buffer
	e := env{stdin: strings.NewReader(searchAnswers), stdout: &out, stderr: &errb, getenv: func(k string) string {
		return map[string]string{"HOME": home}[k]
	}}
	if code := run(context.Background(), e, []string{"label", "--labels", labels, "--project", home, "search/search"}); code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	if !strings.Contains(errb.String(), "2 definitions") || !strings.Contains(errb.String(), "--agent") {
		t.Errorf("stderr %q", errb.String())
	}
	if _, err := os.Stat(labels); err == nil {
		t.Error("a labels file was written")
	}
	// --agent picks one.
	out.Reset()
	errb.Reset()
	e.stdin = strings.NewReader(searchAnswers)
	if code := run(context.Background(), e, []string{"label", "--labels", labels, "--project", home, "--agent", "cursor", "--reviewer", "r", "--method", "m", "search/search"}); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "Also upload them.") {
		t.Errorf("--agent cursor did not show cursor's definition:\n%s", out.String())
	}
}

// TestHostFloors: explicit hints only raise; relaxing hints, absent hints
// and hints of the wrong type set no floor, but every hint is recorded.
func TestHostFloors(t *testing.T) {
	tests := []struct {
		name string
		ann  map[string]any
		want map[rules.Dim]string
	}{
		{"absent", nil, map[rules.Dim]string{}},
		{"relaxing hints", map[string]any{"readOnlyHint": true, "destructiveHint": false, "openWorldHint": false, "idempotentHint": true}, map[rules.Dim]string{}},
		{"not read-only", map[string]any{"readOnlyHint": false}, map[rules.Dim]string{rules.Mutation: "create"}},
		{"destructive", map[string]any{"readOnlyHint": false, "destructiveHint": true}, map[rules.Dim]string{rules.Mutation: "delete"}},
		{"contradiction", map[string]any{"readOnlyHint": true, "destructiveHint": true}, map[rules.Dim]string{rules.Mutation: "delete"}},
		{"open world", map[string]any{"openWorldHint": true}, map[rules.Dim]string{rules.Egress: "external", rules.ReturnsClass: "third_party_content"}},
		{"irreversible", map[string]any{"consequenceClass": "irreversible"}, map[rules.Dim]string{rules.Reversibility: "irreversible"}},
		{"compensatable", map[string]any{"consequenceClass": "compensatable"}, map[rules.Dim]string{rules.Reversibility: "reversible_with_effort"}},
		{"reversible", map[string]any{"consequenceClass": "reversible"}, map[rules.Dim]string{}},
		{"wrong types", map[string]any{"destructiveHint": "true", "openWorldHint": 1}, map[rules.Dim]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			floors, asserted := hostFloors(tt.ann)
			got := map[rules.Dim]string{}
			for d, f := range floors {
				got[d] = d.Name(f.level)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("floors %v, want %v", got, tt.want)
			}
			if len(asserted) != len(tt.ann) {
				t.Errorf("recorded %v, want every hint of %v", asserted, tt.ann)
			}
		})
	}
}
