package parse

import (
	"slices"
	"strings"
	"testing"
)

// TestGitRepoForms: every form the git_repo table lists is a git
// subcommand of the table, so a typo cannot silently leave a form with
// the all-hooks default.
func TestGitRepoForms(t *testing.T) {
	t.Parallel()
	k := mustKnowledge(t)
	git := k.cmds["git"]
	for form := range k.gitRepo.forms {
		s := git
		for _, w := range strings.Fields(form) {
			if s = s.Sub[w]; s == nil {
				t.Errorf("git_repo.forms %q is not a git subcommand in the table", form)
				break
			}
		}
	}
	if len(k.gitRepo.config) == 0 || len(k.gitRepo.hooks) == 0 {
		t.Fatal("git_repo.config or git_repo.hooks is empty")
	}
}

// TestClassifyGitRepo pins what a git form carries to the repository
// proofs: its form, -C directory, hooks and submodules, whether its writes
// are standing configuration, and the secret reads.
func TestClassifyGitRepo(t *testing.T) {
	t.Parallel()
	k := mustKnowledge(t)
	tests := []struct {
		cmd        string
		form, dir  string
		hook       string // a hook the form must check, or "-" for none
		submodules bool
		global     bool
		secret     bool // reads .git/config (a sensitive name)
		known      bool
	}{
		{cmd: "git status", form: "status", hook: "post-index-change", submodules: true, known: true},
		{cmd: "git -C sub status -s", form: "status", dir: "sub", hook: "post-index-change", submodules: true, known: true},
		{cmd: "git log --oneline", form: "log", hook: "-", known: true},
		{cmd: "git branch", form: "branch", hook: "reference-transaction", known: true},
		{cmd: "git branch x", form: "branch", hook: "reference-transaction", global: true, known: true},
		{cmd: "git branch -d x", form: "branch", hook: "reference-transaction", global: true, known: true},
		{cmd: "git tag v1", form: "tag", hook: "reference-transaction", global: true, known: true},
		{cmd: "git stash drop", form: "stash drop", hook: "reference-transaction", global: true, known: true},
		{cmd: "git update-ref -d refs/heads/x", form: "update-ref", hook: "reference-transaction", global: true, known: true},
		{cmd: "git symbolic-ref HEAD", form: "symbolic-ref", known: true, hook: "reference-transaction"},
		{cmd: "git remote add o https://example.com/r", form: "remote add", global: true, known: true, hook: "-"},
		{cmd: "git config user.name x", form: "config", global: true, known: true, hook: "-"},
		{cmd: "git config user.email", form: "config", known: true, hook: "-"},
		{cmd: "git config --get core.hooksPath", form: "config", known: true, hook: "-"},
		{cmd: "git config --get remote.origin.url", form: "config", secret: true, known: true, hook: "-"},
		{cmd: "git config remote.origin.url", form: "config", secret: true, known: true, hook: "-"},
		{cmd: "git config -l", form: "config", secret: true, known: true, hook: "-"},
		{cmd: "git config --global -l", form: "config", secret: true, known: true, hook: "-"},
		{cmd: "git config --get-regexp user", form: "config", secret: true, known: true, hook: "-"},
		{cmd: "git config http.extraHeader", form: "config", secret: true, known: true, hook: "-"},
		{cmd: "git remote -v", form: "remote", secret: true, known: true, hook: "-"},
		{cmd: "git remote", form: "remote", known: true, hook: "-"},
		{cmd: "git var -l", form: "var", secret: true, known: true, hook: "-"},
		{cmd: "git var GIT_COMMITTER_IDENT", form: "var", known: true, hook: "-"},
		{cmd: "git remote get-url origin", form: "remote get-url", secret: true, known: true, hook: "-"},
		{cmd: "git read-tree --index-output=x HEAD", form: "read-tree", global: true, known: true, hook: "post-index-change"},
		{cmd: "git fsck --lost-found", form: "fsck", global: true, known: true, hook: "-"},
		{cmd: "git ls-files --recurse-submodules", known: false},
		{cmd: "git grep --recurse-submodules x", known: false},
		{cmd: "git branch --recurse-submodules x", known: false},
	}
	for _, tc := range tests {
		t.Run(tc.cmd, func(t *testing.T) {
			t.Parallel()
			p := k.Classify(argv(tc.cmd)).Program
			if p.Known != tc.known {
				t.Fatalf("known %v (%s), want %v", p.Known, p.Why, tc.known)
			}
			if !tc.known {
				return
			}
			g := p.Git
			if g == nil {
				t.Fatal("no GitRepo")
			}
			if g.Form != tc.form || g.Dir != tc.dir || g.Submodules != tc.submodules {
				t.Errorf("form %q dir %q submodules %v, want %q %q %v", g.Form, g.Dir, g.Submodules, tc.form, tc.dir, tc.submodules)
			}
			switch {
			case tc.hook == "-" && len(g.Hooks) > 0:
				t.Errorf("hooks %v, want none", g.Hooks)
			case tc.hook != "-" && tc.hook != "" && !slices.Contains(g.Hooks, tc.hook):
				t.Errorf("hooks %v, want %s among them", g.Hooks, tc.hook)
			}
			if p.Global != tc.global {
				t.Errorf("global %v, want %v", p.Global, tc.global)
			}
			secret := slices.ContainsFunc(p.Paths, func(pa PathArg) bool { return strings.HasSuffix(pa.Word.Value, ".git/config") })
			if secret != tc.secret {
				t.Errorf("reads .git/config %v, want %v (paths %v)", secret, tc.secret, p.Paths)
			}
		})
	}
}

// TestGitRepoTableErrors: the git_repo table is checked when loaded.
func TestGitRepoTableErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, toml, want string }{
		{"kind", "[git_repo]\nconfig = { \"core.bare\" = \"boolean\" }\nhooks = []\n", "unknown value kind"},
		{"upper", "[git_repo]\nconfig = { \"core.hooksPath\" = \"text\" }\nhooks = []\n", "lower case"},
		{"sub", "[git_repo]\nconfig = { \"remote.origin.url\" = \"url\" }\nhooks = []\n", "section.*.name"},
		{"hook", "[git_repo]\nconfig = {}\nhooks = [\"pre-commit\"]\n[git_repo.forms]\n\"log\" = { hooks = [\"post-commit\"] }\n", "not in git_repo.hooks"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := LoadKnowledge([]byte(tc.toml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
