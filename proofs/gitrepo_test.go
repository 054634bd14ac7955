package proofs_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/narrowd/narrowd/daemon"
	"github.com/narrowd/narrowd/rules"
)

// gitWorld builds repository states with the real git, and judges calls
// in them with the engine reading the real disk.
type gitWorld struct {
	t   *testing.T
	git string
	eng *daemon.Engine
	// home holds the person's global config for the judged calls.
	home string
}

func newGitWorld(t *testing.T) *gitWorld {
	t.Helper()
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed")
	}
	eng, err := daemon.NewEngine(daemon.EngineConfig{})
	if err != nil {
		t.Fatal(err)
	}
	// The engine reads the person's git config where git does: point it
	// at an empty home, so the machine's own config does not count.
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("GIT_CONFIG_GLOBAL", "")
	t.Setenv("GIT_CONFIG_SYSTEM", "")
	return &gitWorld{t: t, git: git, eng: eng, home: home}
}

// run runs the real git to build a state (never to judge one).
func (w *gitWorld) run(dir string, args ...string) {
	w.t.Helper()
	cmd := exec.Command(w.git, args...)
	cmd.Dir = dir
	cmd.Env = []string{"HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "PATH=" + os.Getenv("PATH")}
	if out, err := cmd.CombinedOutput(); err != nil {
		w.t.Fatalf("git %v: %v: %s", args, err, out)
	}
}

func write(t *testing.T, name, data string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(name, mode); err != nil {
		t.Fatal(err)
	}
}

func appendFile(t *testing.T, name, data string) {
	t.Helper()
	f, err := os.OpenFile(name, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(data); err != nil {
		t.Fatal(err)
	}
}

// repo is a fresh workspace holding `git init` output with one commit.
func (w *gitWorld) repo() string {
	w.t.Helper()
	ws := w.t.TempDir()
	w.run(ws, "init", "-q", "-b", "main")
	write(w.t, filepath.Join(ws, "README.md"), "hello\n", 0o644)
	w.run(ws, "add", "README.md")
	w.run(ws, "commit", "-q", "-m", "init")
	return ws
}

func (w *gitWorld) judge(ws, cmd string) rules.Verdict {
	call := rules.Call{
		Agent: "claude", Event: "PreToolUse", Phase: rules.PreTool, Tool: "Bash",
		Cwd: ws, Workspaces: []string{ws},
		Input: map[string]any{"command": cmd},
	}
	return w.eng.Judge(call, rules.Session{})
}

func hasKind(v rules.Verdict, kind rules.EvidenceKind) string {
	for _, e := range v.Evidence {
		if e.Kind == kind {
			return e.Detail
		}
	}
	return ""
}

// TestGitOrdinaryRepo: a fresh repository and a typical clone's config
// still allow the everyday reads.
func TestGitOrdinaryRepo(t *testing.T) {
	w := newGitWorld(t)
	ws := w.repo()
	clone := `[remote "origin"]
	url = https://github.com/narrowd/narrowd.git
	fetch = +refs/heads/*:refs/remotes/origin/*
[branch "main"]
	remote = origin
	merge = refs/heads/main
[lfs]
	repositoryformatversion = 0
`
	appendFile(t, filepath.Join(ws, ".git/config"), clone)
	write(t, filepath.Join(ws, "src/a.go"), "package a\n", 0o644)
	for _, cmd := range []string{"git status", "git log --oneline -5", "git diff", "git show HEAD", "git -C src status", "cd src && git log"} {
		v := w.judge(ws, cmd)
		if v.Decision.Outcome != rules.Allow {
			t.Errorf("%q in an ordinary repository: %s by %s: %s", cmd, v.Decision.Outcome, v.Decision.Rule, v.Decision.Reason)
		}
		if hasKind(v, "git-state-ordinary") == "" {
			t.Errorf("%q: no git-state-ordinary evidence", cmd)
		}
	}
}

// TestGitHostileStates: each state git would act on keeps the ceiling for
// the call that meets it.
func TestGitHostileStates(t *testing.T) {
	w := newGitWorld(t)
	tests := []struct {
		name  string
		setup func(t *testing.T, ws string)
		cmd   string
	}{
		{"fsmonitor", func(t *testing.T, ws string) {
			appendFile(t, filepath.Join(ws, ".git/config"), "[core]\n\tfsmonitor = touch pwned\n")
		}, "git status"},
		{"pager", func(t *testing.T, ws string) {
			appendFile(t, filepath.Join(ws, ".git/config"), "[core]\n\tpager = sh -c id\n")
		}, "git log"},
		{"worktree", func(t *testing.T, ws string) {
			appendFile(t, filepath.Join(ws, ".git/config"), "[core]\n\tworktree = /\n")
		}, "git status"},
		{"include", func(t *testing.T, ws string) {
			write(t, filepath.Join(ws, "inc.cfg"), "[core]\n\tfsmonitor = touch pwned\n", 0o644)
			appendFile(t, filepath.Join(ws, ".git/config"), "[include]\n\tpath = ../inc.cfg\n")
		}, "git status"},
		{"includeif", func(t *testing.T, ws string) {
			write(t, filepath.Join(ws, "inc.cfg"), "[core]\n\tpager = id\n", 0o644)
			appendFile(t, filepath.Join(ws, ".git/config"), "[includeIf \"gitdir:/\"]\n\tpath = ../inc.cfg\n")
		}, "git log"},
		{"old-style-section", func(t *testing.T, ws string) {
			appendFile(t, filepath.Join(ws, ".git/config"), "[Core]\nfsmonitor\n")
		}, "git status"},
		{"old-style-subsection", func(t *testing.T, ws string) {
			appendFile(t, filepath.Join(ws, ".git/config"), "[diff.Evil]\n\ttextconv = id\n")
		}, "git diff"},
		{"bom", func(t *testing.T, ws string) {
			b, _ := os.ReadFile(filepath.Join(ws, ".git/config"))
			write(t, filepath.Join(ws, ".git/config"), "\xef\xbb\xbf[core]\n\tfsmonitor = id\n"+string(b), 0o644)
		}, "git status"},
		{"comment-continuation", func(t *testing.T, ws string) {
			appendFile(t, filepath.Join(ws, ".git/config"), "[core]\n# a note \\\n\tfsmonitor = id\n")
		}, "git status"},
		{"value-continuation", func(t *testing.T, ws string) {
			appendFile(t, filepath.Join(ws, ".git/config"), "[user]\n\tname = a \\\n\tb\n[core]\tfsmonitor = id\n")
		}, "git status"},
		{"same-line-key", func(t *testing.T, ws string) {
			appendFile(t, filepath.Join(ws, ".git/config"), "[core] pager = id\n")
		}, "git log"},
		{"config-worktree", func(t *testing.T, ws string) {
			appendFile(t, filepath.Join(ws, ".git/config"), "[extensions]\n\tworktreeConfig = true\n")
			write(t, filepath.Join(ws, ".git/config.worktree"), "[core]\n\tfsmonitor = id\n", 0o644)
		}, "git status"},
		{"alias-is-not-inert", func(t *testing.T, ws string) {
			appendFile(t, filepath.Join(ws, ".git/config"), "[alias]\n\tst = !id\n")
		}, "git status"},
		{"credential-url", func(t *testing.T, ws string) {
			appendFile(t, filepath.Join(ws, ".git/config"), "[remote \"origin\"]\n\turl = https://user:ghp_secret@github.com/x/y\n")
		}, "git log"},
		{"token-url", func(t *testing.T, ws string) {
			appendFile(t, filepath.Join(ws, ".git/config"), "[remote \"origin\"]\n\turl = https://ghp_secret@github.com/x/y\n")
		}, "git log"},
		{"ext-transport", func(t *testing.T, ws string) {
			appendFile(t, filepath.Join(ws, ".git/config"), "[remote \"origin\"]\n\turl = ext::sh -c id\n")
		}, "git log"},
		{"hooks-path", func(t *testing.T, ws string) {
			appendFile(t, filepath.Join(ws, ".git/config"), "[core]\n\thooksPath = .githooks\n")
		}, "git status"},
		{"alternate-refs", func(t *testing.T, ws string) {
			appendFile(t, filepath.Join(ws, ".git/config"), "[core]\n\talternateRefsCommand = id\n")
		}, "git log"},
		{"tar-command", func(t *testing.T, ws string) {
			appendFile(t, filepath.Join(ws, ".git/config"), "[tar \"tgz\"]\n\tcommand = id\n")
		}, "git archive HEAD"},
		{"submodule-recurse", func(t *testing.T, ws string) {
			appendFile(t, filepath.Join(ws, ".git/config"), "[submodule]\n\trecurse = true\n")
		}, "git log"},
		{"unreadable-config", func(t *testing.T, ws string) {
			appendFile(t, filepath.Join(ws, ".git/config"), "[core\n")
		}, "git log"},
		{"gitfile-planted", func(t *testing.T, ws string) {
			planted := filepath.Join(ws, "vendor/planted")
			w.run(ws, "init", "-q", "--bare", planted)
			appendFile(t, filepath.Join(planted, "config"), "[core]\n\tfsmonitor = id\n")
			sub := filepath.Join(ws, "sub")
			write(t, filepath.Join(sub, ".git"), "gitdir: ../vendor/planted\n", 0o644)
		}, "cd sub && git status"},
		{"commondir", func(t *testing.T, ws string) {
			planted := filepath.Join(ws, "vendor/common")
			w.run(ws, "init", "-q", "--bare", planted)
			appendFile(t, filepath.Join(planted, "config"), "[core]\n\tpager = id\n")
			write(t, filepath.Join(ws, ".git/commondir"), "../vendor/common\n", 0o644)
		}, "git log"},
		{"bare-in-subdir-cd", func(t *testing.T, ws string) {
			sub := filepath.Join(ws, "sub")
			w.run(ws, "init", "-q", "--bare", sub)
			appendFile(t, filepath.Join(sub, "config"), "[core]\n\tpager = id\n")
		}, "cd sub && git log"},
		{"bare-in-subdir-C", func(t *testing.T, ws string) {
			sub := filepath.Join(ws, "sub")
			w.run(ws, "init", "-q", "--bare", sub)
			appendFile(t, filepath.Join(sub, "config"), "[core]\n\tfsmonitor = id\n")
		}, "git -C sub status"},
		{"bare-plain-files", func(t *testing.T, ws string) {
			// HEAD, objects/, refs/ and config in a plain directory.
			sub := filepath.Join(ws, "data")
			write(t, filepath.Join(sub, "HEAD"), "ref: refs/heads/main\n", 0o644)
			write(t, filepath.Join(sub, "objects/.keep"), "", 0o644)
			write(t, filepath.Join(sub, "refs/.keep"), "", 0o644)
			write(t, filepath.Join(sub, "config"), "[core]\n\tfsmonitor = id\n", 0o644)
		}, "git -C data/refs status"},
		{"symlinked-dir", func(t *testing.T, ws string) {
			other := t.TempDir()
			w.run(other, "init", "-q")
			appendFile(t, filepath.Join(other, ".git/config"), "[core]\n\tpager = id\n")
			if err := os.Symlink(other, filepath.Join(ws, "link")); err != nil {
				t.Fatal(err)
			}
		}, "cd link && git log"},
		{"pre-commit", func(t *testing.T, ws string) {
			write(t, filepath.Join(ws, ".git/hooks/pre-commit"), "#!/bin/sh\nid\n", 0o755)
		}, "git commit -m x"},
		{"reference-transaction", func(t *testing.T, ws string) {
			write(t, filepath.Join(ws, ".git/hooks/reference-transaction"), "#!/bin/sh\nid\n", 0o755)
		}, "git branch x"},
		{"post-index-change", func(t *testing.T, ws string) {
			write(t, filepath.Join(ws, ".git/hooks/post-index-change"), "#!/bin/sh\nid\n", 0o755)
		}, "git status"},
		{"hook-symlink", func(t *testing.T, ws string) {
			if err := os.Symlink("/bin/true", filepath.Join(ws, ".git/hooks/post-index-change")); err != nil {
				t.Fatal(err)
			}
		}, "git diff"},
		{"partial-clone", func(t *testing.T, ws string) {
			appendFile(t, filepath.Join(ws, ".git/config"), "[remote \"origin\"]\n\turl = https://example.com/r\n\tpromisor = true\n[extensions]\n\tpartialClone = origin\n")
		}, "git show HEAD"},
		{"alternates", func(t *testing.T, ws string) {
			write(t, filepath.Join(ws, ".git/objects/info/alternates"), "/home/other/.git/objects\n", 0o644)
		}, "git log"},
		{"submodules", func(t *testing.T, ws string) {
			write(t, filepath.Join(ws, ".gitmodules"), "[submodule \"x\"]\n\tpath = x\n\turl = https://example.com/x\n", 0o644)
		}, "git status"},
		{"dotgit-symlink", func(t *testing.T, ws string) {
			other := t.TempDir()
			w.run(other, "init", "-q")
			if err := os.Rename(filepath.Join(ws, ".git"), filepath.Join(ws, ".git-old")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(other, ".git"), filepath.Join(ws, ".git")); err != nil {
				t.Fatal(err)
			}
		}, "git log"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ws := w.repo()
			tc.setup(t, ws)
			v := w.judge(ws, tc.cmd)
			if v.Decision.Outcome == rules.Allow {
				t.Fatalf("%q allowed in a hostile repository (%s)", tc.cmd, v.Decision.Reason)
			}
			if v.Narrowed.Levels != v.Ceiling.Levels {
				t.Errorf("%q narrowed to %v, want its ceiling", tc.cmd, v.Narrowed)
			}
			if d := hasKind(v, "git-config-runs-code"); d == "" && !strings.Contains(tc.cmd, "commit") {
				t.Errorf("%q: no finding about the repository; evidence %v", tc.cmd, v.Evidence)
			}
		})
	}
}

// TestGitSubmoduleWorktree: inside a submodule, whose config names its
// own worktree, reads still narrow; a core.worktree naming anything else
// keeps the ceiling.
func TestGitSubmoduleWorktree(t *testing.T) {
	w := newGitWorld(t)
	ws := w.repo()
	modDir := filepath.Join(ws, ".git/modules/lib")
	if err := os.MkdirAll(filepath.Dir(modDir), 0o755); err != nil {
		t.Fatal(err)
	}
	w.run(ws, "init", "-q", "--separate-git-dir", modDir, filepath.Join(ws, "lib"))
	appendFile(t, filepath.Join(modDir, "config"), "[core]\n\tworktree = ../../../lib\n")
	if v := w.judge(ws, "cd lib && git log"); v.Decision.Outcome != rules.Allow {
		t.Errorf("git log in a submodule: %s (%s)", v.Decision.Outcome, v.Decision.Reason)
	}
	appendFile(t, filepath.Join(modDir, "config"), "[core]\n\tworktree = ../../..\n")
	if v := w.judge(ws, "cd lib && git log"); v.Decision.Outcome == rules.Allow {
		t.Errorf("git log with core.worktree elsewhere allowed")
	}
}

// TestGitLinkedWorktree: a workspace that is a linked worktree of a
// repository elsewhere narrows (its gitdir points back at it); a gitfile
// planted to point at another repository of the person's does not.
func TestGitLinkedWorktree(t *testing.T) {
	w := newGitWorld(t)
	main := w.repo()
	wt := filepath.Join(t.TempDir(), "wt")
	w.run(main, "worktree", "add", "-q", wt)
	if v := w.judge(wt, "git status"); v.Decision.Outcome != rules.Allow {
		t.Errorf("git status in a linked worktree: %s (%s)", v.Decision.Outcome, v.Decision.Reason)
	}
	ws := w.repo()
	other := w.repo()
	write(t, filepath.Join(ws, "sub/.git"), "gitdir: "+filepath.Join(other, ".git")+"\n", 0o644)
	if v := w.judge(ws, "cd sub && git log"); v.Decision.Outcome == rules.Allow {
		t.Errorf("a gitfile pointing at another repository allowed")
	}
	// commondir outside the worktrees layout.
	write(t, filepath.Join(ws, ".git/commondir"), filepath.Join(other, ".git")+"\n", 0o644)
	if v := w.judge(ws, "git log"); v.Decision.Outcome == rules.Allow {
		t.Errorf("a commondir pointing at another repository allowed")
	}
}

// TestGitOutsideWorkspace: git that runs in another repository (cd there,
// -C there) keeps the ceiling however ordinary that repository is.
func TestGitOutsideWorkspace(t *testing.T) {
	w := newGitWorld(t)
	ws := w.repo()
	other := w.repo()
	for _, cmd := range []string{"cd " + other + " && git log -p", "git -C " + other + " log", "cd .. && git status"} {
		if v := w.judge(ws, cmd); v.Decision.Outcome == rules.Allow {
			t.Errorf("%q allowed", cmd)
		}
	}
}

// TestGitHookOnlyForItsForm: an executable hook keeps the ceiling for the
// forms that run it, not for reads that never do.
func TestGitHookOnlyForItsForm(t *testing.T) {
	w := newGitWorld(t)
	ws := w.repo()
	write(t, filepath.Join(ws, ".git/hooks/pre-commit"), "#!/bin/sh\nexit 0\n", 0o755)
	write(t, filepath.Join(ws, ".git/hooks/pre-push.sample"), "#!/bin/sh\nexit 0\n", 0o755)
	for _, cmd := range []string{"git log", "git status", "git show HEAD"} {
		if v := w.judge(ws, cmd); v.Decision.Outcome != rules.Allow {
			t.Errorf("%q with only a pre-commit hook: %s (%s)", cmd, v.Decision.Outcome, v.Decision.Reason)
		}
	}
}

// TestGitGlobalConfig: the person's own config is trusted, except where
// it sends git into the workspace.
func TestGitGlobalConfig(t *testing.T) {
	w := newGitWorld(t)
	hooks := t.TempDir()
	write(t, filepath.Join(hooks, "post-index-change"), "#!/bin/sh\nexit 0\n", 0o755)
	tests := []struct {
		name   string
		global func(ws string) string
		cmd    string
		allow  bool
	}{
		{"programs-trusted", func(string) string {
			return "[core]\n\tpager = less\n\teditor = vim\n[credential]\n\thelper = store\n[filter \"lfs\"]\n\tclean = git-lfs clean -- %f\n"
		}, "git status", true},
		{"hooks-path-relative", func(string) string { return "[core]\n\thooksPath = .husky\n" }, "git status", false},
		{"hooks-path-absolute-hook", func(string) string { return "[core]\n\thooksPath = " + hooks + "\n" }, "git status", false},
		{"hooks-path-absolute-log", func(string) string { return "[core]\n\thooksPath = " + hooks + "\n" }, "git log", true},
		{"include-into-workspace", func(ws string) string {
			write(t, filepath.Join(ws, "team.gitconfig"), "[user]\n\tname = x\n", 0o644)
			return "[include]\n\tpath = " + filepath.Join(ws, "team.gitconfig") + "\n"
		}, "git log", false},
		{"includeif-hooks-path", func(string) string {
			write(t, filepath.Join(w.home, "work.gitconfig"), "[core]\n\thooksPath = hooks\n", 0o644)
			return "[includeIf \"gitdir:~/nowhere/\"]\n\tpath = ~/work.gitconfig\n"
		}, "git status", false},
		{"include-tilde-user", func(string) string { return "[include]\n\tpath = ~root/x\n" }, "git log", false},
		{"worktree", func(string) string { return "[core]\n\tworktree = /\n" }, "git log", false},
		{"bad-line", func(string) string { return "[core\n" }, "git log", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ws := w.repo()
			write(t, filepath.Join(w.home, ".gitconfig"), tc.global(ws), 0o644)
			v := w.judge(ws, tc.cmd)
			if got := v.Decision.Outcome == rules.Allow; got != tc.allow {
				t.Errorf("%q allowed %v, want %v (%s)", tc.cmd, got, tc.allow, v.Decision.Reason)
			}
		})
	}
}
