//go:build linux

package sandbox

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/narrowd/narrowd/internal/testenv"
)

// The test binary doubles as narrowd: Start re-executes /proc/self/exe
// with `exec --stage NAME`, and the tests run it as a small wrapper or as
// a probe inside the sandbox (NARROWD_SANDBOX_HELPER).
func TestMain(m *testing.M) {
	if len(os.Args) == 4 && os.Args[1] == "exec" && os.Args[2] == "--stage" {
		err := RunStage(os.Args[3])
		fmt.Fprintf(os.Stderr, "stage: %v\n", err)
		os.Exit(125)
	}
	if mode := os.Getenv("NARROWD_PROBE"); mode != "" {
		os.Exit(helper(mode))
	}
	if mode := os.Getenv("NARROWD_SANDBOX_HELPER"); mode != "" {
		os.Exit(helper(mode))
	}
	os.Exit(m.Run())
}

// Probe exit codes.
const (
	probeDone    = 0
	probeRefused = 3
	probeOther   = 4
)

// helper is a probe run inside (or, as a control, outside) the sandbox,
// or the wrapper run as the unprivileged user.
func helper(mode string) int {
	name, arg, _ := strings.Cut(mode, ":")
	refused := func(err error) int {
		if err == nil {
			return probeDone
		}
		fmt.Fprintln(os.Stderr, name+":", err)
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EACCES) {
			return probeRefused
		}
		return probeOther
	}
	switch name {
	case "dial-unix":
		c, err := net.Dial("unix", arg)
		if err == nil {
			c.Close()
		}
		return refused(err)
	case "dial-tcp":
		c, err := net.DialTimeout("tcp", arg, 2*time.Second)
		if err == nil {
			c.Close()
			return probeDone
		}
		fmt.Fprintln(os.Stderr, name+":", err)
		return probeRefused
	case "socketpair-dgram", "socketpair-stream":
		typ := unix.SOCK_STREAM
		if name == "socketpair-dgram" {
			typ = unix.SOCK_DGRAM
		}
		fds, err := unix.Socketpair(unix.AF_UNIX, typ|unix.SOCK_CLOEXEC, 0)
		if err == nil {
			unix.Close(fds[0])
			unix.Close(fds[1])
		}
		return refused(err)
	case "uring":
		var params [120]byte
		fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&params)), 0)
		if errno != 0 {
			return refused(errno)
		}
		unix.Close(int(fd))
		return probeDone
	case "spawn":
		// Start N sleepers, say how many started and the first refusal,
		// and kill them.
		n, _ := strconv.Atoi(arg)
		var cmds []*exec.Cmd
		var ferr error
		for i := 0; i < n; i++ {
			c := exec.Command("sleep", "30")
			if err := c.Start(); err != nil {
				ferr = err
				break
			}
			cmds = append(cmds, c)
		}
		fmt.Printf("started %d\n", len(cmds))
		if ferr != nil {
			fmt.Println("refused:", ferr)
		}
		for _, c := range cmds {
			c.Process.Kill()
			c.Wait()
		}
		return probeDone
	case "wait-stdin":
		io.Copy(io.Discard, os.Stdin)
		return probeDone
	case "wrap":
		// The wrapper as narrowd exec --confine runs it or, with
		// NARROWD_WRAP_HELD=1, as --ticket does once the daemon released
		// the command (without the daemon's check).
		var writable []string
		if w := os.Getenv("NARROWD_WRAP_WRITE"); w != "" {
			writable = strings.Split(w, ":")
		}
		cmd := os.Getenv("NARROWD_WRAP_CMD")
		limits := func(name string) int64 {
			n, _ := strconv.ParseInt(os.Getenv(name), 10, 64)
			return n
		}
		spec := Spec{Writable: writable, DropSecretEnv: os.Getenv("NARROWD_WRAP_DROP") == "1", KeepHome: os.Getenv("NARROWD_WRAP_KEEPHOME") == "1",
			MaxProcs: int(limits("NARROWD_WRAP_NPROC")), MaxFileSize: limits("NARROWD_WRAP_FSIZE"), TmpSize: limits("NARROWD_WRAP_TMPSIZE"),
			MinFree: limits("NARROWD_WRAP_MINFREE")}
		if p := os.Getenv("NARROWD_WRAP_PROTECT"); p != "" {
			spec.Protected = strings.Split(p, ":")
		}
		if p := os.Getenv("NARROWD_WRAP_PATTERNS"); p != "" {
			spec.ProtectedPatterns = strings.Split(p, ",")
		}
		if p := os.Getenv("NARROWD_WRAP_OVERLAY"); p != "" {
			// ROOT:UPPER:WORK
			f := strings.Split(p, ":")
			spec.Overlays = []Overlay{{Root: f[0], Upper: f[1], Work: f[2]}}
		}
		held := os.Getenv("NARROWD_WRAP_HELD") == "1"
		if !held {
			spec.Args = []string{"bash", "-c", cmd}
		}
		sb, err := Start("", spec)
		if err != nil {
			fmt.Fprintln(os.Stderr, "wrap:", err)
			return 125
		}
		if held {
			if err := sb.Release(cmd); err != nil {
				sb.Abort()
				fmt.Fprintln(os.Stderr, "wrap:", err)
				return 125
			}
		}
		code, _ := sb.Wait()
		return code
	}
	return 99
}

// runner runs the wrapper as an unprivileged user: the tests' own user
// when it is not root, else narrowd-test (created here when absent).
type runner struct {
	bin      string // a copy of the test binary every user may run
	cred     *syscall.Credential
	uid, gid int
}

func newRunner(t *testing.T) *runner {
	t.Helper()
	if LandlockABI() < 1 {
		t.Skip("SKIPPING: this kernel has no Landlock; narrowd's sandbox refuses to run here")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := mkdirAll(t, 0o755)
	bin := filepath.Join(dir, "narrowd-sandbox.test")
	copyFile(t, self, bin, 0o755)
	r := &runner{bin: bin}
	r.uid, r.gid, r.cred, err = testenv.Unprivileged()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// dir makes a directory owned by the runner's user, so that only the
// sandbox, not file permissions, stands between it and a write.
func (r *runner) dir(t *testing.T) string {
	t.Helper()
	d := mkdirAll(t, 0o755)
	if err := os.Chown(d, r.uid, r.gid); err != nil {
		t.Fatal(err)
	}
	return d
}

// confine runs cmd with bash -c inside the sandbox as the runner's user,
// writable beneath write, and returns the exit code and output.
func (r *runner) confine(t *testing.T, write []string, cmd string, env ...string) (int, string) {
	t.Helper()
	c := exec.Command(r.bin)
	c.Env = append(os.Environ(), "NARROWD_SANDBOX_HELPER=wrap", "NARROWD_WRAP_WRITE="+strings.Join(write, ":"),
		"NARROWD_WRAP_CMD="+cmd, "HELPER="+r.bin)
	c.Env = append(c.Env, env...)
	c.SysProcAttr = &syscall.SysProcAttr{Credential: r.cred}
	out, err := c.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return ee.ExitCode(), string(out)
	case err != nil:
		t.Fatalf("run the wrapper: %v", err)
	}
	return 0, string(out)
}

// direct runs the same command outside the sandbox as the same user: the
// control that shows the sandbox, not the setup, refused.
func (r *runner) direct(t *testing.T, cmd string, env ...string) (int, string) {
	t.Helper()
	c := exec.Command("bash", "-c", cmd)
	c.Env = append(os.Environ(), "HELPER="+r.bin)
	c.Env = append(c.Env, env...)
	c.SysProcAttr = &syscall.SysProcAttr{Credential: r.cred}
	out, err := c.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), string(out)
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, string(out)
}

func mkdirAll(t *testing.T, mode os.FileMode) string {
	t.Helper()
	d, err := os.MkdirTemp("", "narrowd-sbt-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	if err := os.Chmod(d, mode); err != nil {
		t.Fatal(err)
	}
	return d
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestConfineUnprivileged proves the sandbox's confinement on the real
// kernel, run by a user without root: writes land only in the workspace
// and the private tmp; the network, Unix sockets outside and io_uring are
// out of reach. Each refusal has a control that succeeds outside.
func TestConfineUnprivileged(t *testing.T) {
	r := newRunner(t)
	ws, outside := r.dir(t), r.dir(t)

	// A loopback listener in the host's network namespace, owned by the
	// test, counting what reaches it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port

	// A Unix socket outside, reachable by path for the runner's user.
	sockDir := r.dir(t)
	sock := filepath.Join(sockDir, "relay.sock")
	uln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer uln.Close()
	os.Chmod(sock, 0o777)
	var uaccepted atomic.Int32
	go func() {
		for {
			c, err := uln.Accept()
			if err != nil {
				return
			}
			uaccepted.Add(1)
			c.Close()
		}
	}()

	tests := []struct {
		name    string
		cmd     string
		want    int  // exit code inside the sandbox
		control bool // run outside too and expect success (exit 0)
		check   func(t *testing.T)
	}{
		{name: "write-inside-workspace", cmd: "echo in > " + ws + "/made.txt", want: 0,
			check: func(t *testing.T) {
				if b, _ := os.ReadFile(ws + "/made.txt"); string(b) != "in\n" {
					t.Errorf("workspace file = %q, want the write", b)
				}
			}},
		{name: "write-private-tmp", cmd: `echo t > "$TMPDIR/t" && test "$(cat "$TMPDIR/t")" = t && case "$TMPDIR" in /tmp/narrowd-exec-*) ;; *) exit 9;; esac`, want: 0},
		{name: "write-outside", cmd: "echo out > " + outside + "/escaped.txt", want: 1, control: true,
			check: func(t *testing.T) {
				if exists(outside + "/escaped.txt") {
					// The control wrote it; the sandbox must not have.
					b, _ := os.ReadFile(outside + "/escaped.txt")
					if string(b) != "control\n" {
						t.Errorf("the sandbox wrote outside the workspace: %q", b)
					}
				}
			}},
		{name: "mkdir-outside", cmd: "mkdir " + outside + "/d", want: 1},
		{name: "loopback-tcp-listener", cmd: `"$HELPER"`, want: probeRefused, control: true},
		{name: "unix-socket-outside", cmd: `"$HELPER"`, want: probeRefused, control: true},
		{name: "socketpair-dgram", cmd: `"$HELPER"`, want: probeRefused},
		{name: "socketpair-stream-still-works", cmd: `"$HELPER"`, want: probeDone},
		{name: "io-uring", cmd: `"$HELPER"`, want: probeRefused},
		{name: "only-lo", cmd: `test "$(grep -c : /proc/net/dev)" = 1 && grep -q '^ *lo:' /proc/net/dev`, want: 0},
		{name: "no-privileges", cmd: `grep -q '^NoNewPrivs:.1' /proc/self/status && grep -q '^Seccomp:.2' /proc/self/status && grep -q '^CapEff:.0000000000000000' /proc/self/status`, want: 0},
		{name: "hard-link-out-refused", cmd: "echo secret > " + outside + "/victim; ln " + outside + "/victim " + ws + "/hl", want: 1},
	}
	probe := map[string]string{
		"loopback-tcp-listener":         "dial-tcp:127.0.0.1:" + strconv.Itoa(port),
		"unix-socket-outside":           "dial-unix:" + sock,
		"socketpair-dgram":              "socketpair-dgram",
		"socketpair-stream-still-works": "socketpair-stream",
		"io-uring":                      "uring",
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var env []string
			if p, ok := probe[tt.name]; ok {
				// Set on the command line only: the wrapper itself must
				// not see it.
				tt.cmd = "NARROWD_PROBE=" + p + " " + tt.cmd
			}
			tcpBefore, unixBefore := accepted.Load(), uaccepted.Load()
			code, out := r.confine(t, []string{ws}, tt.cmd, env...)
			if code != tt.want {
				t.Fatalf("exit %d, want %d\n%s", code, tt.want, out)
			}
			if accepted.Load() != tcpBefore || uaccepted.Load() != unixBefore {
				t.Errorf("the sandboxed command reached a listener outside")
			}
			if tt.control {
				cmd := tt.cmd
				if tt.name == "write-outside" {
					cmd = "echo control > " + outside + "/escaped.txt"
				}
				if code, out := r.direct(t, cmd, env...); code != 0 {
					t.Fatalf("control outside the sandbox failed (exit %d), so the test proves nothing:\n%s", code, out)
				}
				// The control's connection is counted by the accept
				// loop in its own time: wait for it, so that the next
				// case does not take it for its own.
				for i := 0; i < 500 && (tt.name == "loopback-tcp-listener" && accepted.Load() == tcpBefore ||
					tt.name == "unix-socket-outside" && uaccepted.Load() == unixBefore); i++ {
					time.Sleep(10 * time.Millisecond)
				}
			}
			if tt.check != nil {
				tt.check(t)
			}
		})
	}
}

// TestHardLinkInWorkspaceRefused: a file in the workspace hard-linked to
// a file outside would let a write "inside" change the outside file
// (Landlock judges the name used), so nothing runs.
func TestHardLinkInWorkspaceRefused(t *testing.T) {
	r := newRunner(t)
	ws, outside := r.dir(t), r.dir(t)
	victim := filepath.Join(outside, "victim")
	if err := os.WriteFile(victim, []byte("original\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(victim, filepath.Join(ws, "innocent.txt")); err != nil {
		t.Fatal(err)
	}
	code, out := r.confine(t, []string{ws}, "echo pwned > "+ws+"/innocent.txt; touch "+ws+"/ran")
	if code != 125 || !strings.Contains(out, "hard link") {
		t.Errorf("exit %d, want 125 naming the hard link:\n%s", code, out)
	}
	if b, _ := os.ReadFile(victim); string(b) != "original\n" {
		t.Errorf("the file outside changed: %q", b)
	}
	if exists(filepath.Join(ws, "ran")) {
		t.Error("the command ran")
	}
}

// TestSymlinkSwappedAfterCheck: a symlink in the workspace that points
// inside when the sandbox is built and is swapped to point outside before
// the command runs. Landlock resolves at each open, so the write fails.
func TestSymlinkSwappedAfterCheck(t *testing.T) {
	if LandlockABI() < 1 {
		t.Skip("SKIPPING: no Landlock")
	}
	ws, outside := mkdirAll(t, 0o755), mkdirAll(t, 0o755)
	inside := filepath.Join(ws, "target.txt")
	os.WriteFile(inside, []byte("inside\n"), 0o644)
	victim := filepath.Join(outside, "victim.txt")
	os.WriteFile(victim, []byte("original\n"), 0o644)
	link := filepath.Join(ws, "link")
	if err := os.Symlink(inside, link); err != nil {
		t.Fatal(err)
	}
	sb, err := Start("", Spec{Writable: []string{ws}})
	if err != nil {
		t.Fatal(err)
	}
	// Swap the link while the sandbox holds, as a concurrent process
	// outside would.
	os.Remove(link)
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	if err := sb.Release("echo pwned > " + link); err != nil {
		t.Fatal(err)
	}
	code, _ := sb.Wait()
	if code == 0 {
		t.Error("the write through the swapped link succeeded")
	}
	if b, _ := os.ReadFile(victim); string(b) != "original\n" {
		t.Errorf("the file outside changed: %q", b)
	}
}

// TestVerifyFromOutside: the daemon's check accepts a held sandbox and
// refuses a process that is not one, or not the wrapper's child.
func TestVerifyFromOutside(t *testing.T) {
	if LandlockABI() < 1 {
		t.Skip("SKIPPING: no Landlock")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ws := mkdirAll(t, 0o755)
	writeTree(t, ws, os.Getuid(), os.Getgid(), map[string]string{".git/HEAD": "ref\n", ".github/workflows/ci.yml": "on: push\n", "src/a.go": "package a\n"})
	patterns := []string{".git", ".envrc", ".github/workflows"}
	sb, err := Start("", Spec{Writable: []string{ws}, ProtectedPatterns: patterns})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Abort()
	r := sb.Ready()
	if r.LandlockABI < 1 {
		t.Errorf("Landlock ABI %d", r.LandlockABI)
	}
	want, err := ExpectFor([]string{ws}, patterns, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(want.ReadOnly) != 2 || len(want.Homes) != 1 {
		t.Fatalf("ExpectFor = %+v, want .git and .github/workflows read-only and the home hidden", want)
	}
	f, err := Verify(r.Pid, os.Getpid(), want, exe)
	if err != nil {
		t.Fatalf("Verify of a held sandbox: %v", err)
	}
	if !slices.Equal(f.ReadOnly, want.ReadOnly) || !slices.Equal(f.HomeHidden, want.Homes) || !f.PrivateProc ||
		f.MountNS == "" || f.PidNS == "" || f.MaxProcs != strconv.Itoa(DefaultMaxProcs) || f.MaxFileSize != strconv.Itoa(DefaultMaxFileSize) {
		t.Errorf("containment facts %+v, want %+v", f, want)
	}
	for name, bad := range map[string]Expect{
		"writable path expected read-only": {ReadOnly: []string{filepath.Join(ws, "src")}},
		"unhidden dir expected hidden":     {Homes: []string{ws}},
	} {
		if _, err := Verify(r.Pid, os.Getpid(), bad, exe); err == nil {
			t.Errorf("Verify accepted a sandbox with a %s", name)
		}
	}
	own, _ := os.Readlink("/proc/self/ns/net")
	if f.Exe != exe {
		t.Errorf("Verify names the binary %q, want %q", f.Exe, exe)
	}
	if f.NetNS == own || len(f.Interfaces) != 1 || f.Interfaces[0] != "lo" || f.Seccomp != 2 || f.NoNewPrivs != 1 {
		t.Errorf("facts %+v (own netns %s)", f, own)
	}
	if _, err := Verify(r.Pid, os.Getppid(), want, exe); err == nil {
		t.Error("Verify accepted a sandbox that is not the named wrapper's child")
	}
	if _, err := Verify(r.Pid, os.Getpid(), want, "/bin/sh"); err == nil {
		t.Error("Verify accepted a sandbox that does not run the named binary")
	}
	if _, err := Verify(r.Pid, os.Getpid(), want); err == nil {
		t.Error("Verify accepted a sandbox with no binary named")
	}
	if f, err := Verify(r.Pid, os.Getpid(), want, "/bin/sh", exe); err != nil || f.Exe != exe {
		t.Errorf("Verify of a sandbox that runs the second binary named: %q %v", f.Exe, err)
	}

	// A plain child of the same binary: same parent, same exe, but no
	// sandbox.
	plain := exec.Command(exe, "-test.run=^$")
	plain.Env = append(os.Environ(), "NARROWD_PROBE=wait-stdin")
	stdin, _ := plain.StdinPipe()
	if err := plain.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); plain.Process.Kill(); plain.Wait() }()
	if _, err := Verify(plain.Process.Pid, os.Getpid(), Expect{}, exe); err == nil {
		t.Error("Verify accepted a process outside any sandbox")
	}

	if err := sb.Release("echo released > " + ws + "/out"); err != nil {
		t.Fatal(err)
	}
	if code, err := sb.Wait(); code != 0 || err != nil {
		t.Fatalf("released command: exit %d %v", code, err)
	}
	if b, _ := os.ReadFile(ws + "/out"); string(b) != "released\n" {
		t.Errorf("the released command wrote %q", b)
	}
}

// TestAbortRunsNothing: a held sandbox whose command is never released
// runs nothing.
func TestAbortRunsNothing(t *testing.T) {
	if LandlockABI() < 1 {
		t.Skip("SKIPPING: no Landlock")
	}
	ws := mkdirAll(t, 0o755)
	sb, err := Start("", Spec{Writable: []string{ws}})
	if err != nil {
		t.Fatal(err)
	}
	tmp := sb.Tmp()
	sb.Abort()
	entries, _ := os.ReadDir(ws)
	if len(entries) != 0 {
		t.Errorf("the workspace changed: %v", entries)
	}
	if exists(tmp) {
		t.Errorf("the private tmp %s was left behind", tmp)
	}
}

func TestFilterShape(t *testing.T) {
	m, err := machine()
	if err != nil {
		t.Skip(err)
	}
	p := filter(m)
	if len(p) > 64 {
		t.Errorf("filter has %d instructions", len(p))
	}
	// Every jump lands inside the program.
	for i, ins := range p {
		if ins.Code&0x07 == 0x05 { // BPF_JMP
			if i+1+int(ins.Jt) >= len(p) || i+1+int(ins.Jf) >= len(p) {
				t.Errorf("instruction %d jumps outside the program", i)
			}
		}
	}
	if last := p[len(p)-1]; last.Code != bpfRetK {
		t.Errorf("the program does not end in a return")
	}
}

func TestStartRefusesBadSpecs(t *testing.T) {
	tests := []struct {
		name string
		spec Spec
	}{
		{"relative", Spec{Writable: []string{"ws"}}},
		{"missing", Spec{Writable: []string{"/nonexistent/narrowd"}}},
		{"root", Spec{Writable: []string{"/"}}},
		{"none", Spec{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if sb, err := Start("", tt.spec); err == nil {
				sb.Abort()
				t.Errorf("Start(%+v) succeeded", tt.spec)
			}
		})
	}
}

// TestNothingOutlivesTheCommand: the command is the init of its own PID
// namespace, so what it leaves running is killed when it ends and cannot
// write the workspace after the call returned.
func TestNothingOutlivesTheCommand(t *testing.T) {
	r := newRunner(t)
	ws := r.dir(t)
	late := filepath.Join(ws, "late")
	code, out := r.confine(t, []string{ws}, "(sleep 1; echo late > "+late+") & echo started")
	if code != 0 || !strings.Contains(out, "started") {
		t.Fatalf("exit %d\n%s", code, out)
	}
	time.Sleep(2 * time.Second)
	if exists(late) {
		t.Error("a process the command left behind kept running and wrote the workspace")
	}
	// The control: the same command outside does write it.
	if code, _ := r.direct(t, "(sleep 0.2; echo late > "+late+") & echo started"); code != 0 {
		t.Fatal("control failed")
	}
	time.Sleep(time.Second)
	if !exists(late) {
		t.Error("control: the background write did not happen outside the sandbox either, so the test proves nothing")
	}
}

// TestWrapperKilledEndsSandbox: when narrowd exec itself is killed
// (SIGKILL: no cleanup runs), the sandboxed command dies with it rather
// than running on, reparented, and writing the workspace later. It runs
// the real narrowd binary: as root, the parent-death signal armed at fork
// was lost across the stages' execs there, which the test binary's helper
// mode did not show.
func TestWrapperKilledEndsSandbox(t *testing.T) {
	r := newRunner(t)
	if testing.Short() {
		t.Skip("SKIPPING in -short: builds the narrowd binary")
	}
	narrowd, err := testenv.Narrowd()
	if err != nil {
		t.Fatal(err)
	}
	self := *r
	self.cred, self.uid, self.gid = nil, os.Getuid(), os.Getgid()
	for name, r := range map[string]*runner{"test-user": r, "self": &self} {
		t.Run(name, func(t *testing.T) { wrapperKilled(t, r, narrowd) })
	}
}

func wrapperKilled(t *testing.T, r *runner, narrowd string) {
	ws := r.dir(t)
	late := filepath.Join(ws, "late")
	script := "echo started; sleep 3; echo late > " + late
	run := func() *exec.Cmd {
		c := exec.Command(narrowd, "exec", "--confine", "--write", ws, "--", "/bin/sh", "-c", script)
		c.Dir = ws
		c.SysProcAttr = &syscall.SysProcAttr{Credential: r.cred}
		return c
	}
	c := run()
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.Contains(line, "started") {
		c.Process.Kill()
		c.Wait()
		t.Fatalf("the command did not start in the sandbox: %q %v", line, err)
	}
	// Not at once: the wrapper has settled into waiting for the command.
	time.Sleep(time.Second)
	c.Process.Kill()
	c.Wait()
	time.Sleep(3 * time.Second)
	if exists(late) {
		t.Error("the sandboxed command outlived the killed narrowd exec and wrote the workspace")
	}
	// The control: the same command, not killed, writes the file.
	if out, err := run().CombinedOutput(); err != nil || !exists(late) {
		t.Fatalf("control: %v, late written %v\n%s", err, exists(late), out)
	}
}

// writeTree creates files (path → content, relative to root) and the
// directories above them, owned by uid and gid and readable by them.
func writeTree(t *testing.T, root string, uid, gid int, files map[string]string) {
	t.Helper()
	for rel, content := range files {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, uid, gid)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestSecretsHidden proves on the real kernel that the confined program
// can neither read nor list the person's secret locations, including the
// target of a symlinked one, while system files and the workspace stay
// readable; with the home hidden (the repository's code) only the
// allowlist of home.toml shows, and with KeepHome (narrowd's MCP
// servers) the rest of the home shows. Each refusal has a control: the
// same command outside the sandbox, as the same user, reads the secret.
func TestSecretsHidden(t *testing.T) {
	r := newRunner(t)
	home, elsewhere, ws := r.dir(t), r.dir(t), r.dir(t)
	writeTree(t, home, r.uid, r.gid, map[string]string{
		".ssh/id_rsa":                 "SECRET-SSH-KEY\n",
		".aws/credentials":            "SECRET-AWS\n",
		".codex/auth.json":            "SECRET-CODEX\n",
		".bash_history":               "SECRET-HISTORY\n",
		".bashrc":                     "export GITHUB_TOKEN=SECRET-RC\n",
		"other/.env":                  "SECRET-OTHER-PROJECT\n",
		".config/gh/x.yml":            "SECRET-GH\n",
		".config/go/env":              "GOFLAGS=-mod=mod\n",
		".cache/x":                    "cache-ok\n",
		".cache/go-build/00/x":        "gocache-ok\n",
		".cargo/credentials.toml":     "SECRET-CARGO\n",
		".cargo/registry/index/x.txt": "registry-ok\n",
		"go/pkg/mod/m/a.go":           "package a\n",
		"proj/src/main.go":            "home-workspace-ok\n",
	})
	writeTree(t, ws, r.uid, r.gid, map[string]string{"src/main.go": "workspace-ok\n"})

	// A second home whose .ssh is a symlink to a directory elsewhere:
	// the target is what must be hidden; its siblings stay readable.
	linked := r.dir(t)
	writeTree(t, elsewhere, r.uid, r.gid, map[string]string{
		"keys/id_ed25519": "SECRET-LINKED-KEY\n",
		"notes.txt":       "sibling-ok\n",
	})
	if err := os.Symlink(filepath.Join(elsewhere, "keys"), filepath.Join(linked, ".ssh")); err != nil {
		t.Fatal(err)
	}
	os.Lchown(filepath.Join(linked, ".ssh"), r.uid, r.gid)

	const (
		shown    = iota // readable in both modes
		hidden          // unreadable in both modes
		onlyKeep        // readable only with KeepHome
	)
	tests := []struct {
		name    string
		home    string
		cmd     string
		want    int
		wantOut string
		ws      string // the writable root, default ws
	}{
		{name: "read-ssh-key", home: home, cmd: `cat "$HOME/.ssh/id_rsa"`, want: hidden},
		{name: "list-ssh", home: home, cmd: `ls -a "$HOME/.ssh"`, want: hidden, wantOut: "id_rsa"},
		{name: "read-aws", home: home, cmd: `cat "$HOME/.aws/credentials"`, want: hidden},
		{name: "read-codex", home: home, cmd: `cat "$HOME/.codex/auth.json"`, want: hidden},
		{name: "list-codex", home: home, cmd: `ls "$HOME/.codex"`, want: hidden, wantOut: "auth.json"},
		{name: "read-history", home: home, cmd: `cat "$HOME/.bash_history"`, want: hidden},
		{name: "read-gh-token", home: home, cmd: `cat "$HOME/.config/gh/x.yml"`, want: hidden},
		{name: "read-cargo-credentials", home: home, cmd: `cat "$HOME/.cargo/credentials.toml"`, want: hidden},
		{name: "copy-into-workspace", home: home, cmd: `cp "$HOME/.ssh/id_rsa" ` + ws + `/stolen`, want: hidden},
		{name: "read-shell-rc", home: home, cmd: `cat "$HOME/.bashrc"`, want: onlyKeep, wantOut: "SECRET-RC"},
		{name: "read-other-project", home: home, cmd: `cat "$HOME/other/.env"`, want: onlyKeep, wantOut: "SECRET-OTHER"},
		{name: "list-home", home: home, cmd: `ls -a "$HOME"`, want: onlyKeep, wantOut: "other"},
		{name: "read-cache", home: home, cmd: `cat "$HOME/.cache/x"`, want: onlyKeep, wantOut: "cache-ok"},
		{name: "read-go-build-cache", home: home, cmd: `cat "$HOME/.cache/go-build/00/x"`, wantOut: "gocache-ok"},
		{name: "read-cargo-registry", home: home, cmd: `cat "$HOME/.cargo/registry/index/x.txt"`, wantOut: "registry-ok"},
		{name: "read-go-env", home: home, cmd: `cat "$HOME/.config/go/env"`, wantOut: "GOFLAGS"},
		{name: "list-module-cache", home: home, cmd: `ls "$HOME/go/pkg/mod/m"`, wantOut: "a.go"},
		{name: "read-system-files", home: home, cmd: `head -1 /etc/passwd && ls /usr/bin | grep -x bash`, wantOut: "bash"},
		{name: "read-workspace", home: home, cmd: `cat ` + ws + `/src/main.go && ls ` + ws + `/src`, wantOut: "workspace-ok"},
		{name: "workspace-in-home", home: home, ws: filepath.Join(home, "proj"),
			cmd: `cat "$HOME/proj/src/main.go" && echo w > "$HOME/proj/new"`, wantOut: "home-workspace-ok"},
		{name: "read-linked-ssh", home: linked, cmd: `cat "$HOME/.ssh/id_ed25519"`, want: hidden},
		{name: "read-link-target", home: linked, cmd: `cat ` + elsewhere + `/keys/id_ed25519`, want: hidden},
		{name: "list-link-target", home: linked, cmd: `ls ` + elsewhere + `/keys`, want: hidden, wantOut: "id_ed25519"},
		{name: "read-target-sibling", home: linked, cmd: `cat ` + elsewhere + `/notes.txt`, wantOut: "sibling-ok"},
	}
	for _, keep := range []bool{false, true} {
		mode := "home-hidden"
		if keep {
			mode = "keep-home"
		}
		for _, tt := range tests {
			t.Run(mode+"/"+tt.name, func(t *testing.T) {
				root := cmp.Or(tt.ws, ws)
				env := []string{"HOME=" + tt.home}
				if keep {
					env = append(env, "NARROWD_WRAP_KEEPHOME=1")
				}
				code, out := r.confine(t, []string{root}, tt.cmd, env...)
				if tt.want == shown || tt.want == onlyKeep && keep {
					if code != 0 || !strings.Contains(out, tt.wantOut) {
						t.Fatalf("exit %d, want 0 and %q:\n%s", code, tt.wantOut, out)
					}
					return
				}
				// A read fails; a listing fails or is empty.
				listing := strings.HasPrefix(tt.name, "list-")
				if strings.Contains(out, "SECRET") || !listing && code == 0 || listing && tt.wantOut != "" && strings.Contains(out, tt.wantOut) {
					t.Fatalf("exit %d, want no secret:\n%s", code, out)
				}
				if b, err := os.ReadFile(filepath.Join(ws, "stolen")); err == nil {
					t.Fatalf("the secret was copied into the workspace: %q", b)
				}
				code, out = r.direct(t, tt.cmd, "HOME="+tt.home)
				if code != 0 || listing && !strings.Contains(out, tt.wantOut) {
					t.Fatalf("control outside the sandbox failed (exit %d), so the test proves nothing:\n%s", code, out)
				}
				os.Remove(filepath.Join(ws, "stolen"))
			})
		}
	}
}

// TestWorkspaceInHiddenRefused: a workspace inside a hidden location, or
// holding one, would hand the secrets to the program (its rule grants
// everything beneath it); the sandbox refuses to start and nothing runs.
func TestWorkspaceInHiddenRefused(t *testing.T) {
	r := newRunner(t)
	home := r.dir(t)
	writeTree(t, home, r.uid, r.gid, map[string]string{".ssh/proj/go.mod": "module p\n", "proj/go.mod": "module q\n"})
	for name, ws := range map[string]string{"inside": filepath.Join(home, ".ssh", "proj"), "holding": home} {
		t.Run(name, func(t *testing.T) {
			code, out := r.confine(t, []string{ws}, "touch "+ws+"/ran", "HOME="+home)
			if code != 125 || !strings.Contains(out, "hides") {
				t.Errorf("exit %d, want 125 naming the hidden location:\n%s", code, out)
			}
			if exists(filepath.Join(ws, "ran")) {
				t.Error("the command ran")
			}
		})
	}
	// The control: a workspace beside the hidden ones starts.
	ws := filepath.Join(home, "proj")
	if code, out := r.confine(t, []string{ws}, "touch "+ws+"/ran", "HOME="+home); code != 0 || !exists(filepath.Join(ws, "ran")) {
		t.Fatalf("control: a workspace in $HOME beside the secrets did not run (exit %d):\n%s", code, out)
	}
}

// TestReadRules: the allow-list grants every sibling on the way to a
// hidden path, and never the hidden path, a directory on the way, or a
// symlink (whose rule would bind its target).
func TestReadRules(t *testing.T) {
	root := mkdirAll(t, 0o755)
	writeTree(t, root, os.Getuid(), os.Getgid(), map[string]string{
		"a/secret/k": "", "a/other/f": "", "a/file": "", "b/f": "",
	})
	os.Symlink(filepath.Join(root, "a", "secret"), filepath.Join(root, "a", "link"))
	hidden := []string{filepath.Join(root, "a", "secret")}
	got := readRules(hidden)
	has := func(p string) bool { return slices.Contains(got, p) }
	for _, p := range []string{"a/other", "a/file", "b"} {
		if !has(filepath.Join(root, p)) {
			t.Errorf("%s is not granted", p)
		}
	}
	for _, p := range []string{"a/secret", "a", ".", "a/link"} {
		if has(filepath.Join(root, p)) {
			t.Errorf("%s is granted", p)
		}
	}
	if has("/") {
		t.Error("/ is granted")
	}
	if !has("/usr") {
		t.Error("/usr, a sibling on the way, is not granted")
	}
	if got := readRules(nil); !slices.Equal(got, []string{"/"}) {
		t.Errorf("with nothing hidden the rules are %v, want /", got)
	}
}

// TestHiddenPaths: secret locations are found under $HOME, the XDG
// directories and the variables that move them, by their real place, the link and its target both; what
// does not exist is skipped.
func TestHiddenPaths(t *testing.T) {
	home, xdg, elsewhere := mkdirAll(t, 0o755), mkdirAll(t, 0o755), mkdirAll(t, 0o755)
	writeTree(t, home, os.Getuid(), os.Getgid(), map[string]string{".aws/credentials": "", ".netrc": "", ".cache/x": ""})
	writeTree(t, xdg, os.Getuid(), os.Getgid(), map[string]string{"gh/hosts.yml": ""})
	writeTree(t, elsewhere, os.Getuid(), os.Getgid(), map[string]string{
		"keys/id": "", "codex/auth.json": "", "kube/a": "", "kube/b": "", "cargo/credentials.toml": "", "cargo/registry/x": "",
	})
	os.Symlink(filepath.Join(elsewhere, "keys"), filepath.Join(home, ".ssh"))
	got, err := hiddenPaths([]string{"HOME=" + home, "XDG_CONFIG_HOME=" + xdg, "CODEX_HOME=" + elsewhere + "/codex",
		"KUBECONFIG=" + elsewhere + "/kube/a:" + elsewhere + "/kube/b", "CARGO_HOME=" + elsewhere + "/cargo"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{home + "/.aws", home + "/.netrc", home + "/.ssh", elsewhere + "/keys", xdg + "/gh",
		elsewhere + "/codex", elsewhere + "/kube/a", elsewhere + "/kube/b", elsewhere + "/cargo/credentials.toml"} {
		if !slices.Contains(got, p) {
			t.Errorf("%s is not hidden: %v", p, got)
		}
	}
	for _, p := range got {
		if within(p, home) && !slices.Contains([]string{".aws", ".netrc", ".ssh"}, filepath.Base(p)) {
			t.Errorf("%s is hidden, but is not a secret location that exists", p)
		}
	}
	if slices.Contains(got, elsewhere+"/cargo") || slices.Contains(got, elsewhere+"/cargo/registry") {
		t.Errorf("the cargo registry is hidden: %v", got)
	}
}

// TestSecretEnvDropped runs a program in the sandbox, held as for a
// ticket and confined as for --confine, with secret-looking variables
// set. With DropSecretEnv it sees FOO, PATH and the look-alike
// GIT_AUTHOR_NAME but none of the secrets, and its stderr has one line
// naming them without a value; without it (the control) every value
// passes through and there is no such line.
func TestSecretEnvDropped(t *testing.T) {
	r := newRunner(t)
	ws := r.dir(t)
	secrets := map[string]string{
		"GH_TOKEN":              "ghp-VALUE-ONE",
		"AWS_SECRET_ACCESS_KEY": "VALUE-TWO",
		"MY_API_KEY":            "VALUE-THREE",
	}
	env := []string{"FOO=bar", "GIT_AUTHOR_NAME=kept-author"}
	for k, v := range secrets {
		env = append(env, k+"="+v)
	}
	// Names, never values, of the rest of the environment (the tests'
	// own may hold real tokens): compgen lists the exported names.
	cmd := `echo "GH=[$GH_TOKEN] AWS=[$AWS_SECRET_ACCESS_KEY] KEY=[$MY_API_KEY] FOO=[$FOO] AUTHOR=[$GIT_AUTHOR_NAME]"; ` +
		`test -n "$PATH" && echo PATH-set; compgen -e | sed 's/^/name:/'; ` +
		// The wrapper outside still holds them: its /proc/PID/environ
		// (Landlock's ptrace scope refuses it) must not be a way round.
		// The control counts the program's own. The pattern is split, as
		// the command's text is in the environment too (NARROWD_WRAP_CMD).
		`echo "leaked=$(cat /proc/[0-9]*/environ 2>/dev/null | tr '\0' '\n' | grep -c -- '-VAL''UE-')"`
	for _, held := range []bool{true, false} {
		for _, drop := range []bool{true, false} {
			t.Run(fmt.Sprintf("held=%v/drop=%v", held, drop), func(t *testing.T) {
				e := append([]string{"NARROWD_WRAP_HELD=0", "NARROWD_WRAP_DROP=0"}, env...)
				if held {
					e = append(e, "NARROWD_WRAP_HELD=1")
				}
				if drop {
					e = append(e, "NARROWD_WRAP_DROP=1")
				}
				code, out := r.confine(t, []string{ws}, cmd, e...)
				if code != 0 {
					t.Fatalf("exit %d\n%s", code, out)
				}
				for _, want := range []string{"FOO=[bar]", "AUTHOR=[kept-author]", "PATH-set", "name:FOO\n", "name:PATH\n", "name:HOME\n"} {
					if !strings.Contains(out, want) {
						t.Errorf("the program does not see %q:\n%s", want, out)
					}
				}
				notices := 0
				for _, line := range strings.Split(out, "\n") {
					if strings.Contains(line, "variables that may hold secrets") {
						notices++
						for name := range secrets {
							if !strings.Contains(line, " "+name) {
								t.Errorf("the notice does not name %s: %q", name, line)
							}
						}
						if strings.Contains(line, "FOO") || strings.Contains(line, "GIT_AUTHOR_NAME") || strings.Contains(line, " PATH") {
							t.Errorf("the notice names a kept variable: %q", line)
						}
					}
				}
				for name, value := range secrets {
					seen := strings.Contains(out, value)
					named := strings.Contains(out, "name:"+name+"\n")
					if drop && (seen || named) {
						t.Errorf("%s reached the program (value seen %v, name listed %v):\n%s", name, seen, named, out)
					}
					if !drop && (!seen || !named) {
						t.Errorf("control: without DropSecretEnv %s did not pass through, so the test proves nothing:\n%s", name, out)
					}
				}
				leaked := regexp.MustCompile(`leaked=(\d+)`).FindStringSubmatch(out)
				if leaked == nil {
					t.Fatalf("no count of values in /proc/*/environ:\n%s", out)
				}
				if n, _ := strconv.Atoi(leaked[1]); drop && n != 0 || !drop && n == 0 {
					t.Errorf("%s secret values in /proc/*/environ, drop %v", leaked[1], drop)
				}
				if want := map[bool]int{true: 1, false: 0}[drop]; notices != want {
					t.Errorf("%d notice lines, want %d:\n%s", notices, want, out)
				}
				if !drop {
					return
				}
				// The line comes before anything the program printed.
				if first, _, _ := strings.Cut(out, "\n"); !strings.HasPrefix(first, "narrowd exec: the sandbox removed ") {
					t.Errorf("the first line is %q, want the notice", first)
				}
			})
		}
	}
}
