package oracle

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// The sandbox runs one generated command as nobody, under strace, in
// fresh mount, network and PID namespaces:
//   - / is bind-mounted read-only (one file system, no submounts) into a
//     new root; /tmp is a fresh tmpfs holding a copy of the world at the
//     path narrowd judged it at; /dev holds only null, zero, full,
//     random, urandom and tty; /proc is the new PID namespace's;
//   - the network namespace has only lo, with a listener on
//     127.0.0.1:8080 so that a connection succeeds and is seen;
//   - the command runs as uid 65534 with no groups (strace -u), under a
//     5 s kill, with files capped by ulimit and the tmpfs size;
//   - the namespace dies with its first process, taking every process
//     the command left behind.

// tracedSyscalls are what the checks read: programs, file writes, opens
// (canaries), connections, and what tracks the working directory.
var tracedSyscalls = strings.Join([]string{
	"execve", "execveat", "open", "openat", "openat2", "creat",
	"mkdir", "mkdirat", "unlink", "unlinkat", "rmdir", "rename", "renameat", "renameat2",
	"link", "linkat", "symlink", "symlinkat", "chmod", "fchmod", "fchmodat", "chown", "fchown",
	"lchown", "fchownat", "truncate", "utime", "utimes", "utimensat", "futimesat", "mknod", "mknodat",
	"setxattr", "lsetxattr", "fsetxattr", "removexattr", "lremovexattr", "fremovexattr",
	"connect", "sendto", "sendmsg", "chdir", "fchdir", "clone", "clone3", "fork", "vfork",
}, ",")

// tracePath is where the tracee's PATH points; narrowd's program names
// resolve against it too.
func tracePath() string {
	dirs := []string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"}
	if gp, err := exec.LookPath("go"); err == nil {
		if d := filepath.Dir(gp); !containsStr(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	return strings.Join(dirs, ":")
}

func containsStr(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// setupScript runs as root of the new namespaces. Its inputs are in the
// environment so that no value is ever parsed as shell.
const setupScript = `set -eu
N=$ORACLE_NEWROOT
mount --bind / "$N"
mount -o remount,bind,ro "$N"
mount -t tmpfs -o size=256m,mode=1777 tmpfs "$N/tmp"
mount -t tmpfs -o size=1m,mode=755 tmpfs "$N/dev"
for d in null zero full random urandom tty; do
	: > "$N/dev/$d"
	mount --bind "/dev/$d" "$N/dev/$d"
done
ln -s /proc/self/fd "$N/dev/fd"
ln -s /proc/self/fd/0 "$N/dev/stdin"
ln -s /proc/self/fd/1 "$N/dev/stdout"
ln -s /proc/self/fd/2 "$N/dev/stderr"
mkdir -m 1777 "$N/dev/shm"
mount -t proc -o nosuid,nodev proc "$N/proc"
mkdir -p "$N$ORACLE_WORLD" "$N/tmp/.ovl"
chmod 700 "$N/tmp/.ovl"
mkdir "$N/tmp/.ovl/up" "$N/tmp/.ovl/work"
# The world template is owned by the tracee's user; an overlay gives the
# run a private writable copy without copying it.
if ! mount -t overlay overlay -o "lowerdir=$ORACLE_WORLD,upperdir=$N/tmp/.ovl/up,workdir=$N/tmp/.ovl/work" "$N$ORACLE_WORLD" 2>/dev/null; then
	(cd "$ORACLE_WORLD" && for d in $ORACLE_COPY; do [ -e "$d" ] && cp -a --parents "$d" "$N$ORACLE_WORLD/"; done; true)
fi
mkdir -m 711 "$N/tmp/.oracle"
: > "$N/tmp/.oracle/out"; : > "$N/tmp/.oracle/err"
chmod 622 "$N/tmp/.oracle/out" "$N/tmp/.oracle/err"
if [ -n "$ORACLE_LISTENER" ]; then
	ORACLE_HELPER=listen ORACLE_READY="$ORACLE_OUT/ready" "$ORACLE_LISTENER" -test.run='^$' &
	i=0
	while [ ! -e "$ORACLE_OUT/ready" ] && [ $i -lt 500 ]; do sleep 0.01; i=$((i+1)); done
fi
set +e
chroot "$N" /bin/sh -c '
	cd "$ORACLE_CWD" || exit 126
	ulimit -f 65536
	exec /usr/bin/env -i HOME="$ORACLE_HOME" PATH="$ORACLE_PATH" LANG=C.UTF-8 USER=nobody LOGNAME=nobody \
		TERM=dumb SHELL=/bin/bash AWS_SECRET_ACCESS_KEY="$ORACLE_ENV_CANARY" \
		/usr/bin/timeout -s KILL 5 /usr/bin/strace -f -qq -y -s 4096 -e signal=none \
		-e trace="$ORACLE_SYSCALLS" -o /tmp/.oracle/trace $ORACLE_STRACE_USER /bin/bash -c "$ORACLE_CMD"
' < /dev/null > "$N/tmp/.oracle/out" 2> "$N/tmp/.oracle/err"
echo $? > "$ORACLE_OUT/rc"
head -c 67108864 "$N/tmp/.oracle/trace" > "$ORACLE_OUT/trace" 2>/dev/null
head -c 65536 "$N/tmp/.oracle/out" > "$ORACLE_OUT/out"
head -c 65536 "$N/tmp/.oracle/err" > "$ORACLE_OUT/err"
`

// sandbox runs commands in the hostile world.
type sandbox struct {
	w       *world
	self    string // this test binary: the listener
	unshare string
	dir     string
	// netPID is the shared listener, whose network namespace every run
	// joins (as root); 0: each run starts its own.
	netPID  int
	nsenter string
}

// result is what one run left.
type result struct {
	trace    string
	out, err string
	rc       int
	setupErr error
}

// errMissingTools is the one reason the oracle skips (unless
// NARROWD_E2E_REQUIRE is set): strace or unshare is not installed.
var errMissingTools = errors.New("strace or unshare is not installed")

// errNotRoot: the sandbox needs root to bind the root file system
// read-only without its submounts and drop to nobody.
var errNotRoot = errors.New("the oracle runs generated commands only as root (it drops them to nobody behind a read-only root)")

// lookTool finds a tool in PATH or the system directories, which a
// user's PATH may leave out (chroot is in /usr/sbin).
func lookTool(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, d := range []string{"/usr/sbin", "/sbin", "/usr/bin", "/bin"} {
		if fi, err := os.Stat(filepath.Join(d, name)); err == nil && fi.Mode()&0o111 != 0 {
			return filepath.Join(d, name)
		}
	}
	return ""
}

// newSandbox finds the tools. It reports why the oracle cannot run
// (skip material) as an error.
func newSandbox(w *world, dir string) (*sandbox, error) {
	unshare := lookTool("unshare")
	if unshare == "" || lookTool("strace") == "" {
		return nil, errMissingTools
	}
	if os.Geteuid() != 0 {
		// In a user namespace the kernel refuses a bind of / without
		// its submounts, and with them the root is not read-only
		// throughout: the oracle runs generated commands only where it
		// can confine them fully.
		return nil, errNotRoot
	}
	// The rest is coreutils and util-linux's mount, always there where
	// unshare is: missing, it fails rather than skips.
	for _, tool := range []string{"chroot", "timeout", "mount"} {
		if lookTool(tool) == "" {
			return nil, fmt.Errorf("%s is not installed", tool)
		}
	}
	for _, p := range []string{"/usr/bin/strace", "/usr/bin/timeout", "/usr/bin/env", "/bin/bash", "/bin/sh"} {
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("the sandbox expects %s: %w", p, err)
		}
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding the test binary: %w", err)
	}
	return &sandbox{w: w, self: self, unshare: unshare, dir: dir}, nil
}

// startListener starts the listener in a network namespace of its own
// that every run then joins, so a run does not pay for starting one.
// Without nsenter each run starts its own. stop ends it.
func (sb *sandbox) startListener() (stop func(), err error) {
	nsenter := lookTool("nsenter")
	if nsenter == "" {
		return func() {}, nil
	}
	ready := filepath.Join(sb.dir, "listener-ready")
	if err := os.MkdirAll(sb.dir, 0o755); err != nil {
		return nil, err
	}
	cmd := exec.Command(sb.unshare, "--net", sb.self, "-test.run=^$")
	cmd.Env = []string{"ORACLE_HELPER=listen", "ORACLE_READY=" + ready}
	// The listener dies with the test binary, even one that crashes.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the listener: %w", err)
	}
	stop = func() { cmd.Process.Kill(); cmd.Wait() }
	for i := 0; ; i++ {
		if _, err := os.Stat(ready); err == nil {
			break
		}
		if i > 1000 {
			stop()
			return nil, errors.New("the listener did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}
	sb.netPID, sb.nsenter = cmd.Process.Pid, nsenter
	return stop, nil
}

// run executes one command in a fresh sandbox; slot names a private
// directory for its mount point and results.
func (sb *sandbox) run(ctx context.Context, slot int, cwd, command string) result {
	base := filepath.Join(sb.dir, "slot"+strconv.Itoa(slot))
	newroot, out := filepath.Join(base, "root"), filepath.Join(base, "out")
	os.RemoveAll(out)
	for _, d := range []string{newroot, out} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return result{setupErr: err}
		}
	}
	args := []string{"--mount", "--net", "--pid", "--fork", "--kill-child"}
	uid, straceUser := "65534", "-u nobody"
	listener := sb.self
	argv := append([]string{sb.unshare}, args...)
	if sb.netPID != 0 {
		// Join the listener's network namespace instead of a new one.
		listener = ""
		argv = append([]string{sb.nsenter, "--net=/proc/" + strconv.Itoa(sb.netPID) + "/ns/net", "--"}, slices.DeleteFunc(argv, func(a string) bool { return a == "--net" })...)
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], append(argv[1:], "/bin/sh", "-c", setupScript)...)
	cmd.Env = []string{
		"PATH=/usr/sbin:/usr/bin:/sbin:/bin",
		"ORACLE_NEWROOT=" + newroot, "ORACLE_WORLD=" + sb.w.root, "ORACLE_OUT=" + out,
		"ORACLE_CWD=" + cwd, "ORACLE_CMD=" + command, "ORACLE_LISTENER=" + listener,
		"ORACLE_UID=" + uid, "ORACLE_STRACE_USER=" + straceUser, "ORACLE_HOME=" + sb.w.home,
		"ORACLE_PATH=" + tracePath(), "ORACLE_COPY=" + strings.Join(sb.w.copyFor(filepath.Base(cwdVariant(sb.w, cwd))), " "), "ORACLE_SYSCALLS=" + tracedSyscalls, "ORACLE_ENV_CANARY=" + canaryProc,
	}
	setupOut, err := cmd.CombinedOutput()
	var r result
	rc, rerr := os.ReadFile(filepath.Join(out, "rc"))
	if rerr != nil {
		r.setupErr = fmt.Errorf("sandbox setup failed: %v: %s", err, strings.TrimSpace(string(setupOut)))
		return r
	}
	r.rc, _ = strconv.Atoi(strings.TrimSpace(string(rc)))
	tr, _ := os.ReadFile(filepath.Join(out, "trace"))
	o, _ := os.ReadFile(filepath.Join(out, "out"))
	e, _ := os.ReadFile(filepath.Join(out, "err"))
	r.trace, r.out, r.err = string(tr), string(o), string(e)
	if r.trace == "" {
		r.setupErr = fmt.Errorf("no trace (rc %d): %s %s", r.rc, strings.TrimSpace(string(setupOut)), r.err)
	}
	return r
}

// cwdVariant is the workspace directory cwd is in.
func cwdVariant(w *world, cwd string) string {
	rel, err := filepath.Rel(w.root, cwd)
	if err != nil {
		return cwd
	}
	return strings.Split(rel, "/")[0]
}

// TestMain lets this binary serve as the sandbox's listener.
func TestMain(m *testing.M) {
	if os.Getenv("ORACLE_HELPER") == "listen" {
		if err := listen(os.Getenv("ORACLE_READY")); err != nil {
			fmt.Fprintln(os.Stderr, "oracle listener:", err)
			os.Exit(1)
		}
		return
	}
	os.Exit(m.Run())
}

// listen brings lo up in the sandbox's network namespace, accepts on
// 127.0.0.1 and ::1, and answers every connection with a short HTTP
// reply, until the namespace dies.
func listen(ready string) error {
	if err := loopbackUp(); err != nil {
		return err
	}
	var ls []net.Listener
	for _, addr := range []string{"127.0.0.1:" + strconv.Itoa(listenPort), "127.0.0.1:80", "[::1]:" + strconv.Itoa(listenPort)} {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			continue // ::1 may be absent
		}
		ls = append(ls, l)
	}
	if len(ls) == 0 {
		return errors.New("no listener")
	}
	if err := os.WriteFile(ready, nil, 0o644); err != nil {
		return err
	}
	done := make(chan struct{})
	for _, l := range ls {
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				c.SetDeadline(time.Now().Add(2 * time.Second))
				c.Write([]byte("HTTP/1.0 200 OK\r\nContent-Length: 6\r\n\r\nhello\n"))
				c.Close()
			}
		}()
	}
	<-done
	return nil
}

// loopbackUp sets IFF_UP on lo (what `ip link set lo up` does) with the
// ioctls, so the sandbox needs no iproute2.
func loopbackUp() error {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM, 0)
	if err != nil {
		return fmt.Errorf("socket: %w", err)
	}
	defer syscall.Close(fd)
	var ifr struct {
		name  [16]byte
		flags uint16
		_     [22]byte
	}
	copy(ifr.name[:], "lo")
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.SIOCGIFFLAGS, uintptr(unsafe.Pointer(&ifr))); e != 0 {
		return fmt.Errorf("SIOCGIFFLAGS: %w", e)
	}
	ifr.flags |= syscall.IFF_UP
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.SIOCSIFFLAGS, uintptr(unsafe.Pointer(&ifr))); e != 0 {
		return fmt.Errorf("SIOCSIFFLAGS: %w", e)
	}
	return nil
}
