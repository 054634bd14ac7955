//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Landlock rights this package handles, by the ABI that introduced them.
// IOCTL_DEV (ABI 5) is left unhandled: ioctls write nothing to files, and
// handling it would break terminal ioctls on devices opened inside.
const (
	llRead  = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR
	llWrite = unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_REMOVE_DIR |
		unix.LANDLOCK_ACCESS_FS_REMOVE_FILE | unix.LANDLOCK_ACCESS_FS_MAKE_CHAR |
		unix.LANDLOCK_ACCESS_FS_MAKE_DIR | unix.LANDLOCK_ACCESS_FS_MAKE_REG |
		unix.LANDLOCK_ACCESS_FS_MAKE_SOCK | unix.LANDLOCK_ACCESS_FS_MAKE_FIFO |
		unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK | unix.LANDLOCK_ACCESS_FS_MAKE_SYM
	llRefer    = unix.LANDLOCK_ACCESS_FS_REFER    // ABI 2
	llTruncate = unix.LANDLOCK_ACCESS_FS_TRUNCATE // ABI 3
	// llFileRights are the rights a rule on a file (not a directory) may
	// carry.
	llFileRights = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
		unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE
)

// writableDevices may be written inside the sandbox: writing to them
// changes no file.
var writableDevices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty"}

// LandlockABI returns the kernel's Landlock ABI version, or 0 when
// Landlock is missing or disabled.
func LandlockABI() int {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0
	}
	return int(v)
}

// landlock confines the calling thread (and what it execs) to reading
// and executing beneath readable (see [readRules]) and writing only
// beneath writable, which may also read. It needs
// no_new_privs already set on this thread. It returns the ABI it used.
// An ABI of 0 is an error: without Landlock writes are not confined.
func landlock(readable, writable []string) (int, error) {
	abi := LandlockABI()
	if abi < 1 {
		return 0, fmt.Errorf("%w: Landlock is not available", ErrUnsupported)
	}
	handled := uint64(llRead | llWrite)
	if abi >= 2 {
		handled |= llRefer
	}
	if abi >= 3 {
		handled |= llTruncate
	}
	attr := unix.LandlockRulesetAttr{Handled_access_fs: handled}
	size := unsafe.Sizeof(attr.Handled_access_fs)
	if abi >= 4 {
		size += unsafe.Sizeof(attr.Handled_access_net)
	}
	if abi >= 6 {
		// Scope signals and abstract Unix sockets to the sandbox: without
		// it a command could kill the agent or the daemon (same uid), or
		// reach an abstract socket of another network namespace's peers.
		attr.Scoped = unix.LANDLOCK_SCOPE_SIGNAL | unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
		size += unsafe.Sizeof(attr.Scoped)
	}
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), size, 0)
	if errno != 0 {
		return 0, fmt.Errorf("failed to create the Landlock ruleset: %w", errno)
	}
	ruleset := int(fd)
	defer unix.Close(ruleset)

	for _, path := range readable {
		if err := addReadRule(ruleset, path); err != nil {
			return 0, err
		}
	}
	for _, dir := range writable {
		if err := addRule(ruleset, dir, handled); err != nil {
			return 0, err
		}
	}
	for _, dev := range writableDevices {
		err := addRule(ruleset, dev, handled&llFileRights)
		if err != nil && !errors.Is(err, os.ErrNotExist) && !errors.Is(err, unix.ENXIO) {
			return 0, err
		}
	}
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(ruleset), 0, 0); errno != 0 {
		return 0, fmt.Errorf("failed to enforce the Landlock ruleset: %w", errno)
	}
	return abi, nil
}

// addRule grants access beneath path. The path is opened with O_PATH, so
// the rule binds the object the name resolved to now.
func addRule(ruleset int, path string, access uint64) error {
	fd, mode, err := openPath(path, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return addRuleFD(ruleset, fd, path, mode, access)
}

// openPath opens path with O_PATH (and flags) and returns its mode; an
// open that fails is an error wrapping its *os.PathError.
func openPath(path string, flags int) (fd int, mode uint32, err error) {
	fd, err = unix.Open(path, unix.O_PATH|unix.O_CLOEXEC|flags, 0)
	if err != nil {
		return -1, 0, fmt.Errorf("landlock rule for %s: %w", path, &os.PathError{Op: "open", Path: path, Err: err})
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, 0, fmt.Errorf("landlock rule for %s: %w", path, err)
	}
	return fd, st.Mode, nil
}

// addReadRule grants reading beneath path, a directory or a regular file
// that [readRules] listed. It does not follow a symlink: a link swapped in
// since the listing would bind its target, which may be hidden. What
// vanished, turned into a link or another kind of file since, or is out
// of this user's reach, gets no rule, so it stays unreadable.
func addReadRule(ruleset int, path string) error {
	fd, mode, err := openPath(path, unix.O_NOFOLLOW)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EACCES) || errors.Is(err, unix.ENOTDIR) {
		return nil
	}
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if t := mode & unix.S_IFMT; t != unix.S_IFDIR && t != unix.S_IFREG {
		return nil
	}
	return addRuleFD(ruleset, fd, path, mode, llRead)
}

// addRuleFD adds the rule for the object fd holds, whose mode is mode.
func addRuleFD(ruleset, fd int, path string, mode uint32, access uint64) error {
	if mode&unix.S_IFMT != unix.S_IFDIR {
		access &= llFileRights
	}
	rule := unix.LandlockPathBeneathAttr{Allowed_access: access, Parent_fd: int32(fd)}
	_, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(ruleset), unix.LANDLOCK_RULE_PATH_BENEATH,
		uintptr(unsafe.Pointer(&rule)), 0, 0, 0)
	if errno != 0 {
		return fmt.Errorf("landlock rule for %s: %w", path, errno)
	}
	return nil
}
