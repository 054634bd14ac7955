package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/narrowd/narrowd/daemon"
	"github.com/narrowd/narrowd/daemon/mcp"
)

// TestPrintMCPStatus shows discovery for a person: counts, each server
// (a failed one says its tools are unlabelled), the tools that are not
// labelled, and the drifts, with names quoted as data.
func TestPrintMCPStatus(t *testing.T) {
	tests := []struct {
		name string
		st   *daemon.MCPStatus
		want []string
		not  []string
	}{
		{"off", nil, []string{"mcp        discovery off"}, nil},
		{"first round", &daemon.MCPStatus{}, []string{"discovery running its first round"}, nil},
		{"servers, tools and a drift", &daemon.MCPStatus{
			Rounds: 3,
			Servers: []daemon.MCPServer{
				{Agent: "claude", Name: "fs", Transport: "stdio", Tools: 2},
				{Agent: "cursor", Name: "evil\x1b[2J", Project: "/src/app", Transport: "http", Error: "server evil: context deadline exceeded"},
			},
			Tools: []daemon.MCPToolStatus{
				{Key: "fs/read_text_file", DefHash: "aaaa", State: daemon.MCPLabelled},
				{Key: "fs/write_file", DefHash: "bbbb", State: daemon.MCPDrifted},
			},
			Drifts:     []mcp.Drift{{Key: "fs/write_file", OldHash: strings.Repeat("1", 64), NewHash: strings.Repeat("2", 64), At: time.Unix(0, 0)}},
			DriftTotal: 1,
		}, []string{
			"2 servers, 2 tools: 1 labelled, 0 unlabelled, 1 drifted; 1 drifts seen",
			`server   claude "fs" (user, stdio): 2 tools`,
			`server   cursor "evil\x1b[2J" (project /src/app, http): not listed (its tools are unlabelled): "server evil: context deadline exceeded"`,
			`tool     "fs/write_file" drifted bbbb`,
			`drift    "fs/write_file" at `,
			`111111111111 → 222222222222 (its labels no longer apply; narrowd label "fs/write_file")`,
		}, []string{"\x1b", `"fs/read_text_file" labelled`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			printMCPStatus(&b, tt.st)
			for _, w := range tt.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("missing %q in:\n%s", w, b.String())
				}
			}
			for _, n := range tt.not {
				if strings.Contains(b.String(), n) {
					t.Errorf("has %q in:\n%s", n, b.String())
				}
			}
		})
	}
}
