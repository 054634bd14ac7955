package proofs

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"

	"github.com/narrowd/narrowd/parse"
	"github.com/narrowd/narrowd/rules"
)

const (
	// gitFileMax bounds a gitfile or commondir file (git's own limit
	// for a gitfile is 1 MiB; real ones are one short line).
	gitFileMax = 4 << 10
	// gitLinkHops bounds the symlinks followed to find the directory git
	// runs in, as the kernel's MAXSYMLINKS does.
	gitLinkHops = 40
)

// gitRepoState is what narrowd found where one git program runs.
type gitRepoState struct {
	// why is empty when the state is proven ordinary, and otherwise
	// names the first thing that is not.
	why string
	// repo is the directory git would use, empty outside a repository.
	repo string
}

// gitRepoFinding reads what the git program p would read in the
// repository around dir, the way git's setup.c discovers it, and judges it
// by the table's git_repo lists. It reads the disk now, so a finding can
// only keep the ceiling (point in time); an ordinary state relaxes
// nothing by itself.
func gitRepoFinding(disk Disk, ps Paths, dir string, g *parse.GitRepo, global gitGlobalState) gitRepoState {
	rd, ok := disk.(FileReader)
	if !ok {
		return gitRepoState{why: "narrowd cannot read files here, so the repository is not proven ordinary"}
	}
	start, err := realDir(disk, dir)
	if err != nil {
		return gitRepoState{why: "the directory git runs in (" + dir + ") cannot be resolved now: " + err.Error()}
	}
	gitDir, workTree, why := discoverGitDir(disk, rd, ps, start)
	if why != "" || gitDir == "" {
		return gitRepoState{why: why}
	}
	st := gitRepoState{repo: gitDir}
	st.why = judgeGitDir(disk, rd, gitDir, workTree, g, global.hooksDir)
	return st
}

// realDir is dir with every symlink resolved, as getcwd reports the
// directory a process runs in: git discovers from the physical path.
func realDir(disk Disk, dir string) (string, error) {
	real, err := realPath(disk, dir)
	if err != nil {
		return "", err
	}
	if fi, err := disk.Lstat(real); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("%s is not a directory", real)
	}
	return real, nil
}

// realPath is name with every symlink resolved (the last component may be
// any file). A missing component is an error notExist reports.
func realPath(disk Disk, name string) (string, error) {
	if !filepath.IsAbs(name) {
		return "", errors.New("not absolute")
	}
	rest := strings.Split(filepath.Clean(name), "/")[1:]
	done := "/"
	hops := 0
	for len(rest) > 0 {
		elem := rest[0]
		rest = rest[1:]
		if elem == "" || elem == "." {
			continue
		}
		if elem == ".." {
			done = filepath.Dir(done)
			continue
		}
		next := filepath.Join(done, elem)
		fi, err := disk.Lstat(next)
		if err != nil {
			return "", err
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			hops++
			if hops > gitLinkHops {
				return "", errors.New("too many symlinks")
			}
			target, err := disk.Readlink(next)
			if err != nil {
				return "", err
			}
			if filepath.IsAbs(target) {
				done = "/"
			}
			rest = append(strings.Split(target, "/"), rest...)
		case fi.IsDir() || len(rest) == 0:
			done = next
		default:
			return "", syscall.ENOTDIR
		}
	}
	return done, nil
}

// notExist is git's "missing": ENOENT, or ENOTDIR when a component of
// the path is a file.
func notExist(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// discoverGitDir is setup.c's repo_discovery_find_dir: from start
// upward, DIR/.git as a gitfile or a repository directory, then DIR itself
// as a bare repository. It returns the git directory and the worktree
// (empty for a bare one), both empty when no repository is found. Every
// shape narrowd does not prove ordinary is a finding.
func discoverGitDir(disk Disk, rd FileReader, ps Paths, start string) (gitDir, workTree, why string) {
	for dir := start; ; dir = filepath.Dir(dir) {
		dotGit := filepath.Join(dir, ".git")
		fi, err := disk.Lstat(dotGit)
		switch {
		case err == nil && fi.Mode()&fs.ModeSymlink != 0:
			return "", "", dotGit + " is a symlink"
		case err == nil && fi.Mode().IsRegular():
			target, why := readGitFile(rd, dotGit)
			if why != "" {
				return "", "", why
			}
			if why := gitDirShape(disk, rd, target); why != "" {
				return "", "", dotGit + " points at " + target + ", which " + why
			}
			real, err := realDir(disk, target)
			if err != nil {
				return "", "", dotGit + " points at " + target + ", which cannot be resolved: " + err.Error()
			}
			if why := gitFileBackLink(disk, rd, ps, dotGit, real); why != "" {
				return "", "", why
			}
			return real, dir, ""
		case err == nil && fi.IsDir():
			if why := gitDirShape(disk, rd, dotGit); why != "" {
				// git would pass over it and look further up;
				// narrowd does not follow it there.
				return "", "", dotGit + " " + why
			}
			return dotGit, dir, ""
		case err == nil:
			return "", "", dotGit + " is neither a file nor a directory"
		case !notExist(err):
			return "", "", dotGit + " cannot be read: " + err.Error()
		}
		// git takes a directory with HEAD (and objects and refs, maybe
		// through commondir) for a bare repository, wherever discovery
		// meets it: a workspace may plant one. narrowd proves no bare
		// repository ordinary.
		if _, err := disk.Lstat(filepath.Join(dir, "HEAD")); err == nil {
			return "", "", dir + " holds HEAD: git can take it for a bare repository"
		} else if !notExist(err) {
			return "", "", filepath.Join(dir, "HEAD") + " cannot be read: " + err.Error()
		}
		if dir == "/" {
			return "", "", ""
		}
	}
}

// gitFileBackLink checks a gitfile that leaves the workspace: git's
// linked worktrees point at COMMON/worktrees/NAME, whose gitdir file
// points back at this .git file. A gitfile planted to point at another
// repository of the person's has no such link, and would read that
// repository from a call in this workspace.
func gitFileBackLink(disk Disk, rd FileReader, ps Paths, dotGit, gitDir string) string {
	if w := ps.Resolve("/", gitDir); w.Inside {
		return ""
	}
	back, why := readLine(disk, rd, filepath.Join(gitDir, "gitdir"))
	if why != "" {
		return dotGit + " points outside the workspace at " + gitDir + ", which does not point back (" + why + ")"
	}
	if !filepath.IsAbs(back) {
		back = filepath.Join(gitDir, back)
	}
	realBack, err := realPath(disk, back)
	realDotGit, err2 := realPath(disk, dotGit)
	if err != nil || err2 != nil || realBack != realDotGit {
		return dotGit + " points outside the workspace at " + gitDir + ", whose gitdir names " + back + ", not it"
	}
	return ""
}

// readLine reads a one-line file git writes (commondir, gitdir), without
// its trailing CR and LF.
func readLine(disk Disk, rd FileReader, name string) (string, string) {
	fi, err := disk.Lstat(name)
	if err != nil {
		return "", name + " cannot be read: " + err.Error()
	}
	if !fi.Mode().IsRegular() || fi.Size() > gitFileMax {
		return "", name + " is not a short plain file"
	}
	b, err := rd.ReadFile(name)
	if err != nil {
		return "", name + " cannot be read: " + err.Error()
	}
	s := strings.TrimRight(string(b), "\r\n")
	if s == "" || strings.ContainsAny(s, "\x00\n") {
		return "", name + " names no path narrowd can read"
	}
	return s, ""
}

// readGitFile reads a gitfile ("gitdir: PATH") as read_gitfile_gently
// does: PATH relative to the file's directory, trailing CR and LF dropped.
func readGitFile(rd FileReader, name string) (string, string) {
	b, err := rd.ReadFile(name)
	if err != nil {
		return "", name + " cannot be read: " + err.Error()
	}
	if len(b) > gitFileMax {
		return "", name + " is too large to check"
	}
	s, ok := strings.CutPrefix(string(b), "gitdir: ")
	if !ok {
		return "", name + " is not a gitfile git reads"
	}
	s = strings.TrimRight(s, "\r\n")
	if s == "" || strings.ContainsAny(s, "\x00\n") {
		return "", name + " names no directory narrowd can read"
	}
	if !filepath.IsAbs(s) {
		s = filepath.Join(filepath.Dir(name), s)
	}
	return filepath.Clean(s), ""
}

// commonDir is get_common_dir_noenv: gitDir/commondir, relative to
// gitDir, or gitDir itself.
func commonDir(disk Disk, rd FileReader, gitDir string) (string, string) {
	name := filepath.Join(gitDir, "commondir")
	if _, err := disk.Lstat(name); notExist(err) {
		return gitDir, ""
	}
	b, err := rd.ReadFile(name)
	if err != nil {
		return "", name + " cannot be read: " + err.Error()
	}
	if len(b) > gitFileMax {
		return "", name + " is too large to check"
	}
	s := strings.TrimRight(string(b), "\r\n")
	if s == "" || strings.ContainsAny(s, "\x00\n") {
		return "", name + " names no directory narrowd can read"
	}
	if !filepath.IsAbs(s) {
		s = filepath.Join(gitDir, s)
	}
	common := filepath.Clean(s)
	// git writes commondir only into COMMON/worktrees/NAME; one anywhere
	// else sends git to another repository's refs, objects and config.
	parent := filepath.Dir(gitDir)
	if filepath.Base(parent) != "worktrees" || filepath.Clean(filepath.Dir(parent)) != common {
		if rc, err := realDir(disk, common); err != nil || rc != filepath.Dir(parent) || filepath.Base(parent) != "worktrees" {
			return "", name + " points at " + common + ", which is not the repository of this worktree"
		}
	}
	return common, ""
}

// gitDirShape reports what keeps dir from being a repository directory as
// is_git_directory sees one: HEAD, and objects/ and refs/ in its common
// directory. Empty when it is one.
func gitDirShape(disk Disk, rd FileReader, dir string) string {
	if fi, err := disk.Lstat(filepath.Join(dir, "HEAD")); err != nil || !fi.Mode().IsRegular() && fi.Mode()&fs.ModeSymlink == 0 {
		return "has no HEAD file"
	}
	common, why := commonDir(disk, rd, dir)
	if why != "" {
		return why
	}
	for _, sub := range []string{"objects", "refs"} {
		if fi, err := disk.Lstat(filepath.Join(common, sub)); err != nil || !fi.IsDir() {
			return "has no " + sub + " directory"
		}
	}
	return ""
}

// judgeGitDir checks what git reads in a found repository: its config
// files, alternates, submodules and hooks.
func judgeGitDir(disk Disk, rd FileReader, gitDir, workTree string, g *parse.GitRepo, hooksDir string) string {
	common, why := commonDir(disk, rd, gitDir)
	if why != "" {
		return why
	}
	// config in the common directory; config.worktree of this worktree
	// whether or not extensions.worktreeConfig asks git to read it
	// (reading more than git does can only keep the ceiling).
	files := []string{filepath.Join(common, "config"), filepath.Join(gitDir, "config.worktree")}
	if common != gitDir {
		files = append(files, filepath.Join(common, "config.worktree"))
	}
	for _, f := range files {
		if why := judgeGitConfigFile(disk, rd, f, g, gitDir, workTree); why != "" {
			return why
		}
	}
	alt := filepath.Join(common, "objects", "info", "alternates")
	if _, err := disk.Lstat(alt); !notExist(err) {
		return alt + " makes git read objects of another repository"
	}
	if g.Submodules {
		for _, m := range []string{filepath.Join(common, "modules"), filepath.Join(workTree, ".gitmodules")} {
			if workTree == "" && strings.HasSuffix(m, ".gitmodules") {
				continue
			}
			if _, err := disk.Lstat(m); !notExist(err) {
				return "git " + g.Form + " runs git in the submodules (" + m + "), whose repositories narrowd does not read"
			}
		}
	}
	hooks := filepath.Join(common, "hooks")
	if hooksDir != "" {
		hooks = hooksDir
	}
	for _, h := range g.Hooks {
		name := filepath.Join(hooks, h)
		fi, err := disk.Lstat(name)
		switch {
		case notExist(err):
		case err != nil:
			return name + " cannot be read: " + err.Error()
		case !fi.Mode().IsRegular():
			return "hook " + name + " is not a plain file (git " + g.Form + " can run it)"
		case fi.Mode().Perm()&0o111 != 0:
			return "git " + g.Form + " runs the executable hook " + name
		}
	}
	return ""
}

// judgeGitConfigFile reads one repository config file; every key in it
// must be on the table's list with a value of its kind. A missing file is
// ordinary (git reads none).
func judgeGitConfigFile(disk Disk, rd FileReader, name string, g *parse.GitRepo, gitDir, workTree string) string {
	fi, err := disk.Lstat(name)
	switch {
	case notExist(err):
		return ""
	case err != nil:
		return name + " cannot be read: " + err.Error()
	case !fi.Mode().IsRegular():
		return name + " is not a plain file"
	case fi.Size() > gitConfigMax:
		return name + " is too large to check"
	}
	b, err := rd.ReadFile(name)
	if err != nil {
		return name + " cannot be read: " + err.Error()
	}
	entries, err := parseGitConfig(b)
	if err != nil {
		return name + ": " + err.Error()
	}
	for _, e := range entries {
		if e.Key == "core.worktree" && sameWorkTree(disk, gitDir, workTree, e) {
			// A submodule's or a moved repository's config names the
			// worktree its gitfile sits in: where git runs anyway.
			continue
		}
		kind, ok := gitConfigKind(g.Config, e.Key)
		if !ok {
			return fmt.Sprintf("%s:%d: %s is not a setting narrowd knows to be inert", name, e.Line, e.Key)
		}
		if !gitValueOK(kind, e) {
			return fmt.Sprintf("%s:%d: %s has a value that is not a plain %s", name, e.Line, e.Key, kind)
		}
	}
	return ""
}

// sameWorkTree reports a core.worktree that names, relative to the git
// directory as git resolves it, exactly the directory discovery found the
// gitfile in.
func sameWorkTree(disk Disk, gitDir, workTree string, e gitConfigEntry) bool {
	if workTree == "" || !e.HasValue || e.Value == "" {
		return false
	}
	dir := e.Value
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(gitDir, dir)
	}
	real, err := realDir(disk, dir)
	return err == nil && real == workTree
}

// gitConfigKind looks a key up in the list: section.name, or
// section.*.name for a key with a subsection. Section and name are
// already lower case; the subsection is any.
func gitConfigKind(list map[string]parse.GitValue, key string) (parse.GitValue, bool) {
	first, last := strings.IndexByte(key, '.'), strings.LastIndexByte(key, '.')
	if first <= 0 || last == len(key)-1 {
		return "", false
	}
	if first == last {
		k, ok := list[key]
		return k, ok
	}
	k, ok := list[key[:first]+".*."+key[last+1:]]
	return k, ok
}

var (
	gitIntValue     = regexp.MustCompile(`^-?[0-9]+[kKmMgG]?$`)
	gitRefValue     = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_./-]*$`)
	gitRefspecValue = regexp.MustCompile(`^[+^]?[A-Za-z0-9_*][A-Za-z0-9_./*-]*(:[A-Za-z0-9_*][A-Za-z0-9_./*-]*)?$`)
	// gitScpValue is user@host:path, the ssh form without a scheme.
	gitScpValue  = regexp.MustCompile(`^([A-Za-z0-9_][A-Za-z0-9_.-]*@)?[A-Za-z0-9_][A-Za-z0-9_.-]*:[A-Za-z0-9_./~][A-Za-z0-9_./~@+-]*$`)
	gitPathValue = regexp.MustCompile(`^[A-Za-z0-9_./~][A-Za-z0-9_./~@+-]*$`)
	gitURLValue  = regexp.MustCompile(`^(https?|ssh|git)://([A-Za-z0-9_][A-Za-z0-9_.-]*@)?[A-Za-z0-9_\[][A-Za-z0-9_.\[\]:-]*(/[A-Za-z0-9_./~@+%-]*)?$`)
)

// gitValueOK checks one value against its kind.
func gitValueOK(kind parse.GitValue, e gitConfigEntry) bool {
	v := e.Value
	switch kind {
	case parse.GitBool:
		if !e.HasValue {
			return true
		}
		switch strings.ToLower(v) {
		case "true", "false", "yes", "no", "on", "off", "1", "0", "":
			return true
		}
		return false
	case parse.GitInt:
		return gitIntValue.MatchString(v)
	case parse.GitText:
		return e.HasValue
	case parse.GitRef:
		return gitRefValue.MatchString(v)
	case parse.GitRefspec:
		return gitRefspecValue.MatchString(v)
	case parse.GitURL:
		// No transport helper (ext::, fd::, X::), no option, no
		// password or token: https://user@host carries one in the
		// user part; only ssh's user@ is a plain name.
		if m := gitURLValue.FindStringSubmatch(v); m != nil {
			return m[2] == "" || m[1] == "ssh"
		}
		return gitScpValue.MatchString(v) || gitPathValue.MatchString(v)
	}
	return false
}

// gitRepoEvidence judges every git program of the analysis in each
// directory it may run in. A finding raises every label; an ordinary
// state is recorded and relaxes nothing.
func gitRepoEvidence(c *claims, a *parse.Analysis, cwd string, ps Paths) {
	var global gitGlobalState
	globalRead := false
	for _, p := range a.Programs {
		if p.Name != "git" || !p.Known {
			continue
		}
		if p.Git == nil {
			gitStateRaise(c, "git", "narrowd has no git_repo entry for this form")
			continue
		}
		if p.DirUnknown || !filepath.IsAbs(cwd) {
			gitStateRaise(c, argvText(p), "the directory git runs in is not known, so its repository is not proven ordinary")
			continue
		}
		if ps.Disk == nil {
			gitOutsideWorkspace(c, p, cwd, ps)
			continue
		}
		if !globalRead {
			global, globalRead = gitGlobalState{why: "narrowd cannot read files here"}, true
			if rd, ok := ps.Disk.(FileReader); ok {
				global = readGitGlobal(ps.Disk, rd, ps)
			}
		}
		if global.why != "" {
			gitStateRaise(c, argvText(p), global.why)
			return
		}
		if gitOutsideWorkspace(c, p, cwd, ps) {
			return
		}
		for _, dir := range gitDirs(p, cwd) {
			st := gitRepoFinding(ps.Disk, ps, dir, p.Git, global)
			if st.why != "" {
				gitStateRaise(c, argvText(p), st.why)
				return
			}
			where := "outside any repository"
			if st.repo != "" {
				where = "in " + st.repo
			}
			c.add(rules.KindGitStateOrdinary, rules.PointInTime, argvText(p),
				"git "+p.Git.Form+" runs "+where+": every repository config key is on the git_repo list and no hook it can run is executable; global and system git config are the person's own and trusted, except what points git into the workspace", effectNone)
		}
	}
}

// gitDirs are the directories git program p may run in, after cd and -C.
func gitDirs(p parse.Program, cwd string) []string {
	dirs := p.Dirs
	if dirs == nil {
		dirs = []string{"."}
	}
	out := make([]string, 0, len(dirs))
	for _, d := range dirs {
		dir := d
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(cwd, dir)
		}
		if p.Git.Dir != "" {
			if filepath.IsAbs(p.Git.Dir) {
				dir = p.Git.Dir
			} else {
				dir = filepath.Join(dir, p.Git.Dir)
			}
		}
		out = append(out, filepath.Clean(dir))
	}
	return out
}

// gitOutsideWorkspace raises when git would run outside every workspace
// root (cd /elsewhere && git log): it reads another repository, whose
// history and config are not the workspace's. It reports whether it
// raised.
func gitOutsideWorkspace(c *claims, p parse.Program, cwd string, ps Paths) bool {
	if p.DirUnknown || !filepath.IsAbs(cwd) {
		return false
	}
	for _, dir := range gitDirs(p, cwd) {
		if w := ps.Resolve("/", dir); !w.Inside {
			gitStateRaise(c, argvText(p), "git runs in "+dir+", outside the workspace: "+w.Why)
			return true
		}
	}
	return false
}

// gitStateRaise raises every label: git would read state narrowd did not
// prove ordinary.
func gitStateRaise(c *claims, subject, why string) {
	for _, d := range rules.Dims() {
		c.add(rules.KindGitConfigRunsCode, rules.PointInTime, subject, why, raise(d))
	}
}
