package parse

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
)

// gitConfig tells reading git config from writing it, in both the
// --get style and the git 2.46 subcommand style.
func (r *run) gitConfig(p parsed) {
	write := false
	ops := p.ops
	if len(ops) > 0 {
		switch ops[0].Value {
		case "list", "get":
			ops = nil
		case "set", "unset":
			write = true
			ops = ops[1:]
		case "rename-section", "remove-section":
			r.fail("git config " + ops[0].Value + " is not modelled")
			return
		case "edit":
			r.fail("git config edit runs an editor")
			return
		}
	}
	switch {
	case p.hasHit("-e"):
		r.fail("git config --edit runs an editor")
		return
	case p.hasHit("--rename-section", "--remove-section"):
		r.fail("git config section edits are not modelled")
		return
	case p.hasHit("--unset", "--unset-all", "--replace-all", "--add"):
		write = true
	case p.hasHit("--get", "--get-all", "--get-regexp", "--get-urlmatch", "-l", "--get-color", "--get-colorbool"):
	case len(ops) >= 2:
		write = true
	}
	if !write {
		// What git config prints can carry credentials: a list, a
		// pattern, or a key that holds a URL, header or helper.
		secret := p.hasHit("-l", "--get-regexp", "--get-urlmatch", "--name-only", "--show-origin") ||
			len(p.ops) > 0 && (p.ops[0].Value == "list" || p.ops[0].Value == "get" && p.hasHit("--all", "--regexp", "--url="))
		for _, op := range ops[:min(1, len(ops))] {
			secret = secret || gitSecretKey(op.Value)
		}
		if len(ops) == 0 && !p.hasHit("--get", "--get-all", "--get-color", "--get-colorbool") {
			secret = true
		}
		if secret {
			r.gitSecretRead(p.hasHit("--global", "--system") || len(p.values("-f")) > 0)
		}
		return
	}
	// The key written must be one git -c may set too: core.fsmonitor,
	// core.pager, alias.*, filters and hooks paths make later git
	// commands run what the value names.
	if len(ops) > 0 && !r.k.safeGitKey(ops[0].Value) {
		r.fail("git config " + ops[0].Value + " may make git run code")
		return
	}
	r.rule = append(r.rule, "set")
	r.mut = max(r.mut, lvlUpdate)
	files := p.values("-f")
	switch {
	case len(files) > 0:
		// The -f paths are already recorded; upgraded below.
	case p.hasHit("--global", "--system"):
		r.global = true
	default:
		// The repository's own config: standing configuration every
		// later git command reads (spec §3.2).
		r.global = true
		dir := Word{Value: ".", Literal: true, Pos: r.prog.Pos}
		if r.dir != nil {
			dir = *r.dir
		}
		r.addPath(dir, Update, false)
	}
	// Flag paths of reads became reads; writes upgrade them above.
	for i := range r.paths {
		for _, f := range files {
			if r.paths[i].Word == f && r.paths[i].Access == Read {
				r.paths[i].Access = Update
			}
		}
	}
}

// GitRepo is what one git form may meet in the repository it runs in.
// narrowd reads the repository itself (proofs/gitrepo.go); a call
// narrows only when every file git would read there is on these lists.
type GitRepo struct {
	// Form is the subcommand as the table names it ("status", "stash
	// list").
	Form string
	// Dir is the -C directory, relative to where the program runs, or
	// absolute; empty without -C.
	Dir string
	// Config maps the config keys a repository's own files may set to
	// the kind of value each may have. A key is section.name or
	// section.*.name (any subsection); section and name compare in lower
	// case, as git compares them.
	Config map[string]GitValue
	// Hooks are the hooks the form can run; none of them may be an
	// executable file in the repository's hooks directory.
	Hooks []string
	// Submodules reports that the form runs git in the repository's
	// submodules, whose state narrowd does not read.
	Submodules bool
	// Standing reports that a write by this form changes the
	// repository's standing configuration (refs, the index, remotes,
	// config): such a call is account_wide (spec §3.2).
	Standing bool
}

// GitValue is the kind of value a repository config key may have.
type GitValue string

// The value kinds of [GitRepo.Config]; proofs/gitrepo.go checks them.
const (
	// GitBool is a git boolean: true, false, yes, no, on, off, 1, 0 or
	// the key alone.
	GitBool GitValue = "bool"
	// GitInt is a decimal integer with an optional k, m or g.
	GitInt GitValue = "int"
	// GitText is any value git only stores or prints.
	GitText GitValue = "text"
	// GitURL is a remote's address: https, http, ssh, git or scp-like,
	// or a plain path, with no password and no transport helper.
	GitURL GitValue = "url"
	// GitRef is a ref or remote name: letters, digits and -_./ only.
	GitRef GitValue = "ref"
	// GitRefspec is a fetch or push refspec of GitRef characters, an
	// optional leading + and the * and : of refspecs.
	GitRefspec GitValue = "refspec"
)

var gitValues = [...]GitValue{GitBool, GitInt, GitText, GitURL, GitRef, GitRefspec}

// gitRepoTable is the git_repo table of git.toml.
type gitRepoTable struct {
	Config map[string]GitValue `toml:"config"`
	Hooks  []string            `toml:"hooks"`
	Forms  map[string]gitForm  `toml:"forms"`
}

type gitForm struct {
	Hooks      []string `toml:"hooks"`
	Submodules bool     `toml:"submodules"`
	Standing   bool     `toml:"standing"`
}

// gitRepoPolicy is the compiled git_repo table.
type gitRepoPolicy struct {
	config map[string]GitValue
	hooks  []string
	forms  map[string]gitForm
}

// mergeGitRepo adds one file's git_repo table; only one file may have
// one.
func (k *Knowledge) mergeGitRepo(t *gitRepoTable) error {
	if t == nil {
		return nil
	}
	if k.gitRepo.config != nil {
		return errors.New("git_repo defined twice")
	}
	for key, v := range t.Config {
		if !slices.Contains(gitValues[:], v) {
			return fmt.Errorf("git_repo.config %q: unknown value kind %q", key, v)
		}
		parts := strings.Split(key, ".")
		if len(parts) < 2 || len(parts) > 3 || key != strings.ToLower(key) || len(parts) == 3 && parts[1] != "*" {
			return fmt.Errorf("git_repo.config %q: want section.name or section.*.name in lower case", key)
		}
	}
	for name, f := range t.Forms {
		for _, h := range f.Hooks {
			if !slices.Contains(t.Hooks, h) {
				return fmt.Errorf("git_repo.forms %q: hook %q is not in git_repo.hooks", name, h)
			}
		}
	}
	k.gitRepo = gitRepoPolicy{config: t.Config, hooks: t.Hooks, forms: t.Forms}
	if k.gitRepo.config == nil {
		k.gitRepo.config = map[string]GitValue{}
	}
	return nil
}

// gitRepo is what the classified git form may meet in its repository; nil
// for any other program. A form the table does not list may run every
// hook and enter submodules.
func (r *run) gitRepo() *GitRepo {
	if r.prog.Name != "git" || r.form == nil {
		return nil
	}
	form := strings.TrimPrefix(r.form.name, "git")
	form = strings.TrimPrefix(form, " ")
	g := &GitRepo{Form: form, Config: r.k.gitRepo.config, Hooks: r.k.gitRepo.hooks, Submodules: true, Standing: true}
	if f, ok := r.k.gitRepo.forms[form]; ok {
		g.Hooks, g.Submodules, g.Standing = f.Hooks, f.Submodules, f.Standing
	}
	if r.dir != nil {
		g.Dir = r.dir.Value
	}
	return g
}

// gitSecretKeys are config keys, as section.name or section.*.name in
// lower case, whose values can carry credentials: remote and submodule
// URLs (https://user:token@host), rewritten URLs, HTTP headers and
// cookies, credential helpers and their usernames.
var gitSecretKeys = [...]string{"remote.*.url", "remote.*.pushurl", "submodule.*.url", "url.*.insteadof", "url.*.pushinsteadof"}

// gitSecretSections are sections every key of which may carry one.
var gitSecretSections = [...]string{"http", "credential", "url", "sendemail", "remote"}

// gitSecretKey reports a key (or, for --get-regexp, a pattern) whose value
// may be a credential.
func gitSecretKey(key string) bool {
	k := strings.ToLower(key)
	sec, rest, ok := strings.Cut(k, ".")
	if !ok || strings.ContainsAny(k, "^$*?[](){}|+\\") {
		return true
	}
	if slices.Contains(gitSecretSections[:], sec) {
		return true
	}
	name := rest[strings.LastIndexByte(rest, '.')+1:]
	for _, p := range gitSecretKeys {
		ps, pn := p[:strings.IndexByte(p, '.')], p[strings.LastIndexByte(p, '.')+1:]
		if ps == sec && pn == name {
			return true
		}
	}
	return false
}

// gitSecretRead records that the call prints what may carry credentials:
// the repository's config (a sensitive name), and with --global,
// --system or -f a config outside the repository.
func (r *run) gitSecretRead(outside bool) {
	dir := "."
	if r.dir != nil {
		dir = r.dir.Value
	}
	r.paths = append(r.paths, PathArg{Word: Word{Value: path.Join(dir, ".git/config"), Literal: true, Pos: r.prog.Pos}, Access: Read})
	if outside {
		// ~/.gitconfig and /etc/gitconfig: /etc/gitconfig stands for
		// both, a path outside every workspace.
		r.paths = append(r.paths, PathArg{Word: Word{Value: "/etc/gitconfig", Literal: true, Pos: r.prog.Pos}, Access: Read})
	}
}

// gitPrintsConfig judges the listing forms that print what config holds:
// git remote -v and get-url print the remotes' URLs, git var -l every
// config variable; either can carry credentials.
func (r *run) gitPrintsConfig(p parsed) {
	switch r.form.name {
	case "git remote", "git remote get-url":
		if r.form.name == "git remote" && !p.hasHit("-v") {
			return
		}
	case "git var":
		// One variable (GIT_EDITOR, GIT_COMMITTER_IDENT) is no
		// credential.
		if !p.hasHit("-l") {
			return
		}
	}
	r.gitSecretRead(false)
}
