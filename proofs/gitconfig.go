package proofs

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/narrowd/narrowd/rules"
)

// gitConfigMax bounds how much of a repository's config narrowd reads.
const gitConfigMax = 256 << 10

// FileReader is a Disk that can also read small files. narrowd reads a
// repository's .git/config itself: it never runs git to learn repo state.
type FileReader interface {
	ReadFile(name string) ([]byte, error)
}

// gitRunsCode reports the first setting in the repository config around
// cwd that makes git run a program: core.fsmonitor, a pager, a diff or
// merge driver, a filter, an alias starting with !, an include of another
// file, and the like. It reads what is on disk now, so what it finds can
// only raise (point in time), never relax.
func gitRunsCode(disk Disk, cwd string) string {
	rd, ok := disk.(FileReader)
	if !ok || !filepath.IsAbs(cwd) {
		return ""
	}
	for dir := filepath.Clean(cwd); ; dir = filepath.Dir(dir) {
		gitPath := filepath.Join(dir, ".git")
		if fi, err := disk.Lstat(gitPath); err == nil {
			cfg := filepath.Join(gitPath, "config")
			if !fi.IsDir() {
				// A worktree or submodule: .git is a file naming
				// the real directory; read that one's config.
				b, err := rd.ReadFile(gitPath)
				if err != nil {
					return ".git cannot be read"
				}
				target := strings.TrimSpace(strings.TrimPrefix(string(b), "gitdir:"))
				if !filepath.IsAbs(target) {
					target = filepath.Join(dir, target)
				}
				cfg = filepath.Join(target, "config")
			}
			b, err := rd.ReadFile(cfg)
			if err != nil {
				if errorsIsNotExist(err) {
					return ""
				}
				return cfg + " cannot be read"
			}
			return scanGitConfig(cfg, b)
		}
		if dir == "/" {
			return ""
		}
	}
}

func errorsIsNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

// scanGitConfig looks for settings that run programs.
func scanGitConfig(name string, b []byte) string {
	if len(b) > gitConfigMax {
		return name + " is too large to check"
	}
	section := ""
	sc := bufio.NewScanner(io.LimitReader(bytes.NewReader(b), gitConfigMax))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line[0] == '[' {
			end := strings.IndexByte(line, ']')
			if end < 0 {
				return name + " has a section narrowd cannot read"
			}
			section = strings.ToLower(strings.Fields(strings.Trim(line[1:end], " "))[0])
			line = strings.TrimSpace(line[end+1:])
			if line == "" {
				continue
			}
		}
		key, val, _ := strings.Cut(line, "=")
		key = strings.ToLower(strings.TrimSpace(key))
		val = strings.TrimSpace(val)
		switch {
		case section == "include" || section == "includeif":
			return name + ": includes another config file (" + section + "." + key + ")"
		case section == "alias" && strings.HasPrefix(strings.Trim(val, `"`), "!"):
			return name + ": alias." + key + " runs a shell command"
		case section == "core" && (key == "fsmonitor" || key == "pager" || key == "sshcommand" || key == "hookspath" || key == "editor" || key == "askpass" || key == "gitproxy"):
			return name + ": core." + key + " names a program"
		case section == "pager" || section == "filter" || section == "credential" || section == "gpg" || section == "sequence":
			return name + ": " + section + "." + key + " names a program"
		case (section == "diff" || section == "merge" || section == "difftool" || section == "mergetool") &&
			(key == "command" || key == "textconv" || key == "external" || key == "driver" || key == "cmd" || key == "tool"):
			return name + ": " + section + "." + key + " names a program"
		case section == "interactive" && key == "difffilter":
			return name + ": interactive.diffFilter names a program"
		case section == "man" || section == "browser" || section == "web" || section == "instaweb" ||
			section == "help" && (key == "format" || key == "browser" || key == "htmlpath"):
			// git help (and CMD --help) runs man.viewer,
			// man.<tool>.cmd or a browser the config names.
			return name + ": " + section + "." + key + " chooses how git help shows pages"
		}
	}
	if sc.Err() != nil {
		return name + " cannot be read"
	}
	return ""
}

// gitConfigEvidence raises every label when git would run a program the
// repository's config names.
func gitConfigEvidence(c *claims, why string) {
	for _, d := range rules.Dims() {
		c.add(rules.KindGitConfigRunsCode, rules.PointInTime, ".git/config", why, raise(d))
	}
}
