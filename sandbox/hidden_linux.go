//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// secretPaths are the places, relative to a home directory, that hold the
// person's credentials, tokens or shell history. The sandboxed program
// (the repository's own code: a test can be malicious) may neither read
// nor list them: what it reads can reach the agent's context, and so the
// model provider, or be copied into the workspace. Everything else in
// the home directory stays readable, because builds need it (go/pkg/mod,
// .cache, .npm, .cargo/registry, .rustup, .gitconfig, ...).
var secretPaths = []struct{ rel, why string }{
	{".ssh", "SSH private keys and agent configuration"},
	{".gnupg", "GnuPG private keys"},
	{".aws", "AWS access keys (credentials, sso cache)"},
	{".azure", "Azure CLI tokens"},
	{".config/gcloud", "Google Cloud credentials and access tokens"},
	{".config/gh", "GitHub CLI OAuth token (hosts.yml)"},
	{".kube", "Kubernetes cluster credentials"},
	{".docker", "registry auth in config.json"},
	{".netrc", "passwords for hosts (curl, git, ftp)"},
	{".git-credentials", "git's credential store, plain text"},
	{".config/git/credentials", "git's credential store, XDG place"},
	{".npmrc", "npm registry tokens"},
	{".pypirc", "PyPI upload tokens"},
	{".gem/credentials", "RubyGems API key"},
	{".cargo/credentials", "crates.io token (old name)"},
	{".cargo/credentials.toml", "crates.io token"},
	{".password-store", "pass's encrypted passwords"},
	{".local/share/keyrings", "GNOME keyring files"},
	{".bash_history", "shell history: pasted tokens and passwords"},
	{".zsh_history", "shell history"},
	{".python_history", "REPL history"},
	{".psql_history", "database sessions, passwords typed in"},
	{".mysql_history", "database sessions, passwords typed in"},
	{".node_repl_history", "REPL history"},
	{".claude", "Claude Code credentials and transcripts"},
	{".claude.json", "Claude Code account state"},
	{".codex", "Codex auth.json and sessions"},
	{".gemini", "Gemini CLI OAuth credentials"},
	{".copilot", "Copilot CLI tokens and sessions"},
	{".config/github-copilot", "Copilot tokens (editor plugins)"},
	{".cursor", "Cursor agent credentials"},
	{".local/state/narrowd", "narrowd's audit and state: what the person ran and approved"},
	{".config/narrowd", "narrowd's configuration: the profile the program would probe"},
}

// xdgDirs map the home-relative prefixes of secretPaths to the variables
// that move them: a secret under .config/ is hidden both under the home
// directory and under $XDG_CONFIG_HOME.
var xdgDirs = []struct{ prefix, env string }{
	{".config/", "XDG_CONFIG_HOME"},
	{".local/state/", "XDG_STATE_HOME"},
	{".local/share/", "XDG_DATA_HOME"},
}

// secretVars are variables that move a secret location away from the
// home directory: the place they name (or rel beneath it) is hidden too.
// A list variable (KUBECONFIG) is split at colons.
var secretVars = []struct{ env, rel, why string }{
	{"GNUPGHOME", "", "GnuPG private keys"},
	{"AWS_SHARED_CREDENTIALS_FILE", "", "AWS access keys"},
	{"CLOUDSDK_CONFIG", "", "Google Cloud credentials"},
	{"GH_CONFIG_DIR", "", "GitHub CLI token"},
	{"KUBECONFIG", "", "Kubernetes cluster credentials"},
	{"DOCKER_CONFIG", "", "registry auth"},
	{"PASSWORD_STORE_DIR", "", "pass's encrypted passwords"},
	{"CARGO_HOME", "credentials", "crates.io token (old name)"},
	{"CARGO_HOME", "credentials.toml", "crates.io token"},
	{"CLAUDE_CONFIG_DIR", "", "Claude Code credentials and transcripts"},
	{"CODEX_HOME", "", "Codex auth.json and sessions"},
	{"COPILOT_HOME", "", "Copilot CLI tokens and sessions"},
}

// hiddenPaths returns the real paths the sandbox hides: every secret
// location beneath every home directory (the program's $HOME, the
// wrapper's own, the passwd entry's), the XDG directories and the
// places [secretVars] name, each by
// the name it has once its parents' symlinks are resolved and, when it
// is a symlink itself, also by its target (Landlock judges where a file
// really is). Locations that do not exist, or that this user cannot
// reach anyway, are skipped. No path in the result lies beneath another.
func hiddenPaths(env []string) ([]string, error) {
	// The program's value and the wrapper's own, when they differ.
	lookup := func(name string) []string {
		var out []string
		for _, v := range []string{envValue(env, name), os.Getenv(name)} {
			if v != "" && !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
		return out
	}
	homes := lookup("HOME")
	if u, err := user.Current(); err == nil {
		homes = append(homes, u.HomeDir)
	}
	var names []string
	for _, s := range secretPaths {
		for _, home := range homes {
			if filepath.IsAbs(home) {
				names = append(names, filepath.Join(home, s.rel))
			}
		}
		for _, x := range xdgDirs {
			if rest, ok := strings.CutPrefix(s.rel, x.prefix); ok {
				for _, dir := range lookup(x.env) {
					if filepath.IsAbs(dir) {
						names = append(names, filepath.Join(dir, rest))
					}
				}
			}
		}
	}
	for _, v := range secretVars {
		for _, value := range lookup(v.env) {
			for _, dir := range filepath.SplitList(value) {
				if filepath.IsAbs(dir) {
					names = append(names, filepath.Join(dir, v.rel))
				}
			}
		}
	}
	var hidden []string
	for _, name := range names {
		paths, err := resolveHidden(name)
		if err != nil {
			return nil, fmt.Errorf("failed to resolve the secret location %s: %w", name, err)
		}
		hidden = append(hidden, paths...)
	}
	return outermost(hidden), nil
}

// homeDirs are the home directories the sandbox hides: the program's
// $HOME, the wrapper's own, and the passwd entry's.
func homeDirs(env []string) []string {
	var out []string
	for _, h := range []string{envValue(env, "HOME"), os.Getenv("HOME")} {
		if filepath.IsAbs(h) {
			out = append(out, filepath.Clean(h))
		}
	}
	if u, err := user.Current(); err == nil && filepath.IsAbs(u.HomeDir) {
		out = append(out, filepath.Clean(u.HomeDir))
	}
	return out
}

// resolveHidden returns the real paths of one secret location: its name
// with the parents resolved, and its target when it is a symlink.
func resolveHidden(name string) ([]string, error) {
	fi, err := os.Lstat(name)
	if unreachable(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	parent, err := filepath.EvalSymlinks(filepath.Dir(name))
	if unreachable(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := []string{filepath.Join(parent, filepath.Base(name))}
	if fi.Mode()&fs.ModeSymlink != 0 {
		target, err := filepath.EvalSymlinks(name)
		switch {
		case err == nil:
			out = append(out, target)
		case !unreachable(err):
			return nil, err
		}
	}
	return out, nil
}

// unreachable reports an error that means the path cannot be opened by
// this user at all (nothing there, or a directory on the way it may not
// search), so there is nothing to hide.
func unreachable(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.ENOTDIR)
}

// outermost sorts and deduplicates paths and drops those beneath another.
func outermost(paths []string) []string {
	slices.Sort(paths)
	paths = slices.Compact(paths)
	var out []string
	for _, p := range paths {
		if len(out) == 0 || !within(p, out[len(out)-1]) {
			out = append(out, p)
		}
	}
	return out
}

// within reports whether path is dir or lies beneath it (both clean and
// absolute).
func within(path, dir string) bool {
	return path == dir || dir == "/" || strings.HasPrefix(path, dir+"/")
}

// checkHidden refuses a writable directory inside a hidden path (the
// workspace's rule would hand the secrets' place to the program, or the
// program would break) or holding one (the workspace's rule grants
// everything beneath it, secrets included).
func checkHidden(writable, hidden []string) error {
	for _, w := range writable {
		for _, h := range hidden {
			switch {
			case within(w, h):
				return fmt.Errorf("the writable directory %s is inside %s, which the sandbox hides from the program (it holds secrets)", w, h)
			case within(h, w):
				return fmt.Errorf("the writable directory %s holds %s, which the sandbox hides from the program (it holds secrets)", w, h)
			}
		}
	}
	return nil
}

// readRules returns the paths the program may read beneath: "/" when
// nothing is hidden, else every entry of every directory on the way from
// / to a hidden path, except the entries on the way and the hidden ones
// (Landlock only grants, so "everywhere but these" is built from their
// siblings). The directories on the way get no rule: the program can
// pass through them but not list them, and what appears in them after
// this listing is unreadable. Symlinks get no rule (a rule opened
// through one would bind its target, which may be hidden; following a
// link needs no right, the target's own place decides) and neither do
// sockets, fifos and devices. A directory that cannot be listed grants
// nothing beneath it.
func readRules(hidden []string) []string {
	if len(hidden) == 0 {
		return []string{"/"}
	}
	onWay := map[string]bool{}
	isHidden := map[string]bool{}
	for _, h := range hidden {
		isHidden[h] = true
		for d := h; d != "/"; {
			d = filepath.Dir(d)
			onWay[d] = true
		}
	}
	var out []string
	for _, dir := range slices.Sorted(maps.Keys(onWay)) {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			p := filepath.Join(dir, e.Name())
			if onWay[p] || isHidden[p] {
				continue
			}
			if t := e.Type(); t.IsDir() || t.IsRegular() {
				out = append(out, p)
			}
		}
	}
	return out
}

// envValue is the value of name in env (the last one wins, as in exec).
func envValue(env []string, name string) string {
	v := ""
	for _, kv := range env {
		if rest, ok := strings.CutPrefix(kv, name+"="); ok {
			v = rest
		}
	}
	return v
}
