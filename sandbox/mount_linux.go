//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// mountPlan is what the net stage mounts in the sandbox's mount
// namespace, computed by the wrapper before anything ran.
type mountPlan struct {
	Tmp      string     `json:"tmp"`
	TmpSize  int64      `json:"tmp_size"`
	Overlays []Overlay  `json:"overlays,omitempty"`
	Protect  Protection `json:"protect"`
	// Homes are covered by an empty tmpfs, Show on top.
	Homes []string `json:"homes,omitempty"`
	Show  []shown  `json:"show,omitempty"`
	// Masks are secret locations still visible (outside the homes, or
	// everywhere with KeepHome): each is covered by an empty read-only
	// tmpfs or file.
	Masks       []string `json:"masks,omitempty"`
	MaxProcs    int      `json:"max_procs"`
	MaxFileSize int64    `json:"max_file_size"`
}

// shown is one path shown on top of a hidden home.
type shown struct {
	Path string `json:"path"`
	// Writable keeps the path as it is (a writable root or the private
	// tmp inside the home); Cache puts a discarded overlay on it; else it
	// is read-only.
	Writable bool `json:"writable,omitempty"`
	Cache    bool `json:"cache,omitempty"`
}

// planHome fills the home part of the plan: the homes to hide (not "/",
// not a writable root or inside one, not holding another), the
// allowlisted entries that exist, and the writable roots and the
// private tmp where they lie in a home. A working directory elsewhere in
// a home is not shown: the run then fails to enter it, and nothing runs.
func planHome(plan *mountPlan, homes []string, allow []HomeEntry, writable []string) {
	var hide []string
	for _, h := range homes {
		real, err := filepath.EvalSymlinks(h)
		if err != nil || real == "/" || !filepath.IsAbs(real) {
			continue
		}
		if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
			continue
		}
		if slices.ContainsFunc(writable, func(w string) bool { return within(real, w) }) {
			continue
		}
		hide = append(hide, real)
	}
	plan.Homes = outermost(hide)
	for _, h := range plan.Homes {
		for _, e := range allow {
			p := filepath.Join(h, e.Path)
			if _, err := os.Stat(p); err == nil {
				plan.Show = append(plan.Show, shown{Path: p, Cache: e.Mode == "cache"})
			}
		}
		for _, w := range writable {
			if within(w, h) {
				plan.Show = append(plan.Show, shown{Path: w, Writable: true})
			}
		}
	}
	// Outer paths first: an inner one is mounted on top of the outer.
	slices.SortFunc(plan.Show, func(a, b shown) int { return strings.Compare(a.Path, b.Path) })
	plan.Show = slices.CompactFunc(plan.Show, func(a, b shown) bool { return a.Path == b.Path })
}

// planMasks returns the hidden paths the homes do not already hide.
func planMasks(plan *mountPlan, hidden []string) []string {
	var out []string
	for _, h := range hidden {
		inHome := slices.ContainsFunc(plan.Homes, func(home string) bool { return within(h, home) })
		inShown := slices.ContainsFunc(plan.Show, func(s shown) bool { return within(h, s.Path) || within(s.Path, h) })
		if !inHome || inShown {
			out = append(out, h)
		}
	}
	return out
}

// cacheWritable are the paths the Landlock rules must let the program
// write beneath besides the writable roots: the discarded cache overlays.
func (plan *mountPlan) cacheWritable() []string {
	var out []string
	for _, s := range plan.Show {
		if s.Cache {
			out = append(out, s.Path)
		}
	}
	return out
}

// setupMounts builds the sandbox's view of the file system. It runs in
// the net stage, which holds CAP_SYS_ADMIN in the sandbox's user
// namespace and is init of its PID namespace; the mount namespace is its
// own, so nothing here is seen outside.
func setupMounts(plan *mountPlan) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("failed to make the sandbox's mounts private: %w", err)
	}
	if plan.Tmp != "" {
		opts := "mode=0700,size=" + strconv.FormatInt(plan.TmpSize, 10)
		if err := unix.Mount("tmpfs", plan.Tmp, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
			return fmt.Errorf("failed to mount the private tmp: %w", err)
		}
	}
	for _, o := range plan.Overlays {
		if err := mountOverlay(o.Root, o.Root, o.Upper, o.Work); err != nil {
			return err
		}
	}
	for _, a := range plan.Protect.Anchors {
		if err := bindSelf(a, false); err != nil {
			return err
		}
	}
	for _, p := range plan.Protect.ReadOnly {
		if err := bindSelf(p, true); err != nil {
			return err
		}
	}
	if err := hideHomes(plan); err != nil {
		return err
	}
	if err := mountMasks(plan.Masks); err != nil {
		return err
	}
	// The sandbox's own /proc: only its PID namespace's processes, so no
	// host command line, environ or fd table is in view.
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("failed to mount the sandbox's /proc: %w", err)
	}
	return nil
}

// mountOverlay mounts an overlay of lower with upper and work on target.
// userxattr: in a user namespace overlayfs keeps its whiteouts and opaque
// markers in user.* attributes.
func mountOverlay(target, lower, upper, work string) error {
	for _, p := range []string{lower, upper, work} {
		if strings.ContainsAny(p, `,:\`) {
			return fmt.Errorf("overlay path %q holds a comma, colon or backslash", p)
		}
	}
	opts := "lowerdir=" + lower + ",upperdir=" + upper + ",workdir=" + work + ",userxattr"
	if err := unix.Mount("overlay", target, "overlay", 0, opts); err != nil {
		return fmt.Errorf("failed to mount the overlay on %s: %w", target, err)
	}
	return nil
}

// openNoSymlinks opens path with O_PATH, refusing symlinks on the way:
// the plan names real places.
func openNoSymlinks(path string) (int, error) {
	fd, err := unix.Openat2(unix.AT_FDCWD, path, &unix.OpenHow{
		Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return fd, nil
}

// bindSelf mounts path on itself, read-only when ro, with what is
// mounted beneath it: a mount point cannot be renamed or removed, and a
// read-only one refuses every write beneath it (EROFS), hard links into
// or out of it (EXDEV) included.
func bindSelf(path string, ro bool) error {
	fd, err := openNoSymlinks(path)
	if errors.Is(err, unix.ENOENT) {
		return nil // removed since the wrapper looked: the watch covers it
	}
	if err != nil {
		return fmt.Errorf("failed to protect %s: %w", path, err)
	}
	defer unix.Close(fd)
	tree, err := cloneTree(fd, "", ro)
	if err != nil {
		return fmt.Errorf("failed to protect %s: %w", path, err)
	}
	defer unix.Close(tree)
	if err := unix.MoveMount(tree, "", fd, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return fmt.Errorf("failed to protect %s: %w", path, err)
	}
	return nil
}

// cloneTree returns a detached copy of the mounts at dirfd/path (an
// empty path means dirfd itself), with what is mounted beneath, made
// read-only when ro.
func cloneTree(dirfd int, path string, ro bool) (int, error) {
	flags := uint(unix.OPEN_TREE_CLONE | unix.OPEN_TREE_CLOEXEC | unix.AT_RECURSIVE)
	if path == "" {
		flags |= unix.AT_EMPTY_PATH
	}
	tree, err := unix.OpenTree(dirfd, path, flags)
	if err != nil {
		return -1, fmt.Errorf("open_tree: %w", err)
	}
	if ro {
		attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}
		if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
			unix.Close(tree)
			return -1, fmt.Errorf("mount_setattr: %w", err)
		}
	}
	return tree, nil
}

// scratch is a detached tmpfs only the net stage holds: the empty
// directory or file that masks a secret location.
func scratch() (int, error) {
	fsfd, err := unix.Fsopen("tmpfs", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return -1, fmt.Errorf("fsopen tmpfs: %w", err)
	}
	defer unix.Close(fsfd)
	if err := unix.FsconfigSetString(fsfd, "mode", "0755"); err != nil {
		return -1, fmt.Errorf("fsconfig: %w", err)
	}
	if err := unix.FsconfigCreate(fsfd); err != nil {
		return -1, fmt.Errorf("fsconfig create: %w", err)
	}
	mfd, err := unix.Fsmount(fsfd, unix.FSMOUNT_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("fsmount: %w", err)
	}
	return mfd, nil
}

// hideHomes covers each home with an empty tmpfs and mounts the shown
// paths on top: copies of their mounts taken before the tmpfs hid them.
func hideHomes(plan *mountPlan) error {
	if len(plan.Homes) == 0 {
		return nil
	}
	// The cache overlays' upper layers live on a tmpfs mounted in the
	// private tmp while they are built, then detached: each overlay keeps
	// its own reference, and the program cannot reach them.
	cacheDir := ""
	defer func() {
		if cacheDir != "" {
			unix.Unmount(cacheDir, unix.MNT_DETACH)
			os.Remove(cacheDir)
		}
	}()
	type clone struct {
		path string
		tree int
		dir  bool
	}
	var clones []clone
	defer func() {
		for _, c := range clones {
			unix.Close(c.tree)
		}
	}()
	for i, s := range plan.Show {
		fi, err := os.Stat(s.Path)
		if err != nil {
			continue
		}
		if s.Cache && fi.IsDir() {
			if cacheDir == "" {
				cacheDir = filepath.Join(plan.Tmp, ".narrowd-cache")
				if err := os.Mkdir(cacheDir, 0o700); err != nil {
					return fmt.Errorf("cache overlays: %w", err)
				}
				if err := unix.Mount("tmpfs", cacheDir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0700"); err != nil {
					return fmt.Errorf("cache overlays: %w", err)
				}
			}
			up, work := filepath.Join(cacheDir, fmt.Sprintf("u%d", i)), filepath.Join(cacheDir, fmt.Sprintf("w%d", i))
			for _, d := range []string{up, work} {
				if err := os.Mkdir(d, 0o755); err != nil {
					return fmt.Errorf("cache overlay for %s: %w", s.Path, err)
				}
			}
			if err := mountOverlay(s.Path, s.Path, up, work); err != nil {
				return err
			}
		}
		tree, err := cloneTree(unix.AT_FDCWD, s.Path, !s.Writable && !(s.Cache && fi.IsDir()))
		if err != nil {
			return fmt.Errorf("failed to show %s: %w", s.Path, err)
		}
		clones = append(clones, clone{s.Path, tree, fi.IsDir()})
	}
	for _, h := range plan.Homes {
		fi, err := os.Stat(h)
		if err != nil {
			return fmt.Errorf("failed to hide %s: %w", h, err)
		}
		// The tmpfs's root has the home's mode, so tools that check it
		// (ssh, some test suites) see what they expect.
		opts := fmt.Sprintf("size=16m,nr_inodes=4096,mode=%o", fi.Mode().Perm())
		if err := unix.Mount("tmpfs", h, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
			return fmt.Errorf("failed to hide %s: %w", h, err)
		}
	}
	for _, c := range clones {
		if err := mountPoint(c.path, c.dir); err != nil {
			return fmt.Errorf("failed to show %s: %w", c.path, err)
		}
		if err := unix.MoveMount(c.tree, "", unix.AT_FDCWD, c.path, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
			return fmt.Errorf("failed to show %s: %w", c.path, err)
		}
	}
	return nil
}

// mountPoint makes an empty directory or file at path, and its parents.
func mountPoint(path string, dir bool) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if dir {
		if err := os.Mkdir(path, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		return nil
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		if errors.Is(err, fs.ErrExist) || errors.Is(err, unix.EROFS) && exists(path) {
			return nil
		}
		return err
	}
	return f.Close()
}

// mountMasks covers each secret location with an empty read-only tmpfs
// (a directory) or an empty read-only file.
func mountMasks(masks []string) error {
	if len(masks) == 0 {
		return nil
	}
	var empty = -1
	defer func() {
		if empty >= 0 {
			unix.Close(empty)
		}
	}()
	for _, m := range masks {
		fi, err := os.Lstat(m)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ENOTDIR) {
			continue
		}
		if err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			continue // hiddenPaths lists its target, which is masked
		}
		if err != nil {
			return fmt.Errorf("failed to hide %s: %w", m, err)
		}
		var tree int
		if fi.IsDir() {
			if tree, err = scratch(); err != nil {
				return fmt.Errorf("failed to hide %s: %w", m, err)
			}
			attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV | unix.MOUNT_ATTR_NOEXEC}
			if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH, &attr); err != nil {
				unix.Close(tree)
				return fmt.Errorf("failed to hide %s: %w", m, err)
			}
		} else {
			if empty < 0 {
				if empty, err = scratch(); err != nil {
					return fmt.Errorf("failed to hide %s: %w", m, err)
				}
				fd, err := unix.Openat(empty, "empty", unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0)
				if err != nil {
					return fmt.Errorf("failed to hide %s: %w", m, err)
				}
				unix.Close(fd)
			}
			if tree, err = cloneTree(empty, "empty", true); err != nil {
				return fmt.Errorf("failed to hide %s: %w", m, err)
			}
		}
		err = unix.MoveMount(tree, "", unix.AT_FDCWD, m, unix.MOVE_MOUNT_F_EMPTY_PATH)
		unix.Close(tree)
		if err != nil {
			return fmt.Errorf("failed to hide %s: %w", m, err)
		}
	}
	return nil
}

// setLimits sets the run's process and file-size limits; the stages and
// the program inherit them. RLIMIT_NPROC counts the processes and
// threads of the sandbox's user (its user namespace's own count since
// Linux 5.14), not the person's others.
func setLimits(plan *mountPlan) error {
	for _, l := range []struct {
		res  int
		v    uint64
		name string
	}{{unix.RLIMIT_NPROC, uint64(plan.MaxProcs), "process"}, {unix.RLIMIT_FSIZE, uint64(plan.MaxFileSize), "file size"}} {
		if err := unix.Setrlimit(l.res, &unix.Rlimit{Cur: l.v, Max: l.v}); err != nil {
			return fmt.Errorf("failed to set the sandbox's %s limit: %w", l.name, err)
		}
	}
	return nil
}
