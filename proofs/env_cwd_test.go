package proofs_test

import (
	"testing"

	"github.com/narrowd/narrowd/rules"
)

// TestEnvironmentRules pins the standard-profile outcome of every way a
// call sets a variable (one allowlist, safe_env) and of the calls that
// print the environment or shell state (a sensitive read).
func TestEnvironmentRules(t *testing.T) {
	eng := corpusEngine(t)
	tests := []struct {
		cmd   string
		allow bool
		rule  string // the deciding rule when not allowed; "" for any
	}{
		// Setting a variable not on safe_env keeps the ceiling, in
		// every form.
		{`FOO=1 rg x`, false, ""},
		{`foo=1 rg x`, false, ""},
		{`env FOO=1 rg x`, false, ""},
		{`export RIPGREP_CONFIG_PATH=/tmp/x; rg x`, false, ""},
		{`declare -x X=1; rg x`, false, ""},
		{`typeset -x X=1; rg x`, false, ""},
		{`set -a; X=1; rg x`, false, ""},
		{`set -a; x=1; rg x`, false, ""},
		{`x=1; set -o allexport; rg x`, false, ""},
		{`x=1; export x; rg x`, false, ""},
		{`sudo X=1 rg x`, false, ""},
		{`X=1; rg x`, false, ""},
		{`PATH=/tmp/evil:$PATH; rg x`, false, ""},
		{`https_proxy=http://evil; curl -s https://example.com`, false, ""},
		{`unset PATH; rg x`, false, ""},
		{`env -u PATH rg x`, false, ""},
		{`read -r PATH < f; rg x`, false, ""},
		{`for PATH in /tmp; do rg x; done`, false, ""},
		{`bash -ac 'x=1; rg x'`, false, ""},
		{`DEBUG='*' rg x`, false, ""},
		{`TMPDIR=/root sort a.txt`, false, ""},
		{`GOTOOLCHAIN=go1.99.0 go version`, false, ""},
		{`LC_ALL=/tmp/loc sort a.txt`, false, ""},
		// What safe_env allows stays allowed.
		{`LC_ALL=C sort a.txt`, true, ""},
		{`env LC_ALL=C sort a.txt`, true, ""},
		{`GIT_PAGER=cat git log -3`, true, ""},
		{`export LANG=C.UTF-8; ls`, true, ""},
		{`x=1; ls`, true, ""},
		{`for f in a b; do cat "$f"; done`, true, ""},
		{`set -euo pipefail; ls`, true, ""},
		// Printing the environment or shell state is a sensitive read.
		{`printenv`, false, "reads-sensitive"},
		{`printenv HOME`, false, "reads-sensitive"},
		{`env`, false, "reads-sensitive"},
		{`export`, false, "reads-sensitive"},
		{`export -p`, false, "reads-sensitive"},
		{`declare`, false, "reads-sensitive"},
		{`declare -p`, false, "reads-sensitive"},
		{`declare -p GITHUB_TOKEN`, false, "reads-sensitive"},
		{`declare -f`, false, "reads-sensitive"},
		{`declare -x`, false, "reads-sensitive"},
		{`typeset`, false, "reads-sensitive"},
		{`readonly -p`, false, "reads-sensitive"},
		{`set`, false, "reads-sensitive"},
		{`builtin export -p`, false, "reads-sensitive"},
		{`compgen -v`, false, "reads-sensitive"},
		{`compgen -e`, false, "reads-sensitive"},
		{`compgen -A export`, false, "reads-sensitive"},
		{`compgen -W '$(id)' x`, false, ""},
		{`alias`, false, ""},
	}
	for _, tc := range tests {
		v := eng.Judge(corpusCall(tc.cmd), rules.Session{})
		got := v.Decision.Outcome == rules.Allow
		if got != tc.allow || (tc.rule != "" && v.Decision.Rule != tc.rule) {
			t.Errorf("%q: allowed = %v by %s, want %v %s (narrowed %v)", tc.cmd, got, v.Decision.Rule, tc.allow, tc.rule, v.Narrowed)
		}
	}
}

// TestWorkingDirectoryRules: after a cd whose target is not proven the
// directory is unknown, and a program that reads it without naming it
// keeps the ceiling; a literal cd inside the workspace still narrows.
func TestWorkingDirectoryRules(t *testing.T) {
	eng := corpusEngine(t)
	tests := []struct {
		cmd   string
		allow bool
	}{
		{`cd; ls`, false},
		{`cd -; grep -r x`, false},
		{`cd -P foo; ls`, false},
		{`cd -L foo; ls`, false},
		{`cd -e foo; ls`, false},
		{`pushd x; ls`, false},
		{`popd; ls`, false},
		{`cd "$D"; cat a`, false},
		{`cd $(mktemp -d); ls`, false},
		{`cd; rg x`, false},
		{`cd; find . -name x`, false},
		{`cd; du`, false},
		{`cd; git status`, false},
		{`cd; cat a`, false},
		{`cd link/../etc && cat passwd`, false},
		{`cd src && cd ../etc && cat passwd`, false},
		{`cd src && bash -c 'cd ../etc && cat passwd'`, false},
		{`cd /home/dev/project/.. && ls`, false},
		{`command -p cd /etc; ls`, false},
		{`shopt -s lastpipe; true | cd sub; ls`, false},
		{`CDPATH=/etc cd ssl && ls`, false},
		{`export CDPATH=/; cd etc && cat passwd`, false},
		{`for d in a b; do cd "$d"; ls; done`, false},
		// Proven forms.
		{`cd sub && ls`, true},
		{`cd sub && cat a`, true},
		{`cd sub && grep -rn x .`, true},
		{`cd -- sub && ls`, true},
		{`(cd sub && ls); ls`, true},
		{`cd /home/dev/project && ls`, true},
		{`cd; echo done`, true},
		{`cd; cat /home/dev/project/a`, true},
		{`command -p cd sub; ls`, true},
	}
	for _, tc := range tests {
		v := eng.Judge(corpusCall(tc.cmd), rules.Session{})
		if got := v.Decision.Outcome == rules.Allow; got != tc.allow {
			t.Errorf("%q: allowed = %v, want %v (%s by %s, narrowed %v)", tc.cmd, got, tc.allow, v.Decision.Outcome, v.Decision.Rule, v.Narrowed)
		}
	}
}
