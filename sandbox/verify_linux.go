//go:build linux

package sandbox

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Verify checks, from outside and before anything is released, that pid
// is a held sandbox: a child of the wrapper wrapperPid, running one of
// the binaries exes (narrowd, narrowd-exec), alive, in a network
// namespace and user namespace other than the caller's, whose network
// namespace has only lo and no TCP listener, with Seccomp 2 (filter),
// NoNewPrivs 1 and no capability on every thread. The pidfd is opened before any /proc read and polled
// after them, so the reads are of this process and not a recycled pid.
// Landlock cannot be seen from outside; the lock stage reports its ABI.
func Verify(pid, wrapperPid int, exes ...string) (Facts, error) {
	f := Facts{Pid: pid}
	if pid <= 1 || wrapperPid <= 1 {
		return f, errors.New("no sandbox pid to verify")
	}
	pfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return f, fmt.Errorf("failed to open a pidfd for pid %d: %w", pid, err)
	}
	defer unix.Close(pfd)
	proc := "/proc/" + strconv.Itoa(pid)

	st, err := readStatus(proc + "/status")
	if err != nil {
		return f, err
	}
	if st["PPid"] != strconv.Itoa(wrapperPid) {
		return f, fmt.Errorf("pid %d is not the wrapper's child (parent %s, want %d)", pid, st["PPid"], wrapperPid)
	}
	if f.Exe, err = sameAsOne(proc+"/exe", exes); err != nil {
		return f, fmt.Errorf("pid %d does not run narrowd: %w", pid, err)
	}
	for _, ns := range []string{"net", "user"} {
		theirs, err := os.Readlink(proc + "/ns/" + ns)
		if err != nil {
			return f, fmt.Errorf("failed to read the sandbox's %s namespace: %w", ns, err)
		}
		ours, err := os.Readlink("/proc/self/ns/" + ns)
		if err != nil {
			return f, fmt.Errorf("failed to read narrowd's %s namespace: %w", ns, err)
		}
		if theirs == ours {
			return f, fmt.Errorf("the sandbox shares narrowd's %s namespace (%s)", ns, ours)
		}
		if ns == "net" {
			f.NetNS = theirs
		} else {
			f.UserNS = theirs
		}
	}
	if f.Interfaces, err = interfaces(proc + "/net/dev"); err != nil {
		return f, err
	}
	if len(f.Interfaces) != 1 || f.Interfaces[0] != "lo" {
		return f, fmt.Errorf("the sandbox's network namespace has interfaces %v, want only lo", f.Interfaces)
	}
	for _, t := range []string{"tcp", "tcp6"} {
		if n, err := listeners(proc + "/net/" + t); err != nil {
			return f, err
		} else if n > 0 {
			return f, fmt.Errorf("the sandbox's network namespace has %d %s listeners (a relay?)", n, t)
		}
	}
	tasks, err := filepath.Glob(proc + "/task/*/status")
	if err != nil || len(tasks) == 0 {
		return f, fmt.Errorf("failed to list the sandbox's threads: %v", err)
	}
	for _, path := range tasks {
		ts, err := readStatus(path)
		if err != nil {
			return f, err
		}
		if ts["Seccomp"] != "2" {
			return f, fmt.Errorf("a sandbox thread has Seccomp %q, want 2 (filter)", ts["Seccomp"])
		}
		if ts["NoNewPrivs"] != "1" {
			return f, fmt.Errorf("a sandbox thread has NoNewPrivs %q, want 1", ts["NoNewPrivs"])
		}
		for _, k := range []string{"CapEff", "CapPrm", "CapAmb"} {
			if !zeroHex(ts[k]) {
				return f, fmt.Errorf("a sandbox thread holds capabilities (%s %s)", k, ts[k])
			}
		}
	}
	f.Threads = len(tasks)
	f.Seccomp, f.NoNewPrivs, f.CapEff = 2, 1, st["CapEff"]

	// Still the same process after the reads: the pidfd has not exited,
	// and it still names the wrapper as parent.
	if exited, err := pidfdExited(pfd); err != nil || exited {
		return f, fmt.Errorf("the sandbox exited during the check (%v)", err)
	}
	if st2, err := readStatus(proc + "/status"); err != nil || st2["PPid"] != st["PPid"] {
		return f, errors.New("the sandbox changed during the check")
	}
	f.VerifiedAt = time.Now()
	return f, nil
}

// pidfdExited reports whether the process behind pfd has exited.
func pidfdExited(pfd int) (bool, error) {
	fds := []unix.PollFd{{Fd: int32(pfd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	if err != nil {
		return false, err
	}
	return n > 0 && fds[0].Revents&unix.POLLIN != 0, nil
}

// sameFile reports an error unless a and b are the same file (device
// and inode).
func sameFile(a, b string) error {
	var sa, sb unix.Stat_t
	if err := unix.Stat(a, &sa); err != nil {
		return err
	}
	if err := unix.Stat(b, &sb); err != nil {
		return err
	}
	if sa.Dev != sb.Dev || sa.Ino != sb.Ino {
		return fmt.Errorf("%s is not %s", a, b)
	}
	return nil
}

// SameExecutable reports an error unless the process pid runs one of the
// binaries exes (narrowd, and narrowd-exec beside it).
func SameExecutable(pid int, exes ...string) error {
	_, err := sameAsOne("/proc/"+strconv.Itoa(pid)+"/exe", exes)
	return err
}

// sameAsOne returns the first of bs that is the same file as a.
func sameAsOne(a string, bs []string) (string, error) {
	err := errors.New("no binary to compare with")
	for _, b := range bs {
		if err = sameFile(a, b); err == nil {
			return b, nil
		}
	}
	return "", err
}

// readStatus reads a /proc/PID/status file into its fields.
func readStatus(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("failed to read %s: %w", path, err)
	}
	m := make(map[string]string)
	for _, line := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok {
			m[k] = strings.TrimSpace(v)
		}
	}
	return m, nil
}

// zeroHex reports whether a capability mask is present and all zero.
func zeroHex(s string) bool {
	if s == "" {
		return false
	}
	v, err := strconv.ParseUint(s, 16, 64)
	return err == nil && v == 0
}

// interfaces lists the interfaces in a /proc/PID/net/dev file.
func interfaces(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("failed to read %s: %w", path, err)
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		name, _, ok := strings.Cut(line, ":")
		if ok && !strings.Contains(name, "|") {
			out = append(out, strings.TrimSpace(name))
		}
	}
	return out, nil
}

// listeners counts the sockets in state LISTEN (0A) in a
// /proc/PID/net/tcp{,6} table.
func listeners(path string) (int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return 0, nil // no IPv6 in this kernel
		}
		return 0, fmt.Errorf("failed to read %s: %w", path, err)
	}
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 3 && fields[3] == "0A" {
			n++
		}
	}
	return n, nil
}
