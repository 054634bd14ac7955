package proofs

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"unicode"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"
	"golang.org/x/text/unicode/norm"
)

// DefaultSensitive returns path patterns (doublestar syntax, matched
// against the cleaned absolute path without its leading slash) whose
// names suggest secrets, or code and settings that run or apply later.
// Matching one is guess evidence: it raises, never relaxes. Profiles
// extend the list.
func DefaultSensitive() []string {
	return []string{
		"**/.env", "**/.env.*", "**/.envrc", "**/*.env",
		"**/*.pem", "**/*.key", "**/*.p12", "**/*.pfx", "**/*.keystore", "**/*.jks",
		"**/id_rsa*", "**/id_dsa*", "**/id_ecdsa*", "**/id_ed25519*",
		"**/.ssh/**", "**/.gnupg/**", "**/.aws/**", "**/.azure/**", "**/.config/gcloud/**",
		"**/.kube/**", "**/.docker/config.json",
		"**/credentials", "**/credentials.*", "**/*credentials*.json", "**/secrets.*", "**/.secrets/**",
		"**/*secret*.json", "**/*secret*.yaml", "**/*secret*.yml", "**/*.token", "**/.token", "**/token.json",
		"**/.netrc", "**/.npmrc", "**/.pypirc", "**/.git-credentials", "**/.gitconfig",
		"**/.git/config", "**/.git/hooks/**", "**/.git/info/attributes",
		"**/.bashrc", "**/.bash_profile", "**/.bash_login", "**/.bash_logout", "**/.profile",
		"**/.zshrc", "**/.zshenv", "**/.zprofile", "**/.zlogin", "**/.config/fish/**",
		"**/.claude/settings*.json", "**/.claude/hooks/**", "**/.gemini/settings.json",
		"**/.codex/**", "**/.cursor/hooks.json", "**/.github/hooks/**", "**/.copilot/**",
		"**/.vscode/settings.json", "**/.vscode/tasks.json",
		"**/*.tfstate", "**/*.tfstate.*",
	}
}

// Paths decides where a path points. Its zero value has no workspace, so
// nothing is inside.
type Paths struct {
	// Roots are absolute, cleaned workspace roots.
	Roots []string
	// Sensitive are doublestar patterns; see [DefaultSensitive].
	Sensitive []string
	// Disk, when set, is consulted for symlinks and hard links at check
	// time. What it finds can only raise.
	Disk Disk
	// compiled is Sensitive read once by [NewPaths]; a Paths built
	// otherwise matches with the general matcher.
	compiled []sensitivePattern
	// Own are narrowd's own files and directories (profiles, label
	// files, config, state, audit log, snapshots, the binary), absolute
	// and cleaned, with their symlink-resolved forms: no agent call may
	// change them. See [Paths.WithOwn].
	Own []string
	// Home is the user's home directory, used only to see that a word
	// such as ~/.config/narrowd/x names one of Own.
	Home string
	// ownHomeRel is each entry of Own relative to Home ("" when not
	// under it), for words written with ~/ or $HOME/.
	ownHomeRel []string
	// standing is the standing-configuration table; nil means
	// [Standing]'s, and standingErr says it did not load.
	standing    *StandingTable
	standingErr error
}

// Disk is the part of the file system path proofs look at.
type Disk interface {
	Lstat(name string) (fs.FileInfo, error)
	Readlink(name string) (string, error)
}

// OSDisk reads the real file system.
type OSDisk struct{}

// Lstat calls os.Lstat.
func (OSDisk) Lstat(name string) (fs.FileInfo, error) { return os.Lstat(name) }

// Readlink calls os.Readlink.
func (OSDisk) Readlink(name string) (string, error) { return os.Readlink(name) }

// NewPaths cleans the workspace roots, dropping any that are relative,
// unclean after cleaning, or the file system root: a workspace of "/"
// would make every path inside.
func NewPaths(roots, sensitive []string, disk Disk) Paths {
	p := Paths{Disk: disk, Sensitive: append(DefaultSensitive(), sensitive...)}
	p.compiled = compileSensitive(p.Sensitive)
	p.standing, p.standingErr = Standing()
	return p.WithRoots(roots)
}

// WithOwn returns a copy of ps that knows narrowd's own files: own are
// absolute paths (relative ones, and the file system root, are dropped),
// home is the user's home directory. The engine adds both a path and its
// symlink-resolved form.
func (ps Paths) WithOwn(home string, own []string) Paths {
	out := ps
	out.Own = slices.Clip(ps.Own)
	for _, o := range own {
		if !filepath.IsAbs(o) || !pathClean(o) {
			continue
		}
		c := filepath.Clean(o)
		if c == "/" || slices.Contains(out.Own, c) {
			continue
		}
		out.Own = append(out.Own, c)
	}
	if filepath.IsAbs(home) && pathClean(home) && filepath.Clean(home) != "/" {
		out.Home = filepath.Clean(home)
	}
	out.ownHomeRel = make([]string, len(out.Own))
	for i, o := range out.Own {
		if out.Home != "" && within(o, out.Home) && o != out.Home {
			out.ownHomeRel[i] = o[len(out.Home)+1:]
		}
	}
	return out
}

// ownMatch returns the entry of Own that abs is or lies under, or "".
func (ps Paths) ownMatch(abs string) string {
	for _, o := range ps.Own {
		if within(abs, o) {
			return o
		}
	}
	return ""
}

// OwnFile returns the entry of narrowd's own files that the word names,
// or "": the word is read as a path against cwd, with a leading ~/,
// $HOME/ or ${HOME}/ (quoted or not) read as the home directory.
func (ps Paths) OwnFile(cwd, word string) string {
	if len(ps.Own) == 0 {
		return ""
	}
	abs, ok := ps.ownAbs(cwd, word, true)
	if !ok {
		return ""
	}
	return ps.ownMatch(abs)
}

// ownFileLinked is [Paths.OwnFile] for a path a call writes: a workspace
// path is also checked after following the symlinks on disk now (a link
// out of the workspace raises on its own; this names narrowd's file).
func (ps Paths) ownFileLinked(cwd, word string) string {
	if o := ps.OwnFile(cwd, word); o != "" || len(ps.Own) == 0 || ps.Disk == nil {
		return o
	}
	abs, ok := ps.ownAbs(cwd, word, false)
	if !ok {
		return ""
	}
	w := ps.Resolve("/", abs)
	if !w.Inside {
		return ""
	}
	if linked, ok := ps.linkedPath(w.Root, abs); ok && linked != abs {
		return ps.ownMatch(linked)
	}
	return ""
}

// ownAbs reads word as a path for [Paths.OwnFile]. With quick, a word
// that cannot name an own file lexically is refused without building it.
func (ps Paths) ownAbs(cwd, word string, quick bool) (string, bool) {
	w := word
	if strings.ContainsAny(w, `"'`) {
		w = strings.Map(func(r rune) rune {
			if r == '"' || r == '\'' {
				return -1
			}
			return r
		}, w)
	}
	if quick && !filepath.IsAbs(w) && !strings.HasPrefix(w, "~") && !strings.HasPrefix(w, "$") && !strings.Contains(w, "..") && !ps.ownNear(cwd) {
		// A relative path without .. stays under cwd, and no own file
		// is there: the common case, decided without building a path.
		return "", false
	}
	if tail, ok := homeTail(w); ok || w == "~" || w == "$HOME" || w == "${HOME}" {
		if ps.Home == "" {
			return "", false
		}
		w = filepath.Join(ps.Home, tail)
	}
	if w == "" || strings.ContainsAny(w, "$`\x00") {
		return "", false
	}
	if !filepath.IsAbs(w) {
		if !filepath.IsAbs(cwd) {
			return "", false
		}
		w = filepath.Join(cwd, w)
	}
	return filepath.Clean(w), true
}

// ownNear reports an own path under cwd, or cwd under an own path.
func (ps Paths) ownNear(cwd string) bool {
	for _, o := range ps.Own {
		if within(o, cwd) || within(cwd, o) {
			return true
		}
	}
	return false
}

// within reports that p is dir or lies under it.
func within(p, dir string) bool {
	return p == dir || len(p) > len(dir) && p[len(dir)] == '/' && strings.HasPrefix(p, dir)
}

// ownInText returns the entry of narrowd's own files whose path appears
// anywhere in text (python -c "open('/home/me/.config/narrowd/x','w')"),
// written absolute or under ~/, $HOME/ or ${HOME}/, or "".
func (ps Paths) ownInText(text string) string {
	for i, o := range ps.Own {
		if strings.Contains(text, o) {
			return o
		}
		if i >= len(ps.ownHomeRel) || ps.ownHomeRel[i] == "" {
			continue
		}
		rel := ps.ownHomeRel[i]
		if !strings.Contains(text, rel) {
			continue
		}
		for _, prefix := range []string{"~/", "$HOME/", "${HOME}/"} {
			if strings.Contains(text, prefix+rel) {
				return o
			}
		}
	}
	return ""
}

// standingTable is the table ps judges writes with.
func (ps Paths) standingTable() (*StandingTable, error) {
	if ps.standing != nil || ps.standingErr != nil {
		return ps.standing, ps.standingErr
	}
	return Standing()
}

// NotOrdinary says why the inside path w is not one ordinary workspace
// file that a write may change as the agent's own work, or "" when it is
// (see [StandingTable.Ordinary]). When deleting, only the table counts: a
// removal plants nothing, so an unknown dotfile (.pytest_cache) or a
// removable entry (.venv) is not standing configuration for it, while
// another table entry (.git, .claude/settings.json) is.
func (ps Paths) NotOrdinary(w Where, deleting bool) string {
	t, err := ps.standingTable()
	if err != nil {
		return "the standing-configuration table did not load: " + err.Error()
	}
	rel := strings.TrimPrefix(strings.TrimPrefix(w.Abs, w.Root), "/")
	if deleting {
		if e, ok := t.MatchRemoval(rel); ok {
			return standingWhy(e)
		}
		return ""
	}
	return t.Ordinary(rel)
}

// linkedPath returns where abs leads once every symlink on disk now is
// followed, walking from start (a directory abs is under, taken as it
// is). It reports false when there is no Disk, a link cannot be read or
// there are too many.
func (ps Paths) linkedPath(start, abs string) (string, bool) {
	if ps.Disk == nil {
		return "", false
	}
	for hops := 0; hops <= 8; hops++ {
		rel, err := filepath.Rel(start, abs)
		if err != nil || strings.HasPrefix(rel, "..") {
			return "", false
		}
		if rel == "." {
			return abs, true
		}
		parts := strings.Split(rel, "/")
		cur := start
		jumped := false
		for i, part := range parts {
			next := filepath.Join(cur, part)
			fi, err := ps.Disk.Lstat(next)
			if err != nil {
				// Nothing there yet: the rest is created as named.
				return abs, true
			}
			if fi.Mode()&fs.ModeSymlink != 0 {
				target, err := ps.Disk.Readlink(next)
				if err != nil {
					return "", false
				}
				if !filepath.IsAbs(target) {
					target = filepath.Join(cur, target)
				}
				abs = filepath.Join(append([]string{filepath.Clean(target)}, parts[i+1:]...)...)
				start, jumped = "/", true
				break
			}
			cur = next
		}
		if !jumped {
			return abs, true
		}
	}
	return "", false
}

// WithRoots returns a copy of ps with more workspace roots, cleaned the
// way [NewPaths] cleans them. The engine builds its sensitive list once
// and adds each call's project dir here.
func (ps Paths) WithRoots(roots []string) Paths {
	out := ps
	out.Roots = slices.Clip(ps.Roots)
	for _, r := range roots {
		if !filepath.IsAbs(r) || !pathClean(r) {
			continue
		}
		c := filepath.Clean(r)
		if c == "/" || slices.Contains(out.Roots, c) {
			continue
		}
		out.Roots = append(out.Roots, c)
	}
	return out
}

// pathClean reports that s has no NUL, control or invisible formatting
// characters (zero-width spaces, bidi overrides), is valid UTF-8, is in
// NFC, spells no slash or dot with a lookalike, and mixes no Latin with
// Cyrillic or Greek letters inside one name: a path that could read as
// another is never inside.
func pathClean(s string) bool {
	if ascii, ok := asciiClean(s); ascii {
		return ok
	}
	if !utf8.ValidString(s) || !norm.NFC.IsNormalString(s) {
		return false
	}
	for _, r := range s {
		if r == 0 || r == utf8.RuneError || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || lookalike(r) {
			return false
		}
	}
	for part := range strings.FieldsFuncSeq(s, func(r rune) bool { return r == '/' || r == '.' || r == '-' || r == '_' }) {
		if mixedScript(part) {
			return false
		}
	}
	return true
}

// asciiClean is pathClean's answer for a path of ASCII bytes only
// (ascii false: the path has other bytes, and pathClean goes on). ASCII
// is valid UTF-8 and NFC, has no format character, lookalike, or letter
// outside Latin: only a control character makes it unclean. Most paths
// are ASCII, and this skips the normalization check and rune walks.
func asciiClean(s string) (ascii, ok bool) {
	ok = true
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= 0x80:
			return false, false
		case c < 0x20 || c == 0x7f:
			ok = false
		}
	}
	return true, ok
}

// lookalike reports characters that render like a path separator or dot.
func lookalike(r rune) bool {
	switch r {
	case '\u2215', '\u2044', '\u29f8', '\uff0f', '\u2024', '\uff0e', '\u3002', '\u2216', '\uff3c', '\u00a0', '\u2000', '\u2001', '\u2002', '\u2003', '\u3000':
		return true
	}
	return false
}

// mixedScript reports a name that mixes Latin letters with Cyrillic or
// Greek ones, the homoglyph trick (.еnv with a Cyrillic е). Names are
// split at . - _ first, so русский.md stays one script per part.
func mixedScript(name string) bool {
	latin, other := false, false
	for _, r := range name {
		switch {
		case unicode.Is(unicode.Latin, r):
			latin = true
		case unicode.Is(unicode.Cyrillic, r), unicode.Is(unicode.Greek, r):
			other = true
		}
	}
	return latin && other
}

// Where is the lexical verdict on one path.
type Where struct {
	// Abs is the cleaned absolute path; empty when the path could not be
	// resolved.
	Abs string
	// Inside reports the path is proven under Root.
	Inside bool
	Root   string
	// Why explains a path that is not inside.
	Why string
	// raw is the path joined to the working directory before cleaning,
	// when it had a .. segment: the kernel resolves a .. after a symlink
	// on disk, not as cleaning does.
	raw string
}

// Resolve cleans p against cwd and checks that it stays under a root. It
// never touches the disk: `~`, `$`, NUL and control characters, non-NFC
// names, `..` escapes and absolute paths outside are not inside.
func (ps Paths) Resolve(cwd, p string) Where {
	switch {
	case p == "":
		return Where{Why: "empty path"}
	case !pathClean(p):
		return Where{Why: "control or invisible character, lookalike, mixed script, invalid UTF-8 or non-NFC name"}
	case strings.HasPrefix(p, "~"):
		return Where{Why: "home directory (~)"}
	case strings.Contains(p, "$"):
		return Where{Why: "names a variable ($)"}
	}
	abs := p
	if !filepath.IsAbs(p) {
		if !filepath.IsAbs(cwd) || !pathClean(cwd) {
			return Where{Why: "relative path with no known working directory"}
		}
		abs = cwd + "/" + p
	}
	raw := ""
	if strings.Contains(abs, "..") && hasDotDot(abs) {
		raw = abs
	}
	abs = filepath.Clean(abs)
	for _, r := range ps.Roots {
		if abs == r || len(abs) > len(r) && abs[len(r)] == '/' && strings.HasPrefix(abs, r) {
			return Where{Abs: abs, Inside: true, Root: r, raw: raw}
		}
	}
	if len(ps.Roots) == 0 {
		return Where{Abs: abs, Why: "no workspace root is known"}
	}
	return Where{Abs: abs, Why: fmt.Sprintf("%s is outside the workspace", abs)}
}

// SensitiveMatch returns the first sensitive pattern abs matches, or "".
func (ps Paths) SensitiveMatch(abs string) string {
	rel := strings.TrimPrefix(abs, "/")
	switch filepath.Base(rel) {
	case ".env.example", ".env.sample", ".env.template", ".env.dist", ".env.defaults":
		// Committed examples of .env files, by convention free of
		// secrets: the one exception to the .env patterns.
		return ""
	}
	if len(ps.compiled) != len(ps.Sensitive) {
		// A Paths built as a literal, or whose list was changed.
		for _, pat := range ps.Sensitive {
			if ok, _ := doublestar.Match(pat, rel); ok {
				return pat
			}
		}
		return ""
	}
	segs := splitRel(rel)
	for _, sp := range ps.compiled {
		if sp.match(rel, segs) {
			return sp.pat
		}
	}
	return ""
}

// splitRel splits a path without a leading / into its segments.
func splitRel(rel string) []string { return strings.Split(rel, "/") }

// Escape reports a symlink or hard link, seen on disk now, that takes an
// inside path out of the workspace. It returns "" when there is none or
// when no Disk is set. Symlinks are followed component by component from
// the root, so a link anywhere on the way counts.
func (ps Paths) Escape(w Where) string {
	if ps.Disk == nil || !w.Inside {
		return ""
	}
	if why := ps.linkBeforeDotDot(w.raw); why != "" {
		return why
	}
	return ps.escape(w.Root, w.Abs, 0)
}

// linkBeforeDotDot reports a symlink on disk now that a .. segment of
// raw follows: the kernel resolves l/.. to the link target's parent, so
// l/../config with l -> .git/hooks is .git/config, not the config that
// cleaning the path names.
func (ps Paths) linkBeforeDotDot(raw string) string {
	if raw == "" {
		return ""
	}
	cur := "/"
	for _, part := range strings.Split(strings.TrimPrefix(raw, "/"), "/") {
		switch part {
		case "", ".":
			continue
		case "..":
			if fi, err := ps.Disk.Lstat(cur); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
				return fmt.Sprintf("symlink %s is followed by ..; the kernel resolves that on disk, not as the path is written", cur)
			}
			cur = filepath.Dir(cur)
		default:
			cur = filepath.Join(cur, part)
		}
	}
	return ""
}

func (ps Paths) escape(root, abs string, depth int) string {
	if depth > 8 {
		return "too many symlinks"
	}
	rel, err := filepath.Rel(root, abs)
	if err != nil || rel == "." {
		return ""
	}
	cur := root
	parts := strings.Split(rel, "/")
	for i, part := range parts {
		cur = filepath.Join(cur, part)
		fi, err := ps.Disk.Lstat(cur)
		if err != nil {
			// Nothing there yet: a new file cannot be a link.
			return ""
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			target, err := ps.Disk.Readlink(cur)
			if err != nil {
				return fmt.Sprintf("symlink %s cannot be read", cur)
			}
			if !filepath.IsAbs(target) {
				target = filepath.Join(filepath.Dir(cur), target)
			}
			rest := filepath.Join(append([]string{filepath.Clean(target)}, parts[i+1:]...)...)
			w := ps.Resolve("/", rest)
			if !w.Inside {
				return fmt.Sprintf("symlink %s points outside the workspace", cur)
			}
			return ps.escape(w.Root, w.Abs, depth+1)
		}
		if i == len(parts)-1 && fi.Mode().IsRegular() {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
				return fmt.Sprintf("%s has %d hard links; one may be outside the workspace", cur, st.Nlink)
			}
		}
	}
	return ""
}

// ReadDir lists a directory: the trees a copy or move relocates, and
// those a recursive read that follows links walks.
func (OSDisk) ReadDir(name string) ([]fs.DirEntry, error) { return os.ReadDir(name) }

// ReadFile reads a file, for the few files narrowd reads itself.
func (OSDisk) ReadFile(name string) ([]byte, error) { return os.ReadFile(name) }

// globMaySensitive returns a sensitive path that an expansion of the
// pattern could name (.e?v can name .env), or "". Each sensitive pattern
// gives a sample path (** dropped, * read as one letter); the pattern's
// segments after its literal directory are laid over the sample's last
// segments. Bash's default matching is assumed, which the parser
// enforces by refusing shopt dotglob, nocaseglob and globstar: a leading
// dot is matched only by a segment that starts with one.
func (ps Paths) globMaySensitive(pattern string) string {
	segs := strings.Split(strings.TrimSuffix(pattern, "/"), "/")
	first := 0
	for i, seg := range segs {
		if strings.ContainsAny(seg, "*?[") {
			first = i
			break
		}
	}
	tail := segs[first:]
	dirOnly := strings.HasSuffix(pattern, "/")
	for _, pat := range ps.Sensitive {
		var sample []string
		for _, seg := range strings.Split(pat, "/") {
			if seg != "**" && seg != "" {
				sample = append(sample, strings.ReplaceAll(seg, "*", "x"))
			}
		}
		if dirOnly && !strings.HasSuffix(pat, "/**") {
			// A directory-only pattern can name a sensitive
			// directory (its trailing ** is already dropped), never
			// a sensitive file.
			continue
		}
		if len(sample) == 0 || len(sample) > len(tail) {
			continue
		}
		off := len(tail) - len(sample)
		match := true
		for i, s := range sample {
			seg := tail[off+i]
			if strings.HasPrefix(s, ".") && !strings.HasPrefix(seg, ".") {
				match = false
				break
			}
			if ok, _ := path.Match(seg, s); !ok {
				match = false
				break
			}
		}
		if match {
			return strings.Join(sample, "/")
		}
	}
	return ""
}
