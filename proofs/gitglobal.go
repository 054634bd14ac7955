package proofs

import (
	"os"
	"path/filepath"
	"strings"
)

// gitIncludeDepth is git's own bound on nested includes (MAX_INCLUDE_DEPTH).
const gitIncludeDepth = 10

// GitGlobalConfig is a Disk that knows where the person's own git
// configuration lives: the files git reads besides the repository's
// (system, then global), and the home directory ~ names in them.
type GitGlobalConfig interface {
	GitGlobalConfigFiles() (files []string, home string)
}

// GitGlobalConfigFiles lists the system and global config files git
// reads for the person narrowd runs as: /etc/gitconfig (or
// GIT_CONFIG_SYSTEM, none with GIT_CONFIG_NOSYSTEM),
// $XDG_CONFIG_HOME/git/config and ~/.gitconfig (or GIT_CONFIG_GLOBAL).
// narrowd reads them to learn where they send git (hooks, includes), not
// to run anything.
func (OSDisk) GitGlobalConfigFiles() ([]string, string) {
	home := os.Getenv("HOME")
	var files []string
	switch {
	case os.Getenv("GIT_CONFIG_NOSYSTEM") != "":
	case os.Getenv("GIT_CONFIG_SYSTEM") != "":
		files = append(files, os.Getenv("GIT_CONFIG_SYSTEM"))
	default:
		files = append(files, "/etc/gitconfig")
	}
	if g := os.Getenv("GIT_CONFIG_GLOBAL"); g != "" {
		return append(files, g), home
	}
	xdg := os.Getenv("XDG_CONFIG_HOME")
	if xdg == "" && home != "" {
		xdg = filepath.Join(home, ".config")
	}
	if xdg != "" {
		files = append(files, filepath.Join(xdg, "git", "config"))
	}
	if home != "" {
		files = append(files, filepath.Join(home, ".gitconfig"))
	}
	return files, home
}

// gitGlobalState is what the person's own git config changes about a
// repository judgement.
type gitGlobalState struct {
	why string
	// hooksDir is core.hooksPath from the global config, empty when
	// hooks live in the common directory.
	hooksDir string
	// read lists the files read, in order, as resolved paths.
	read []string
}

// readGitGlobal reads the person's config files and the files they
// include. Their keys are the person's own configuration and are
// trusted, like PATH, with three exceptions that point git at files an
// agent can write: a config file (or include) inside a workspace, a
// relative core.hooksPath (hooks from the worktree), and core.worktree.
// Every include is followed whatever its condition: reading more than
// git does can only keep the ceiling.
func readGitGlobal(disk Disk, rd FileReader, ps Paths) gitGlobalState {
	gc, ok := disk.(GitGlobalConfig)
	if !ok {
		return gitGlobalState{why: "narrowd does not know where the person's git config lives"}
	}
	files, home := gc.GitGlobalConfigFiles()
	var st gitGlobalState
	for _, f := range files {
		readGitGlobalFile(disk, rd, ps, f, home, 0, &st)
		if st.why != "" {
			return st
		}
	}
	return st
}

func readGitGlobalFile(disk Disk, rd FileReader, ps Paths, name, home string, depth int, st *gitGlobalState) {
	if depth > gitIncludeDepth {
		st.why = name + ": includes nest deeper than git follows"
		return
	}
	if !filepath.IsAbs(name) {
		st.why = "git config " + name + " is not an absolute path"
		return
	}
	real, err := realPath(disk, name)
	if notExist(err) {
		return
	}
	if err != nil {
		st.why = "git config " + name + " cannot be resolved: " + err.Error()
		return
	}
	if w := ps.Resolve("/", real); w.Inside {
		st.why = "git config " + name + " lies in the workspace, where an agent can write it"
		return
	}
	fi, err := disk.Lstat(real)
	switch {
	case err != nil:
		st.why = "git config " + name + " cannot be read: " + err.Error()
		return
	case !fi.Mode().IsRegular():
		st.why = "git config " + name + " is not a plain file"
		return
	case fi.Size() > gitConfigMax:
		st.why = "git config " + name + " is too large to check"
		return
	}
	b, err := rd.ReadFile(real)
	if err != nil {
		st.why = "git config " + name + " cannot be read: " + err.Error()
		return
	}
	st.read = append(st.read, real)
	entries, err := parseGitConfig(b)
	if err != nil {
		st.why = "git config " + name + ": " + err.Error()
		return
	}
	for _, e := range entries {
		sec, _, _ := strings.Cut(e.Key, ".")
		last := e.Key[strings.LastIndexByte(e.Key, '.')+1:]
		switch {
		case (sec == "include" || sec == "includeif") && last == "path":
			if !e.HasValue {
				st.why = name + ": include.path without a value"
				return
			}
			target := expandHome(e.Value, home)
			if target == "" {
				st.why = name + ": include.path " + e.Value + " is not a path narrowd expands"
				return
			}
			if !filepath.IsAbs(target) {
				target = filepath.Join(filepath.Dir(real), target)
			}
			readGitGlobalFile(disk, rd, ps, target, home, depth+1, st)
			if st.why != "" {
				return
			}
		case e.Key == "core.hookspath":
			dir := expandHome(e.Value, home)
			if dir == "" || !filepath.IsAbs(dir) {
				st.why = name + ": core.hooksPath " + e.Value + " is relative: git runs hooks from the worktree"
				return
			}
			if w := ps.Resolve("/", dir); w.Inside {
				st.why = name + ": core.hooksPath " + e.Value + " is in the workspace"
				return
			}
			st.hooksDir = filepath.Clean(dir)
		case e.Key == "core.worktree":
			st.why = name + ": core.worktree moves every repository's worktree"
			return
		}
	}
}

// expandHome is git's ~/ expansion of a path value. What narrowd does not
// expand (~user/, %(prefix)/, ~ with no home) comes back relative, which
// the callers refuse or resolve to a file git would not read, so it is
// refused here instead: "" is never a path.
func expandHome(p, home string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok && home != "" {
		return filepath.Join(home, rest)
	}
	if strings.HasPrefix(p, "~") || strings.HasPrefix(p, "%(") {
		return ""
	}
	return p
}
