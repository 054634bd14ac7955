package proofs_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/narrowd/narrowd/daemon"
	"github.com/narrowd/narrowd/parse"
	"github.com/narrowd/narrowd/proofs"
	"github.com/narrowd/narrowd/rules"
)

const writesRoot = "/home/dev/project"

// writesEngine judges with the standard profile (or another), lexically,
// and knows narrowd's own files under /home/dev (HOME is set there, and
// the XDG directories are unset, so the defaults are under it).
func writesEngine(t *testing.T, profile string) *daemon.Engine {
	t.Helper()
	t.Setenv("HOME", "/home/dev")
	for _, v := range []string{"XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR"} {
		t.Setenv(v, "")
	}
	eng, err := daemon.NewEngine(daemon.EngineConfig{Profile: profile, NoDisk: true, OwnFiles: []string{"/srv/narrowd/state"}})
	if err != nil {
		t.Fatal(err)
	}
	return eng
}

func bashCall(cmd string) rules.Call {
	return rules.Call{
		Agent: "claude", Event: "PreToolUse", Phase: rules.PreTool, Tool: "Bash",
		Cwd: writesRoot, Workspaces: []string{writesRoot},
		Input: map[string]any{"command": cmd},
	}
}

func fileCall(tool, path string) rules.Call {
	in := map[string]any{"file_path": path, "content": "x"}
	if tool == "Edit" {
		in = map[string]any{"file_path": path, "old_string": "a", "new_string": "b"}
	}
	return rules.Call{
		Agent: "claude", Event: "PreToolUse", Phase: rules.PreTool, Tool: tool,
		Cwd: writesRoot, Workspaces: []string{writesRoot}, Input: in,
	}
}

func patchCall(patch string) rules.Call {
	return rules.Call{
		Agent: "codex", Event: "PreToolUse", Phase: rules.PreTool, Tool: "apply_patch",
		Cwd: writesRoot, Workspaces: []string{writesRoot}, Input: map[string]any{"command": patch},
	}
}

// TestWritesAcceptance is issue 15 item 3 as calls: writes to standing
// configuration keep the ceiling (ask under standard), ordinary writes
// stay allowed, and anything that changes narrowd's own files or runs its
// administrative commands is denied with the file named.
func TestWritesAcceptance(t *testing.T) {
	eng := writesEngine(t, "standard")
	tests := []struct {
		name string
		call rules.Call
		want rules.Outcome
		// named must appear in a deny's reason.
		named string
	}{
		{"envrc", bashCall("echo x > .envrc"), rules.Ask, ""},
		{"claude-settings-write", fileCall("Write", writesRoot+"/.claude/settings.json"), rules.Ask, ""},
		{"vscode-tasks-edit", fileCall("Edit", writesRoot+"/.vscode/tasks.json"), rules.Ask, ""},
		{"git-hook-cp", bashCall("cp a .git/hooks/pre-commit"), rules.Ask, ""},
		{"workflow-sed", bashCall("sed -i s/a/b/ .github/workflows/ci.yml"), rules.Ask, ""},
		{"npmrc-tee", bashCall("tee .npmrc"), rules.Ask, ""},
		{"bin-touch", bashCall("touch node_modules/.bin/x"), rules.Ask, ""},
		{"pth-mv", bashCall("mv a .venv/lib/python3.12/site-packages/x.pth"), rules.Ask, ""},
		{"husky-sub-write", fileCall("Write", writesRoot+"/sub/.husky/pre-commit"), rules.Ask, ""},
		{"husky-sub-redirect", bashCall("echo x > sub/.husky/pre-commit"), rules.Ask, ""},
		{"claude-md", fileCall("Write", writesRoot+"/CLAUDE.md"), rules.Ask, ""},
		{"agents-md-append", bashCall("echo '- run make' >> AGENTS.md"), rules.Ask, ""},
		{"unknown-dotfile", bashCall("echo x > .foorc"), rules.Ask, ""},
		{"dot-dir", fileCall("Write", writesRoot+"/docs/.hidden/x.md"), rules.Ask, ""},
		{"mkdir-claude", bashCall("mkdir -p .claude/commands"), rules.Ask, ""},
		{"ln-to-hook", bashCall("ln -s .git/hooks/pre-commit h"), rules.Ask, ""},
		{"cp-dot-source", bashCall("cp -r stage/.claude ."), rules.Ask, ""},
		{"patch-adds-hook", patchCall("*** Begin Patch\n*** Add File: .husky/pre-commit\n+curl x | sh\n*** End Patch\n"), rules.Ask, ""},
		{"gitattributes", bashCall("printf '* filter=x\\n' > .gitattributes"), rules.Ask, ""},

		// A removal is standing configuration only for table entries not
		// marked removable: none of these is allowed, but only the first
		// two count as account-wide deletions (which standard refuses).
		{"rm-git", bashCall("rm -rf .git"), rules.Deny, ""},
		{"rm-claude-settings", bashCall("rm .claude/settings.json"), rules.Deny, ""},
		{"rm-venv", bashCall("rm -rf .venv"), rules.Ask, ""},
		{"rm-cache", bashCall("rm -rf .pytest_cache"), rules.Ask, ""},
		{"rm-pycache", bashCall("rm -rf src/__pycache__"), rules.Ask, ""},

		{"main-go", bashCall("echo x > src/main.go"), rules.Allow, ""},
		{"readme-write", fileCall("Write", writesRoot+"/README.md"), rules.Allow, ""},
		{"gitignore-edit", fileCall("Edit", writesRoot+"/.gitignore"), rules.Allow, ""},
		{"gitkeep", bashCall("touch .gitkeep"), rules.Allow, ""},
		{"makefile", fileCall("Write", writesRoot+"/Makefile"), rules.Allow, ""},
		{"sed-source", bashCall("sed -i s/a/b/ src/x.go"), rules.Allow, ""},
		{"patch-source", patchCall("*** Begin Patch\n*** Add File: src/a.go\n+package a\n*** End Patch\n"), rules.Allow, ""},
		{"read-workflow", bashCall("cat .github/workflows/ci.yml"), rules.Allow, ""},
		{"read-claude-settings", fileCall("Read", writesRoot+"/CLAUDE.md"), rules.Allow, ""},

		{"profile-write", fileCall("Write", "/home/dev/.config/narrowd/profile.toml"), rules.Deny, "/home/dev/.config/narrowd"},
		{"config-append", bashCall("echo x >> ~/.config/narrowd/config.toml"), rules.Deny, "/home/dev/.config/narrowd"},
		{"config-append-home", bashCall(`echo x >> "$HOME/.config/narrowd/config.toml"`), rules.Deny, "/home/dev/.config/narrowd"},
		{"state-rm", bashCall("rm -rf /home/dev/.local/state/narrowd/snapshots"), rules.Deny, "/home/dev/.local/state/narrowd"},
		{"configured-state", bashCall("cp x /srv/narrowd/state/grants.json"), rules.Deny, "/srv/narrowd/state"},
		{"editor", bashCall("vim ~/.config/narrowd/config.toml"), rules.Deny, "/home/dev/.config/narrowd"},
		{"inline-code", bashCall(`python3 -c "open('/home/dev/.config/narrowd/p.toml','w')"`), rules.Deny, "/home/dev/.config/narrowd"},
		{"sh-c", bashCall(`sh -c 'echo x > ~/.config/narrowd/p.toml'`), rules.Deny, "/home/dev/.config/narrowd"},
		{"patch-own", patchCall("*** Begin Patch\n*** Add File: /home/dev/.config/narrowd/p.toml\n+x\n*** End Patch\n"), rules.Deny, "/home/dev/.config/narrowd"},
		{"unit-file", bashCall("tee ~/.config/systemd/user/narrowd.service < unit"), rules.Deny, "narrowd.service"},
		{"unit-dropin", fileCall("Write", "/home/dev/.config/systemd/user/narrowd.service.d/override.conf"), rules.Deny, "narrowd.service.d"},
		{"allow-last", bashCall("narrowd allow --last"), rules.Deny, "narrowd allow --last"},
		{"label", bashCall("/usr/local/bin/narrowd label x"), rules.Deny, "narrowd label x"},
		{"install", bashCall("narrowd install claude && echo ok"), rules.Deny, "narrowd install claude"},
		{"hook", bashCall("narrowd-hook claude < p.json"), rules.Deny, "narrowd-hook claude"},

		{"audit-read", fileCall("Read", "/home/dev/.local/state/narrowd/audit/audit.jsonl"), rules.Ask, ""},
		{"narrowd-check", bashCall("narrowd check --profile strict < p.json"), rules.Allow, ""},
		{"narrowd-log", bashCall("narrowd log --last 5"), rules.Ask, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := eng.Judge(tt.call, rules.Session{})
			if v.Decision.Outcome != tt.want {
				t.Fatalf("outcome %s by %s (%s), want %s; evidence %+v", v.Decision.Outcome, v.Decision.Rule, v.Decision.Reason, tt.want, v.Evidence)
			}
			if tt.named != "" && !strings.Contains(v.Decision.Reason, tt.named) {
				t.Errorf("reason %q does not name %s", v.Decision.Reason, tt.named)
			}
		})
	}
}

// TestWritesStrictAndReadonly: the own-files refusal holds in every
// built-in profile, and standing-configuration writes never allow.
func TestWritesStrictAndReadonly(t *testing.T) {
	for _, profile := range []string{"strict", "readonly"} {
		eng := writesEngine(t, profile)
		for _, call := range []rules.Call{bashCall("echo x >> ~/.config/narrowd/config.toml"), bashCall("narrowd grants")} {
			if v := eng.Judge(call, rules.Session{}); v.Decision.Outcome != rules.Deny || v.Decision.Rule != "narrowd-own-files" {
				t.Errorf("%s %v: %s by %s, want deny by narrowd-own-files", profile, call.Input, v.Decision.Outcome, v.Decision.Rule)
			}
		}
		if v := eng.Judge(bashCall("echo x > .envrc"), rules.Session{}); v.Decision.Outcome == rules.Allow {
			t.Errorf("%s allowed a write to .envrc", profile)
		}
	}
}

// TestStandingWriteLabels: the evidence keeps scope at account_wide and
// carries a standing-config record whose detail names the tool.
func TestStandingWriteLabels(t *testing.T) {
	eng := writesEngine(t, "standard")
	v := eng.Judge(bashCall("echo x > .vscode/tasks.json"), rules.Session{})
	if got := v.Narrowed.Value(rules.Scope); got != "account_wide" {
		t.Errorf("scope %s, want account_wide", got)
	}
	found := false
	for _, e := range v.Evidence {
		if e.Kind == rules.KindStandingConfig && strings.Contains(e.Detail, "VS Code") {
			found = true
		}
	}
	if !found {
		t.Errorf("no standing-config evidence naming VS Code: %+v", v.Evidence)
	}
}

// TestWriteTargetsRelocate: a copy or move of a tree lists its targets
// only when the tree on disk holds no standing-configuration name.
func TestWriteTargetsRelocate(t *testing.T) {
	k, err := parse.DefaultKnowledge()
	if err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	for _, f := range []string{"clean/a/b.go", "dirty/x/.envrc", "hooked/.git/hooks/pre-commit", "file.txt"} {
		p := filepath.Join(ws, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ps := proofs.NewPaths([]string{ws}, nil, proofs.OSDisk{})
	tests := []struct {
		cmd  string
		want bool
	}{
		{"cp -r clean out", true},
		{"cp -a file.txt out", true},
		{"mkdir d && touch d/f && mv d x", true},
		{"jq . p.json > tmp.json && mv tmp.json p.json", true},
		{"cp -r dirty out", false},
		{"cp -r hooked out", false},
		{"cp -r . out", false},
		{"tar -xf a.tar -C clean", false},
		{"unzip a.zip -d newdir", false},
	}
	for _, tt := range tests {
		_, ok := proofs.WriteTargets(parse.Analyze(tt.cmd, k), ws, ps)
		if ok != tt.want {
			t.Errorf("WriteTargets(%q) complete=%v, want %v", tt.cmd, ok, tt.want)
		}
	}
}

// TestWritesProfileFile: a profile loaded from a file, and its
// symlink-resolved form, are narrowd's own: writes to either are denied,
// even when the file sits inside the workspace.
func TestWritesProfileFile(t *testing.T) {
	data, err := os.ReadFile("../rules/profiles/standard.toml")
	if err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	real := filepath.Join(ws, "policy", "team.toml")
	if err := os.MkdirAll(filepath.Dir(real), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(real, data, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(ws, "team.toml")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	eng, err := daemon.NewEngine(daemon.EngineConfig{Profile: link})
	if err != nil {
		t.Fatal(err)
	}
	at := func(c rules.Call) rules.Call { c.Cwd, c.Workspaces = ws, []string{ws}; return c }
	for _, call := range []rules.Call{
		at(fileCall("Edit", link)),
		at(fileCall("Write", real)),
		at(bashCall("sed -i s/ask/allow/ policy/team.toml")),
		at(bashCall("echo '[[rule]]' >> team.toml")),
	} {
		v := eng.Judge(call, rules.Session{})
		if v.Decision.Outcome != rules.Deny || !strings.Contains(v.Decision.Reason, "team.toml") {
			t.Errorf("%v: %s by %s (%s), want a deny naming team.toml", call.Input, v.Decision.Outcome, v.Decision.Rule, v.Decision.Reason)
		}
	}
	if v := eng.Judge(at(fileCall("Write", filepath.Join(ws, "policy", "notes.md"))), rules.Session{}); v.Decision.Outcome != rules.Allow {
		t.Errorf("a write beside the profile: %s by %s, want allow", v.Decision.Outcome, v.Decision.Rule)
	}
}
