package proofs_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/narrowd/narrowd/rules"
)

// fixture is a small project the differential test runs commands in. Its
// paths are the ones corpus commands name most often.
var fixture = map[string]string{
	"README.md":          "# demo\n\nhello world\nTODO: more\n",
	"go.mod":             "module example.com/demo\n\ngo 1.22\n",
	"main.go":            "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hi\") } // TODO\n",
	"main_test.go":       "package main\n\nimport \"testing\"\n\nfunc TestMain(t *testing.T) {}\n",
	"package.json":       "{\"name\":\"demo\",\"version\":\"1.0.0\",\"scripts\":{\"test\":\"echo t\"},\"dependencies\":{}}\n",
	"src/index.ts":       "export const x: number = 1; // TODO\n",
	"src/app.py":         "def main():\n    print('hi')\n",
	"src/lib.rs":         "pub fn f() {}\n",
	"src/util/helper.go": "package util\n",
	"docs/guide.md":      "guide\n",
	"data.txt":           "a:1\nb:2\nc:3\n",
	"config.yaml":        "key: value\n",
	"Makefile":           "all:\n\techo all\n",
	"Cargo.toml":         "[package]\nname = \"demo\"\nversion = \"0.1.0\"\n",
	"requirements.txt":   "requests\n",
	"tsconfig.json":      "{}\n",
	".gitignore":         "node_modules\n",
}

// TestDifferentialReads checks the proof against reality: every corpus
// command that narrows to mutation read runs under real bash, in a
// throwaway copy of a project, in a new network namespace with no
// interfaces, traced. Nothing may be created, changed or deleted, and no
// process may try to open an internet socket.
func TestDifferentialReads(t *testing.T) {
	if testing.Short() {
		t.Skip("runs hundreds of real processes; not in -short")
	}
	var missing []string
	for _, tool := range []string{"bash", "unshare", "strace"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if len(missing) > 0 {
		// .ci/run installs these; a developer machine may lack them.
		t.Skipf("SKIP differential test: missing %s (apt-get install util-linux strace)", strings.Join(missing, ", "))
	}
	if err := exec.Command("unshare", "-rn", "true").Run(); err != nil {
		t.Skipf("SKIP differential test: unprivileged user and network namespaces are not available: %v", err)
	}
	entries := loadCorpus(t)
	eng := corpusEngine(t)
	ran := 0
	for _, e := range entries {
		v := eng.Judge(corpusCall(e.Command), rules.Session{})
		if v.Narrowed == nil || v.Narrowed.Get(rules.Mutation) != 0 || v.Narrowed.Get(rules.Egress) != 0 {
			continue
		}
		ran++
		t.Run(e.ID, func(t *testing.T) {
			runReal(t, e.Command)
		})
	}
	t.Logf("ran %d commands that narrow to mutation read under real bash", ran)
	if ran == 0 {
		t.Fatal("no command narrowed to read: the differential test checked nothing")
	}
}

var inetConnect = regexp.MustCompile(`(connect|sendto|sendmsg)\(\d+, \{sa_family=AF_INET6?`)

func runReal(t *testing.T, command string) {
	base := t.TempDir()
	ws := filepath.Join(base, "home", "dev", "project")
	for name, body := range fixture {
		p := filepath.Join(ws, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A real repository, made by the test (narrowd itself never runs
	// git), so git's read commands meet a repository as they would.
	git := exec.Command("sh", "-c", "git init -q && git add -A && git -c user.email=t@example.com -c user.name=t commit -qm init")
	git.Dir = ws
	git.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + base, "GIT_CONFIG_NOSYSTEM=1"}
	if out, err := git.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	home := filepath.Join(base, "home", "dev")
	tmp := filepath.Join(base, "tmp")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	traceDir := t.TempDir()
	trace := filepath.Join(traceDir, "trace")
	before := snapshot(t, base)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "unshare", "-rn", "strace", "-f", "-qq", "-o", trace,
		"-e", "trace=connect,sendto,sendmsg", "bash", "-c", command)
	cmd.Dir = ws
	// Kill the whole process group on timeout: a pager or a tail -f
	// holds the output pipe open after unshare itself is gone.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	cmd.Env = []string{"PATH=/usr/local/go/bin:/usr/local/bin:/usr/bin:/bin", "HOME=" + home, "TMPDIR=" + tmp, "LANG=C.UTF-8", "TERM=dumb", "GIT_CONFIG_NOSYSTEM=1", "PAGER=cat"}
	out, _ := cmd.CombinedOutput() // exit status is irrelevant: only effects count
	if ctx.Err() != nil {
		t.Logf("%q timed out (allowed: only effects count)", command)
	}
	after := snapshot(t, base)
	for p, h := range before {
		if a, ok := after[p]; !ok {
			t.Errorf("%q deleted %s", command, p)
		} else if a != h {
			t.Errorf("%q changed %s", command, p)
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("%q created %s", command, p)
		}
	}
	log, _ := os.ReadFile(trace)
	if m := inetConnect.Find(log); m != nil {
		t.Errorf("%q tried to reach the network: %s\noutput: %s", command, m, out)
	}
}

// accessLog reports the few places where a read leaves a trace that is
// not a change of state in the sense of spec §3.1 ("an action whose main
// job is retrieval is read, even if the provider logs the access"): git
// refreshing its index's stat cache (content-equivalent), the XDG cache
// directory (disposable by definition), and the Go toolchain's local
// telemetry counters (a log of the access), with the directories made on
// the way to them. Nothing else is excused.
func accessLog(rel string) bool {
	switch {
	case strings.HasSuffix(rel, ".git/index"):
		return true
	case rel == "home/dev/.cache" || strings.HasPrefix(rel, "home/dev/.cache/"):
		return true
	case rel == "home/dev/.config" || rel == "home/dev/.config/go" ||
		strings.HasPrefix(rel, "home/dev/.config/go/telemetry"):
		return true
	}
	return false
}

// snapshot records every file and directory under root with its mode,
// size, content hash and modification time.
func snapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if accessLog(rel) {
			return nil
		}
		sum := ""
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h := sha256.Sum256(b)
			sum = hex.EncodeToString(h[:8])
		}
		mt := ""
		if !fi.IsDir() {
			mt = fi.ModTime().String()
		}
		m[rel] = fmt.Sprintf("%v %d %s %s", fi.Mode(), fi.Size(), sum, mt)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}
