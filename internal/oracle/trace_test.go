package oracle

import (
	"path/filepath"
	"strconv"
	"strings"
)

// A strace line (-f -qq -y -e signal=none -o FILE):
//
//	123 openat(AT_FDCWD</ws>, "a.txt", O_RDONLY) = 3</ws/a.txt>
//	123 openat(AT_FDCWD</ws>, "b", O_RDONLY <unfinished ...>
//	123 <... openat resumed>) = -1 ENOENT (No such file or directory)
//
// -y decorates every fd argument and fd result with the path it names,
// so opens through symlinks show where they landed.

// syscallEvent is one finished syscall.
type syscallEvent struct {
	pid  int
	name string
	args []string
	ret  string // "0", "3</x>", "-1 ENOENT (...)", "?"
	line string
}

// ok reports that the syscall did not fail.
func (e syscallEvent) ok() bool { return !strings.HasPrefix(e.ret, "-1") && e.ret != "?" }

// errno is the error name of a failed syscall ("ENOENT").
func (e syscallEvent) errno() string {
	f := strings.Fields(e.ret)
	if len(f) >= 2 && f[0] == "-1" {
		return f[1]
	}
	return ""
}

// retPath is the path -y printed for an fd result.
func (e syscallEvent) retPath() string { _, p := splitDecorated(e.ret); return p }

// parseTrace reads a whole trace, joining unfinished and resumed halves.
func parseTrace(text string) []syscallEvent {
	var out []syscallEvent
	pending := map[int]string{}
	for line := range strings.SplitSeq(text, "\n") {
		pidText, rest, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok {
			continue
		}
		pid, err := strconv.Atoi(pidText)
		if err != nil {
			continue
		}
		rest = strings.TrimLeft(rest, " ")
		if head, ok := strings.CutSuffix(rest, " <unfinished ...>"); ok {
			pending[pid] = head
			continue
		}
		if strings.HasPrefix(rest, "<... ") {
			_, tail, ok := strings.Cut(rest, " resumed>")
			if !ok {
				continue
			}
			rest = pending[pid] + tail
			delete(pending, pid)
		}
		if ev, ok := parseCall(rest); ok {
			ev.pid, ev.line = pid, pidText+" "+rest
			out = append(out, ev)
		}
	}
	return out
}

// parseCall reads "name(args) = ret".
func parseCall(s string) (syscallEvent, bool) {
	open := strings.IndexByte(s, '(')
	if open <= 0 || strings.HasPrefix(s, "+++") || strings.HasPrefix(s, "---") {
		return syscallEvent{}, false
	}
	ev := syscallEvent{name: s[:open]}
	depth, inStr := 0, false
	start := open + 1
	for i := open; i < len(s); i++ {
		c := s[i]
		if inStr {
			switch c {
			case '\\':
				i++
			case '"':
				inStr = false
			}
			continue
		}
		switch c {
		case '"':
			inStr = true
		case '(', '[', '{', '<':
			depth++
		case ')', ']', '}', '>':
			depth--
			if depth == 0 && c == ')' {
				if a := strings.TrimSpace(s[start:i]); a != "" {
					ev.args = append(ev.args, a)
				}
				ret := strings.TrimSpace(s[i+1:])
				ev.ret = strings.TrimSpace(strings.TrimPrefix(ret, "="))
				return ev, true
			}
		case ',':
			if depth == 1 {
				ev.args = append(ev.args, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	return syscallEvent{}, false
}

// splitDecorated splits "3</path>" or "AT_FDCWD</path>" into its value
// and path.
func splitDecorated(s string) (value, path string) {
	i := strings.Index(s, "<")
	if i < 0 || !strings.HasSuffix(s, ">") {
		return s, ""
	}
	return s[:i], unescapeStrace(s[i+1 : len(s)-1])
}

// unquote reads a strace string argument: "..." with C escapes. NULL
// and non-strings give "".
func unquote(s string) string {
	s = strings.TrimSuffix(s, "...")
	if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' {
		return ""
	}
	return unescapeStrace(s[1 : len(s)-1])
}

func unescapeStrace(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch s[i] {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'v':
			b.WriteByte('\v')
		case 'f':
			b.WriteByte('\f')
		case 'x':
			if i+2 < len(s) {
				if v, err := strconv.ParseUint(s[i+1:i+3], 16, 8); err == nil {
					b.WriteByte(byte(v))
					i += 2
					continue
				}
			}
			b.WriteByte('x')
		default:
			if s[i] >= '0' && s[i] <= '7' {
				j := i
				for j < len(s) && j < i+3 && s[j] >= '0' && s[j] <= '7' {
					j++
				}
				v, _ := strconv.ParseUint(s[i:j], 8, 8)
				b.WriteByte(byte(v))
				i = j - 1
				continue
			}
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// access is one path a syscall touched, resolved to an absolute path.
type access struct {
	ev    syscallEvent
	path  string
	write bool // creates, changes or removes path
	open  bool // opens or runs path (canary reads)
	// renamedTo is the new name of a rename whose source is path.
	renamedTo string
	// unlinked reports a removal of path.
	unlinked bool
	// created reports that the syscall may have made path exist.
	created bool
}

// pathResolver turns syscall path arguments into absolute paths, keeping
// each process's working directory from chdir, fchdir, clone results and
// the AT_FDCWD</dir> decorations.
type pathResolver struct {
	cwd     map[int]string
	initial string
}

func newResolver(initial string) *pathResolver {
	return &pathResolver{cwd: map[int]string{}, initial: initial}
}

func (r *pathResolver) dirOf(pid int) string {
	if d, ok := r.cwd[pid]; ok {
		return d
	}
	return r.initial
}

// at resolves path against a dirfd argument ("AT_FDCWD</x>", "3</d>").
func (r *pathResolver) at(pid int, dirfd, path string) string {
	if strings.HasPrefix(path, "/") {
		return filepath.Clean(path)
	}
	v, p := splitDecorated(dirfd)
	if v == "AT_FDCWD" && p != "" {
		r.cwd[pid] = p
	}
	base := p
	if base == "" {
		base = r.dirOf(pid)
	}
	if path == "" {
		return filepath.Clean(base)
	}
	return filepath.Clean(filepath.Join(base, path))
}

func (r *pathResolver) rel(pid int, path string) string {
	if strings.HasPrefix(path, "/") {
		return filepath.Clean(path)
	}
	return filepath.Clean(filepath.Join(r.dirOf(pid), path))
}

func fdPath(arg string) string { _, p := splitDecorated(arg); return p }

func argAt(args []string, i int) string {
	if i < len(args) {
		return args[i]
	}
	return ""
}

// writeFlags reports open flags that write a named file. O_TMPFILE makes
// an unnamed file that vanishes on close (apt's caches); naming it takes
// a linkat, which is a write of its own.
func writeFlags(flags string) bool {
	if strings.Contains(flags, "O_TMPFILE") {
		return false
	}
	for _, f := range []string{"O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "O_APPEND"} {
		if strings.Contains(flags, f) {
			return true
		}
	}
	return false
}

// accesses lists the paths each event touched, in trace order, and
// tracks working directories on the way.
func accesses(evs []syscallEvent, cwd string) []access {
	r := newResolver(cwd)
	var out []access
	add := func(a access) { out = append(out, a) }
	for _, ev := range evs {
		a := ev.args
		switch ev.name {
		case "clone", "clone3", "fork", "vfork":
			if child, err := strconv.Atoi(ev.ret); err == nil && child > 0 {
				r.cwd[child] = r.dirOf(ev.pid)
			}
		case "chdir":
			if ev.ok() {
				r.cwd[ev.pid] = r.rel(ev.pid, unquote(argAt(a, 0)))
			}
		case "fchdir":
			if p := fdPath(argAt(a, 0)); ev.ok() && p != "" {
				r.cwd[ev.pid] = p
			}
		case "execve":
			add(access{ev: ev, path: r.rel(ev.pid, unquote(argAt(a, 0))), open: true})
		case "execveat":
			add(access{ev: ev, path: r.at(ev.pid, argAt(a, 0), unquote(argAt(a, 1))), open: true})
		case "open", "creat":
			p := r.rel(ev.pid, unquote(argAt(a, 0)))
			if rp := ev.retPath(); rp != "" {
				p = rp
			}
			w := ev.name == "creat" || writeFlags(argAt(a, 1))
			add(access{ev: ev, path: p, open: true, write: w, created: w})
		case "openat", "openat2":
			p := r.at(ev.pid, argAt(a, 0), unquote(argAt(a, 1)))
			if rp := ev.retPath(); rp != "" {
				p = rp
			}
			w := writeFlags(argAt(a, 2))
			add(access{ev: ev, path: p, open: true, write: w, created: w && strings.Contains(argAt(a, 2), "O_CREAT")})
		case "mkdir", "mknod", "truncate", "utime", "utimes", "chmod", "chown", "lchown",
			"setxattr", "lsetxattr", "removexattr", "lremovexattr":
			if ev.name == "mkdir" && ev.errno() == "EEXIST" {
				continue
			}
			add(access{ev: ev, path: r.rel(ev.pid, unquote(argAt(a, 0))), write: true, created: ev.name == "mkdir" || ev.name == "mknod"})
		case "mkdirat", "mknodat", "fchmodat", "fchownat", "futimesat":
			if ev.name == "mkdirat" && ev.errno() == "EEXIST" {
				continue
			}
			add(access{ev: ev, path: r.at(ev.pid, argAt(a, 0), unquote(argAt(a, 1))), write: true, created: ev.name == "mkdirat" || ev.name == "mknodat"})
		case "utimensat":
			path := unquote(argAt(a, 1))
			p := r.at(ev.pid, argAt(a, 0), path)
			if argAt(a, 1) == "NULL" {
				p = fdPath(argAt(a, 0))
			}
			add(access{ev: ev, path: p, write: true})
		case "fchmod", "fchown", "fsetxattr", "fremovexattr":
			add(access{ev: ev, path: fdPath(argAt(a, 0)), write: true})
		case "unlink", "rmdir":
			add(access{ev: ev, path: r.rel(ev.pid, unquote(argAt(a, 0))), write: true, unlinked: ev.ok()})
		case "unlinkat":
			add(access{ev: ev, path: r.at(ev.pid, argAt(a, 0), unquote(argAt(a, 1))), write: true, unlinked: ev.ok()})
		case "rename":
			from, to := r.rel(ev.pid, unquote(argAt(a, 0))), r.rel(ev.pid, unquote(argAt(a, 1)))
			add(access{ev: ev, path: from, write: true, renamedTo: okStr(ev.ok(), to)})
			add(access{ev: ev, path: to, write: true, created: true})
		case "renameat", "renameat2":
			from := r.at(ev.pid, argAt(a, 0), unquote(argAt(a, 1)))
			to := r.at(ev.pid, argAt(a, 2), unquote(argAt(a, 3)))
			add(access{ev: ev, path: from, write: true, renamedTo: okStr(ev.ok(), to)})
			add(access{ev: ev, path: to, write: true, created: true})
		case "link":
			add(access{ev: ev, path: r.rel(ev.pid, unquote(argAt(a, 1))), write: true, created: true})
		case "linkat":
			add(access{ev: ev, path: r.at(ev.pid, argAt(a, 2), unquote(argAt(a, 3))), write: true, created: true})
		case "symlink":
			add(access{ev: ev, path: r.rel(ev.pid, unquote(argAt(a, 1))), write: true, created: true})
		case "symlinkat":
			add(access{ev: ev, path: r.at(ev.pid, argAt(a, 1), unquote(argAt(a, 2))), write: true, created: true})
		}
	}
	return out
}

func okStr(ok bool, s string) string {
	if ok {
		return s
	}
	return ""
}

// nameServiceSockets are where glibc's user and group lookups go before
// /etc/passwd (ls -l, id, find -user): nscd and systemd's userdb. A
// lookup of a name is no connection to anything the call could use.
var nameServiceSockets = []string{
	"/var/run/nscd/socket", "/run/nscd/socket",
	"/run/systemd/userdb/io.systemd.Multiplexer", "/run/systemd/userdb/io.systemd.DynamicUser",
}

// connectTarget returns the address of a connect, or a sendto/sendmsg
// with an explicit address, to an internet or Unix socket; "" for none.
func connectTarget(ev syscallEvent) string {
	var addr string
	switch ev.name {
	case "connect":
		addr = argAt(ev.args, 1)
	case "sendto":
		addr = argAt(ev.args, 4)
	case "sendmsg":
		addr = argAt(ev.args, 1)
	default:
		return ""
	}
	for _, sock := range nameServiceSockets {
		if strings.Contains(addr, `sun_path="`+sock+`"`) {
			return ""
		}
	}
	for _, fam := range []string{"AF_INET6", "AF_INET", "AF_UNIX"} {
		if strings.Contains(addr, "sa_family="+fam) {
			return addr
		}
	}
	return ""
}
