package daemon

import (
	"path/filepath"
	"testing"

	"github.com/narrowd/narrowd/rules"
)

// TestCommandIs judges shell calls under a profile whose only grants are
// command_is("git status") and command_exactly("ls"): a call is allowed
// only when it is that one program, with literal words, and nothing else
// runs, is redirected or is set around it.
func TestCommandIs(t *testing.T) {
	t.Parallel()
	const profile = `
[[rule]]
id = "git-status"
when = 'command_is("git status")'
then = "allow"
reason = "team policy: git status with any proven arguments"

[[rule]]
id = "ls-bare"
when = 'command_exactly("ls")'
then = "allow"
reason = "team policy: ls and nothing more"
`
	e, err := NewEngine(EngineConfig{Profile: writeTemp(t, []byte(profile)), NoDisk: true})
	if err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	tests := []struct {
		command string
		cwd     string // relative to the workspace; "" is the workspace
		want    string // the rule that allowed, or "" for not allowed
	}{
		{command: "git status", want: "git-status"},
		{command: "git status --short", want: "git-status"},
		{command: "git status --short --branch", want: "git-status"},
		{command: "  git   status  ", want: "git-status"},
		{command: `'git' "status"`, want: "git-status"},
		{command: `\git status`, want: "git-status"},
		{command: "git status 2>/dev/null", want: "git-status"},
		{command: "git status 2>&1", want: "git-status"},
		{command: "git status >/dev/null </dev/null", want: "git-status"},
		{command: "git status # a comment; rm -rf ~/x", want: "git-status"},
		{command: "ls", want: "ls-bare"},

		{command: "ls -la"},
		{command: "git statusx"},
		{command: "git"},
		{command: "git status; rm -rf ~/x"},
		{command: "git status\nrm -rf ~/x"},
		{command: "git status && x"},
		{command: "git status || x"},
		{command: "git status | cat"},
		{command: "git status &"},
		{command: "! git status"},
		{command: "(git status)"},
		{command: "{ git status; }"},
		{command: "time git status"},
		{command: "while [[ 1 ]]; do git status; done"},
		{command: "if true; then git status; fi"},
		{command: "sudo git status"},
		{command: "env git status"},
		{command: "command git status"},
		{command: "exec git status"},
		{command: "nice git status"},
		{command: "xargs git status"},
		{command: "sh -c 'git status'"},
		{command: "FOO=1 git status"},
		{command: "GIT_PAGER=x git status"},
		{command: "/usr/bin/git status"},
		{command: "./git status"},
		{command: "git status $(x)"},
		{command: "git status `x`"},
		{command: "git status $HOME"},
		{command: `git status "$PWD"`},
		{command: "git status *"},
		{command: "git status ~"},
		{command: "git status {a,b}"},
		{command: "git -c core.pager=x status"},
		{command: "git status --no-such-flag"},
		{command: "git status --porcelain --no-such-flag=1"},
		{command: "git -C /tmp status"},
		{command: "git --no-pager status"},
		{command: "git status > out.txt"},
		{command: "git status >> ~/.bashrc"},
		{command: "git status 2>err.txt"},
		{command: "git status >&out.txt"},
		{command: "git status 3>/dev/null"},
		{command: "git status <<< x"},
		{command: "git status <<EOF\nx\nEOF"},
		{command: "git status < /etc/passwd"},
		{command: "git status >/dev/tcp/127.0.0.1/80"},
		{command: "git status; ", want: "git-status"},
		{command: "git status\x00; rm -rf ~"},
		{command: "git status\r"},
		{command: "f() { git status; }; f"},
		{command: "git status", cwd: "/etc"},
		{command: "git status /etc"},
		{command: "git status .env"},
		{command: "git status src/main.go", want: "git-status"},
		{command: "git status", cwd: "/"},
	}
	for _, tt := range tests {
		t.Run(tt.command, func(t *testing.T) {
			t.Parallel()
			cwd := ws
			if tt.cwd != "" {
				cwd = filepath.Join(ws, tt.cwd)
				if filepath.IsAbs(tt.cwd) {
					cwd = tt.cwd
				}
			}
			call := rules.Call{Agent: "claude", Phase: rules.PreTool, Tool: "Bash", Cwd: cwd, Workspaces: []string{ws},
				Input: map[string]any{"command": tt.command}}
			v := e.Judge(call, rules.Session{Known: true})
			got := ""
			if v.Decision.Outcome == rules.Allow {
				got = v.Decision.Rule
			}
			if got != tt.want {
				t.Errorf("%q: allowed by %q (%s %s: %s), want %q", tt.command, got, v.Decision.Outcome, v.Decision.Rule, v.Decision.Reason, tt.want)
			}
		})
	}
}
