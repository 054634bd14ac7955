//go:build linux

package sandbox

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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
// NoNewPrivs 1 and no capability on every thread; in a mount and PID
// namespace of its own, as init of that PID namespace, whose /proc is
// that namespace's own, with every path of want.ReadOnly a read-only
// mount, every home of want.Homes covered by a tmpfs, and the process
// and file-size limits set. The pidfd is opened before any /proc read
// and polled after them, so the reads are of this process and not a
// recycled pid. Landlock cannot be seen from outside; the lock stage
// reports its ABI.
func Verify(pid, wrapperPid int, want Expect, exes ...string) (Facts, error) {
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
	for _, ns := range []string{"net", "user", "mnt", "pid"} {
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
		switch ns {
		case "net":
			f.NetNS = theirs
		case "user":
			f.UserNS = theirs
		case "mnt":
			f.MountNS = theirs
		case "pid":
			f.PidNS = theirs
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
	if err := verifyMounts(proc, st, want, &f); err != nil {
		return f, err
	}

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

// verifyMounts checks the sandbox's mount namespace from outside: its
// /proc/PID/mountinfo, its /proc, its limits.
func verifyMounts(proc string, st map[string]string, want Expect, f *Facts) error {
	nspid := strings.Fields(st["NSpid"])
	if len(nspid) < 2 || nspid[len(nspid)-1] != "1" {
		return fmt.Errorf("the sandbox is not init of its own PID namespace (NSpid %q)", st["NSpid"])
	}
	top, err := topMounts(proc + "/mountinfo")
	if err != nil {
		return err
	}
	for _, p := range want.ReadOnly {
		m, ok := top[p]
		if !ok || !slices.Contains(strings.Split(m.opts, ","), "ro") {
			return fmt.Errorf("the protected path %s is not a read-only mount in the sandbox", p)
		}
		f.ReadOnly = append(f.ReadOnly, p)
	}
	for _, h := range want.Homes {
		if m, ok := top[h]; !ok || m.fstype != "tmpfs" {
			return fmt.Errorf("the home directory %s is not hidden in the sandbox", h)
		}
		f.HomeHidden = append(f.HomeHidden, h)
	}
	// Its /proc is its PID namespace's: pid 1 there is in the sandbox's
	// PID namespace (in the host's /proc, pid 1 is the host's init).
	if m, ok := top["/proc"]; !ok || m.fstype != "proc" {
		return errors.New("the sandbox has no /proc of its own")
	}
	inner, err := os.Readlink(proc + "/root/proc/1/ns/pid")
	if err != nil || inner != f.PidNS {
		return fmt.Errorf("the sandbox's /proc is not its PID namespace's (%q, %v)", inner, err)
	}
	f.PrivateProc = true
	if f.MaxProcs, f.MaxFileSize, err = limits(proc + "/limits"); err != nil {
		return err
	}
	if f.MaxProcs == "unlimited" || f.MaxFileSize == "unlimited" {
		return fmt.Errorf("the sandbox's limits are not set (processes %s, file size %s)", f.MaxProcs, f.MaxFileSize)
	}
	return nil
}

// mountEntry is one line of a mountinfo file.
type mountEntry struct{ opts, fstype string }

// topMounts reads a mountinfo file and returns, for each mount point,
// the last (topmost) mount on it.
func topMounts(path string) (map[string]mountEntry, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("failed to read %s: %w", path, err)
	}
	out := map[string]mountEntry{}
	for _, line := range strings.Split(string(data), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		fields, after := strings.Fields(pre), strings.Fields(post)
		if !ok || len(fields) < 6 || len(after) < 1 {
			continue
		}
		out[unescapeMount(fields[4])] = mountEntry{opts: fields[5], fstype: after[0]}
	}
	return out, nil
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// limits reads the soft process and file-size limits of a
// /proc/PID/limits file.
func limits(path string) (procs, fsize string, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", "", fmt.Errorf("failed to read %s: %w", path, err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		for name, dst := range map[string]*string{"Max processes": &procs, "Max file size": &fsize} {
			if rest, ok := strings.CutPrefix(line, name); ok {
				if f := strings.Fields(rest); len(f) > 0 {
					*dst = f[0]
				}
			}
		}
	}
	if procs == "" || fsize == "" {
		return "", "", fmt.Errorf("%s has no process or file-size limit", path)
	}
	return procs, fsize, nil
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
