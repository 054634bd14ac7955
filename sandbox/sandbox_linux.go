//go:build linux

package sandbox

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The inherited descriptors of the stages.
const (
	specFD    = 3 // the Spec as JSON, then EOF
	statusFD  = 4 // the lock stage writes "ready ABI\n" or "error TEXT\n"
	releaseFD = 5 // held mode: the command text, then EOF
)

// maxCommand bounds the released command text.
const maxCommand = 1 << 20

// Sandbox is one started sandbox: the net stage's process, which becomes
// the lock stage and then the program.
type Sandbox struct {
	cmd     *exec.Cmd
	release *os.File // nil once released or aborted
	tmp     string
	ready   Ready
	// watch are the protected paths no mount covers, looked at again
	// after the run.
	watch []Watched
	// roots and minFree are the writable roots (not the private tmp, a
	// bounded tmpfs) whose file systems the wrapper watches while the
	// command runs, and the free space below which it stops the command.
	roots   []string
	minFree int64
	// notice names the read-only protected paths, for stderr when the
	// command fails (a write there fails with EROFS, which does not say
	// who made the path read-only).
	notice string
}

// Start builds the sandbox and waits until the lock stage is confined.
// self is the narrowd binary to re-execute ("" means /proc/self/exe).
// In confinement mode (spec.Args set) the program is running when Start
// returns; in held mode the lock stage waits for [Sandbox.Release].
// Writable directories holding a file with more than one hard link are
// refused: the file's other name may lie outside, and Landlock judges
// the name used, not the inode.
func Start(self string, spec Spec) (*Sandbox, error) {
	if self == "" {
		self = "/proc/self/exe"
	}
	var err error
	if spec.Writable, err = cleanDirs(spec.Writable); err != nil {
		return nil, err
	}
	if len(spec.Writable) == 0 && spec.Args == nil {
		return nil, errors.New("no writable directory for the sandbox")
	}
	if spec.Dir == "" {
		// Confinement runs where narrowd exec was started; a held command
		// runs in its workspace.
		if spec.Args != nil || len(spec.Writable) == 0 {
			spec.Dir, err = os.Getwd()
			if err != nil {
				return nil, fmt.Errorf("failed to read the working directory: %w", err)
			}
		} else {
			spec.Dir = spec.Writable[0]
		}
	}
	env := spec.Env
	if env == nil {
		env = os.Environ()
	}
	hidden, err := hiddenPaths(env)
	if err != nil {
		return nil, err
	}
	if err := checkHidden(spec.Writable, hidden); err != nil {
		return nil, err
	}
	// After hiddenPaths: the places a dropped variable names
	// (AWS_SHARED_CREDENTIALS_FILE, ...) stay hidden.
	var dropped []string
	if spec.DropSecretEnv {
		env, dropped = dropSecretEnv(env)
	}
	patterns := spec.ProtectedPatterns
	if patterns == nil {
		if patterns, err = DefaultProtectedPatterns(); err != nil {
			return nil, err
		}
	}
	prot, err := Protect(spec.Writable, patterns, spec.Protected)
	if err != nil {
		return nil, err
	}
	if err := checkHardLinks(spec.Writable, spec.MaxScan, &prot, patterns); err != nil {
		return nil, err
	}
	if err := checkOverlays(spec.Overlays, spec.Writable); err != nil {
		return nil, err
	}
	var allow []HomeEntry
	if !spec.KeepHome {
		if allow, err = DefaultHome(); err != nil {
			return nil, err
		}
		extra, err := ParseHomeAllow(spec.HomeAllow)
		if err != nil {
			return nil, err
		}
		allow = append(allow, extra...)
	}
	tmp, err := os.MkdirTemp("", "narrowd-exec-")
	if err != nil {
		return nil, fmt.Errorf("failed to create the private tmp: %w", err)
	}
	s := &Sandbox{tmp: tmp}
	ok := false
	defer func() {
		if !ok {
			s.Abort()
		}
	}()
	if err := checkHidden([]string{tmp}, hidden); err != nil {
		return nil, err
	}
	spec.Writable = append(spec.Writable, tmp)
	s.roots = slices.Clone(spec.Writable[:len(spec.Writable)-1])
	plan := mountPlan{
		Tmp: tmp, TmpSize: orDefault(spec.TmpSize, DefaultTmpSize), Overlays: spec.Overlays, Protect: prot,
		MaxProcs: int(orDefault(int64(spec.MaxProcs), DefaultMaxProcs)), MaxFileSize: orDefault(spec.MaxFileSize, DefaultMaxFileSize),
	}
	if !spec.KeepHome {
		planHome(&plan, homeDirs(env), allow, spec.Writable)
	}
	plan.Masks = planMasks(&plan, hidden)
	if len(spec.Overlays) == 0 {
		// With an overlay the run's files land in its upper layer; the
		// undo's apply step must refuse protected paths there.
		s.watch = prot.Watch
	}
	s.notice = protectedNotice(prot.ReadOnly, spec.Writable)
	s.minFree = spec.MinFree

	specR, specW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	statusR, statusW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	releaseR, releaseW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	s.release = releaseW

	env = append(withoutVar(env, "TMPDIR"), "TMPDIR="+tmp)

	uid, gid := os.Getuid(), os.Getgid()
	cmd := exec.Command(self, StageArgs("net")...)
	// Keep the caller's argv[0]: a multi-call binary (a test binary run
	// as narrowd) dispatches on it.
	cmd.Args[0] = os.Args[0]
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.ExtraFiles = []*os.File{specR, statusW, releaseR}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// A PID namespace of its own: when the command (its init) ends, the
		// kernel kills whatever it left behind, so nothing keeps writing
		// the workspace after the call returned.
		// A mount namespace: read-only protected paths, the hidden home,
		// the private /proc.
		Cloneflags:                 syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET | syscall.CLONE_NEWPID | syscall.CLONE_NEWNS,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: insideID(uid), HostID: uid, Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: insideID(gid), HostID: gid, Size: 1}},
		GidMappingsEnableSetgroups: false,
		// No controlling terminal: no TIOCSTI into the agent's terminal.
		Setsid:    true,
		Pdeathsig: syscall.SIGKILL,
		// Only to bring lo up and build the mounts in the net stage,
		// which drops them. overlayfs needs DAC_OVERRIDE to set up its
		// work directory (mode 0) when the mounter is not root inside.
		AmbientCaps: []uintptr{unix.CAP_NET_ADMIN, unix.CAP_SYS_ADMIN, unix.CAP_DAC_OVERRIDE},
	}
	// Pdeathsig fires when the thread that forked exits, not the process:
	// keep this goroutine on its thread until the sandbox is gone.
	runtime.LockOSThread()
	if err := cmd.Start(); err != nil {
		runtime.UnlockOSThread()
		specR.Close()
		statusW.Close()
		releaseR.Close()
		return nil, fmt.Errorf("failed to start the sandbox (user, network, PID and mount namespaces): %w", err)
	}
	s.cmd = cmd
	specR.Close()
	statusW.Close()
	releaseR.Close()

	err = json.NewEncoder(specW).Encode(stageSpec{Spec: spec, Hidden: hidden, Dropped: dropped, Mounts: plan})
	specW.Close()
	if err != nil {
		return nil, fmt.Errorf("failed to send the sandbox spec: %w", err)
	}
	line, err := bufio.NewReader(io.LimitReader(statusR, 4096)).ReadString('\n')
	statusR.Close()
	if err != nil {
		return nil, errors.New("the sandbox failed before it was confined (see its error above)")
	}
	word, rest, _ := strings.Cut(strings.TrimSpace(line), " ")
	if word != "ready" {
		return nil, fmt.Errorf("the sandbox failed: %s", rest)
	}
	abi, err := strconv.Atoi(rest)
	if err != nil {
		return nil, fmt.Errorf("the sandbox reported %q", line)
	}
	s.ready = Ready{Pid: cmd.Process.Pid, LandlockABI: abi}
	if spec.Args != nil {
		s.release.Close()
		s.release = nil
	}
	ok = true
	return s, nil
}

// stageSpec is what [Start] sends the lock stage: the spec, the real
// paths to hide, resolved by the wrapper before anything ran, and the
// names of the variables removed from the environment (the stages and
// the program never see their values).
type stageSpec struct {
	Spec
	Hidden  []string  `json:"hidden"`
	Dropped []string  `json:"dropped,omitempty"`
	Mounts  mountPlan `json:"mounts"`
}

func orDefault(v, def int64) int64 {
	if v <= 0 {
		return def
	}
	return v
}

// checkOverlays refuses an overlay whose root is not a writable root.
func checkOverlays(overlays []Overlay, writable []string) error {
	for i, o := range overlays {
		root, err := filepath.EvalSymlinks(o.Root)
		if err != nil || !slices.Contains(writable, root) {
			return fmt.Errorf("overlay root %q is not a writable directory", o.Root)
		}
		if !filepath.IsAbs(o.Upper) || !filepath.IsAbs(o.Work) {
			return fmt.Errorf("overlay of %s: upper and work must be absolute", o.Root)
		}
		overlays[i].Root = root
	}
	return nil
}

// insideID is the id a host id maps to inside the sandbox: the same id,
// except that root maps to an unprivileged id, so that nothing inside runs
// as root of its user namespace (execve would give root every capability
// there again).
func insideID(id int) int {
	if id == 0 {
		return 65532
	}
	return id
}

// Ready returns what the lock stage reported.
func (s *Sandbox) Ready() Ready { return s.ready }

// Tmp is the sandbox's private tmp directory.
func (s *Sandbox) Tmp() string { return s.tmp }

// Release sends the command text to a held sandbox, which runs it with
// bash -c in the spec's directory. Release it only after [Verify].
func (s *Sandbox) Release(command string) error {
	if s.release == nil {
		return errors.New("the sandbox is not waiting for a command")
	}
	if command == "" || len(command) > maxCommand {
		return errors.New("the command is empty or too long")
	}
	_, err := io.WriteString(s.release, command)
	cerr := s.release.Close()
	s.release = nil
	if err != nil || cerr != nil {
		return fmt.Errorf("failed to release the command: %w", errors.Join(err, cerr))
	}
	return nil
}

// Signal forwards a signal to the sandboxed process.
func (s *Sandbox) Signal(sig os.Signal) {
	if s.cmd != nil && s.cmd.Process != nil {
		s.cmd.Process.Signal(sig)
	}
}

// Wait waits for the program and returns its exit code (128+signal when
// it was killed), then removes the private tmp.
func (s *Sandbox) Wait() (int, error) {
	defer runtime.UnlockOSThread()
	defer os.RemoveAll(s.tmp)
	if s.release != nil {
		s.release.Close()
		s.release = nil
	}
	stop := make(chan struct{})
	full := make(chan string, 1)
	go s.watchDisk(stop, full)
	err := s.cmd.Wait()
	close(stop)
	select {
	case why := <-full:
		fmt.Fprintf(os.Stderr, "narrowd: stopped the sandboxed command: %s\n", why)
	default:
	}
	// The command was its PID namespace's init: nothing of it runs now,
	// so what the watched paths hold is final.
	moved := checkWatched(s.watch, os.Stderr)
	st, ok := s.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok {
		return 1, err
	}
	code := st.ExitStatus()
	if st.Signaled() {
		code = 128 + int(st.Signal())
	}
	if code == 0 && len(moved) > 0 {
		code = 1
	}
	if code != 0 && s.notice != "" {
		io.WriteString(os.Stderr, s.notice)
	}
	return code, nil
}

// diskPoll is how often the wrapper looks at the free space of the
// writable roots' file systems while the command runs.
const diskPoll = 200 * time.Millisecond

// watchDisk kills the sandbox (its init, and with it the whole PID
// namespace) when a writable root's file system has less free space than
// the floor: [Spec.MinFree], or [DefaultMinFree] but at most half of what
// was free when the command started. RLIMIT_FSIZE bounds one file; this
// bounds many. It says why on full and returns when stop closes.
func (s *Sandbox) watchDisk(stop <-chan struct{}, full chan<- string) {
	floors := make([]int64, len(s.roots))
	for i, r := range s.roots {
		floors[i] = s.minFree
		if floors[i] <= 0 {
			floors[i] = min(DefaultMinFree, freeBytes(r)/2)
		}
	}
	t := time.NewTicker(diskPoll)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		for i, r := range s.roots {
			if free := freeBytes(r); free >= 0 && free < floors[i] {
				full <- fmt.Sprintf("the file system of %s had %d MiB free, below narrowd's floor of %d MiB", r, free>>20, floors[i]>>20)
				s.cmd.Process.Kill()
				return
			}
		}
	}
}

// freeBytes is the space an unprivileged user may still write on the
// file system of path, or -1 when it cannot be read.
func freeBytes(path string) int64 {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return -1
	}
	return int64(st.Bavail) * st.Bsize
}

// protectedNotice is the line a failed command's stderr gets: which
// paths narrowd kept read-only, relative to their writable root.
func protectedNotice(readOnly, roots []string) string {
	if len(readOnly) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("narrowd: read-only in narrowd's sandbox (writes there fail with \"Read-only file system\", renames and deletes with \"Device or resource busy\"):")
	for _, p := range readOnly {
		name := p
		for _, r := range roots {
			if rel, err := filepath.Rel(r, p); err == nil && within(p, r) {
				name = rel
				break
			}
		}
		b.WriteString(" " + name)
	}
	b.WriteString("\n")
	return b.String()
}

// Abort kills a sandbox whose command was not released (a failed check):
// nothing runs.
func (s *Sandbox) Abort() {
	if s.release != nil {
		s.release.Close()
		s.release = nil
	}
	if s.cmd != nil && s.cmd.Process != nil {
		s.cmd.Process.Kill()
		s.cmd.Wait()
		runtime.UnlockOSThread()
		s.cmd = nil
	}
	if s.tmp != "" {
		os.RemoveAll(s.tmp)
	}
}

func withoutVar(env []string, name string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// cleanDirs checks that every writable directory is absolute and exists,
// and resolves its symlinks now, so that the rule binds the real place.
func cleanDirs(dirs []string) ([]string, error) {
	var out []string
	for _, d := range dirs {
		if !filepath.IsAbs(d) {
			return nil, fmt.Errorf("writable directory %q is not absolute", d)
		}
		real, err := filepath.EvalSymlinks(d)
		if err != nil {
			return nil, fmt.Errorf("writable directory: %w", err)
		}
		fi, err := os.Stat(real)
		if err != nil {
			return nil, fmt.Errorf("writable directory: %w", err)
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("writable directory %q is not a directory", d)
		}
		if real == "/" {
			return nil, errors.New("the root directory cannot be writable in the sandbox")
		}
		out = append(out, real)
	}
	return out, nil
}

// ErrHardLink reports a file in a writable directory with another name
// that may lie outside it.
var ErrHardLink = errors.New("a file in the writable directory has more than one hard link")

// checkHardLinks walks the writable directories and refuses any
// non-directory with more than one link (point-in-time: a link made later
// by another process outside the sandbox is not seen; inside, Landlock
// refuses to link a file into a place where it would gain rights). It
// does not descend into the read-only paths of prot: a file there cannot
// be written through that name, and its other names, if they lie in the
// walked part, are refused there. What matches a "**/" pattern becomes
// read-only too.
func checkHardLinks(dirs []string, max int, prot *Protection, patterns []string) error {
	if max <= 0 {
		max = DefaultMaxScan
	}
	n := 0
	for _, root := range dirs {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			n++
			if n > max {
				return fmt.Errorf("the writable directory %s has more than %d entries, too many to check for hard links", root, max)
			}
			if path != root {
				if prot.covers(path) {
					if d.IsDir() {
						return fs.SkipDir
					}
					return nil
				}
				if rel, _ := filepath.Rel(root, path); matchDeep(patterns, filepath.ToSlash(rel)) && d.Type()&fs.ModeSymlink == 0 {
					prot.ReadOnly = append(prot.ReadOnly, path)
					prot.anchor(root, filepath.Dir(path))
					if d.IsDir() {
						return fs.SkipDir
					}
				}
			}
			if d.IsDir() || d.Type()&fs.ModeSymlink != 0 {
				return nil
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
				return fmt.Errorf("%w: %s (%d links): writes through it could change a file outside; nothing ran", ErrHardLink, path, st.Nlink)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	prot.normalize()
	return nil
}

// RunStage runs one sandbox stage in the current process; `narrowd exec
// --stage NAME` calls it. It returns only on failure: the caller prints
// the error and exits non-zero, and nothing runs.
func RunStage(name string) error {
	switch name {
	case "net":
		return netStage()
	case "lock":
		err := lockStage()
		if err != nil {
			fmt.Fprintf(os.NewFile(statusFD, "status"), "error %s\n", oneLine(err.Error()))
		}
		return err
	}
	return fmt.Errorf("unknown sandbox stage %q", name)
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }

// netStage brings lo up, drops its capabilities and execs the lock stage.
func netStage() error {
	runtime.LockOSThread() // the ambient capabilities cleared below are per thread
	raw, err := readFD(specFD, 4*maxCommand)
	if err != nil {
		return fmt.Errorf("failed to read the sandbox spec: %w", err)
	}
	var spec stageSpec
	if err := json.Unmarshal(raw, &spec); err != nil {
		return fmt.Errorf("failed to read the sandbox spec: %w", err)
	}
	if err := setupMounts(&spec.Mounts); err != nil {
		return err
	}
	if err := setLimits(&spec.Mounts); err != nil {
		return err
	}
	if err := loUp(); err != nil {
		return err
	}
	// One start of the binary fewer: drop the capabilities and go on as
	// the lock stage in this process. A held sandbox waits for the
	// daemon's check, which looks at every thread: drop them on every
	// thread at once (AllThreadsSyscall, which needs a binary without
	// cgo, as the README builds narrowd; with cgo, exec the lock stage,
	// which starts with none). Confinement execs the program right away
	// from this thread, and a program's capabilities come from the
	// thread that execs it: this thread's are enough (the others run
	// nothing but the Go runtime until the exec ends them).
	drop := dropAllCaps
	if spec.Args != nil {
		drop = dropThreadCaps
	}
	switch err := drop(); {
	case err == nil:
		err = lock(spec)
		fmt.Fprintf(os.NewFile(statusFD, "status"), "error %s\n", oneLine(err.Error()))
		return err
	case !errors.Is(err, unix.ENOTSUP):
		return fmt.Errorf("failed to drop the capabilities: %w", err)
	}
	// The lock stage reads the spec again, from a memory file on the
	// same descriptor.
	if err := respec(raw); err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("failed to clear ambient capabilities: %w", err)
	}
	// The uid inside is not 0, so without ambient capabilities the lock
	// stage starts with none, on every thread.
	return unix.Exec("/proc/self/exe", append([]string{os.Args[0]}, StageArgs("lock")...), os.Environ())
}

// readFD reads fd to its end, at most max bytes, without an *os.File
// whose finalizer could close the descriptor later.
func readFD(fd, max int) ([]byte, error) {
	var out []byte
	buf := make([]byte, 64<<10)
	for len(out) <= max {
		n, err := unix.Read(fd, buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return out, nil
		}
		out = append(out, buf[:n]...)
	}
	return nil, errors.New("the spec is too long")
}

// dropAllCaps sets every capability set of every thread of this process
// to empty (the ambient set empties with the permitted one). It fails
// with ENOTSUP in a binary that uses cgo.
func dropAllCaps() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	_, _, errno := syscall.AllThreadsSyscall(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0)
	runtime.KeepAlive(&hdr)
	runtime.KeepAlive(&data)
	if errno != 0 {
		return errno
	}
	return nil
}

// dropThreadCaps empties every capability set of the calling thread.
func dropThreadCaps() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	return unix.Capset(&hdr, &data[0])
}

// respec puts data on specFD as a memory file read from its start.
func respec(data []byte) error {
	fd, err := unix.MemfdCreate("narrowd-spec", 0)
	if err != nil {
		return fmt.Errorf("failed to pass the spec on: %w", err)
	}
	defer unix.Close(fd)
	if _, err := unix.Pwrite(fd, data, 0); err != nil {
		return fmt.Errorf("failed to pass the spec on: %w", err)
	}
	if err := unix.Dup3(fd, specFD, 0); err != nil {
		return fmt.Errorf("failed to pass the spec on: %w", err)
	}
	return nil
}

func loUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("failed to open a socket to bring lo up: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("failed to read lo's flags: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("failed to bring lo up: %w", err)
	}
	return nil
}

// lockStage confines itself and then runs the program or waits for the
// command.
func lockStage() error {
	runtime.LockOSThread() // Landlock binds this thread, which execs the program
	var spec stageSpec
	if err := json.NewDecoder(io.LimitReader(os.NewFile(specFD, "spec"), 4*maxCommand)).Decode(&spec); err != nil {
		return fmt.Errorf("failed to read the sandbox spec: %w", err)
	}
	return lock(spec)
}

// lock confines the calling thread, which holds no capability, and then
// runs the program or waits for the command.
func lock(spec stageSpec) error {
	for _, fd := range []int{specFD, statusFD, releaseFD} {
		unix.CloseOnExec(fd)
	}
	unix.Close(specFD)
	if err := selfCheck(); err != nil {
		return err
	}
	// The released text is bash's to run; /bin/bash first, so a PATH
	// from the agent's environment does not pick the interpreter.
	prog, args := "bash", []string{"bash", "-c"}
	if _, err := os.Stat("/bin/bash"); err == nil {
		prog = "/bin/bash"
	}
	if spec.Args != nil {
		if len(spec.Args) == 0 || spec.Args[0] == "" {
			return errors.New("no program to run")
		}
		prog, args = spec.Args[0], spec.Args
	}
	path, err := exec.LookPath(prog)
	if err != nil {
		return fmt.Errorf("program %q: %w", prog, err)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("failed to set no_new_privs: %w", err)
	}
	// Listed here, just before the ruleset, by the same user as the
	// program: what appears later beside a hidden path stays unreadable.
	// The secret locations are under mounts now (the hidden home, the
	// masks): reads need no rule built around them.
	abi, err := landlock([]string{"/"}, append(spec.Writable, spec.Mounts.cacheWritable()...))
	if err != nil {
		return err
	}
	if err := installSeccomp(); err != nil {
		return err
	}
	if err := os.Chdir(spec.Dir); err != nil {
		return fmt.Errorf("failed to enter the working directory: %w", err)
	}
	// The wrapper's death must end the sandbox. The parent-death signal
	// set at fork did not survive the stages' execs on this kernel (a
	// SIGKILLed wrapper left the command running), so set it again here,
	// before telling the wrapper it is ready: if that write succeeds, the
	// wrapper was alive after the signal was armed.
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0); err != nil {
		return fmt.Errorf("failed to tie the sandbox to narrowd exec: %w", err)
	}
	status := os.NewFile(statusFD, "status")
	if _, err := fmt.Fprintf(status, "ready %d\n", abi); err != nil {
		return err
	}
	if spec.Args == nil {
		// Held: wait for the daemon's verdict on what it saw from outside.
		text, err := io.ReadAll(io.LimitReader(os.NewFile(releaseFD, "release"), maxCommand+1))
		if err != nil || len(text) == 0 || len(text) > maxCommand {
			os.Exit(125) // aborted: nothing runs
		}
		args = append(args, string(text))
	}
	// Just before the exec: the line appears only when the program runs.
	if n := droppedNotice(spec.Dropped); n != "" {
		io.WriteString(os.Stderr, n)
	}
	return unix.Exec(path, args, os.Environ())
}

// selfCheck refuses to go on unless this process has no capabilities and
// its network namespace has only lo.
func selfCheck() error {
	// This thread's: it is the one Landlock binds and that execs.
	st, err := readStatus("/proc/thread-self/status")
	if err != nil {
		return err
	}
	for _, k := range []string{"CapEff", "CapPrm", "CapAmb"} {
		if !zeroHex(st[k]) {
			return fmt.Errorf("the sandbox still holds capabilities (%s %s)", k, st[k])
		}
	}
	ifs, err := interfaces("/proc/self/net/dev")
	if err != nil {
		return err
	}
	if len(ifs) != 1 || ifs[0] != "lo" {
		return fmt.Errorf("the sandbox's network namespace has interfaces %v, want only lo", ifs)
	}
	return nil
}
