// Package npmcache installs pinned npm packages into one cache shared by
// narrowd's tests that drive real programs: the agent CLIs of the
// end-to-end suite and the MCP servers of the discovery tests. A package
// is installed once per machine, under a file lock, into a temp directory
// renamed into place, so an existing bin means a complete install.
package npmcache

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// Package is one pinned npm package and the executable the tests run.
type Package struct {
	Name, Version string
	// Bin is the executable's name under node_modules/.bin.
	Bin string
	// IgnoreScripts installs without running the package's scripts.
	IgnoreScripts bool
}

// ID is name@version.
func (p Package) ID() string { return p.Name + "@" + p.Version }

// Required reports whether a missing npm or registry must fail the tests
// rather than skip them: in CI, or with NARROWD_E2E_REQUIRE=1.
func Required() bool {
	return os.Getenv("CI") != "" || os.Getenv("NARROWD_E2E_REQUIRE") == "1"
}

// Dir is the cache: $NARROWD_E2E_CACHE, else $HOME/.cache/narrowd-e2e.
func Dir() (string, error) {
	if d := os.Getenv("NARROWD_E2E_CACHE"); d != "" {
		return d, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no $NARROWD_E2E_CACHE and no home directory: %w", err)
	}
	return filepath.Join(home, ".cache", "narrowd-e2e"), nil
}

// Install returns the path of p's executable, installing p into its own
// directory of the cache unless a complete earlier install is there. An
// error says what is missing: npm, the registry, or the bin.
func Install(p Package) (string, error) {
	root, err := Dir()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", fmt.Errorf("cache dir: %w", err)
	}
	name := strings.ReplaceAll(p.ID(), "/", "+")
	dir := filepath.Join(root, name)
	bin := filepath.Join(dir, "node_modules", ".bin", p.Bin)

	lock, err := os.OpenFile(filepath.Join(root, name+".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", fmt.Errorf("lock file: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("lock %s: %w", lock.Name(), err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)

	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return "", errors.New("npm is not on PATH (install Node.js and npm)")
	}
	// Ask the registry once, without npm's minute of retries, so an
	// offline machine skips fast.
	view := exec.Command(npm, "view", p.ID(), "version", "--fetch-retries=0", "--fetch-timeout=15000")
	if out, err := view.CombinedOutput(); err != nil {
		return "", fmt.Errorf("the npm registry is unreachable or lacks %s (npm view: %w: %s)", p.ID(), err, FirstLine(string(out), "npm error"))
	}
	tmp := dir + ".tmp"
	os.RemoveAll(tmp)
	args := []string{"install", "--prefix", tmp, p.ID(), "--no-audit", "--no-fund"}
	if p.IgnoreScripts {
		args = append(args, "--ignore-scripts")
	}
	out, err := exec.Command(npm, args...).CombinedOutput()
	if err != nil {
		os.RemoveAll(tmp)
		return "", fmt.Errorf("npm install %s failed (registry unreachable?): %w: %s", p.ID(), err, LastLines(string(out), 5))
	}
	if _, err := os.Stat(filepath.Join(tmp, "node_modules", ".bin", p.Bin)); err != nil {
		os.RemoveAll(tmp)
		return "", fmt.Errorf("npm install %s left no %s bin", p.ID(), p.Bin)
	}
	os.RemoveAll(dir)
	if err := os.Rename(tmp, dir); err != nil {
		return "", fmt.Errorf("move install into place: %w", err)
	}
	return bin, nil
}

// FirstLine is the first line of s that starts with prefix, else its
// first line.
func FirstLine(s, prefix string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return lines[0]
}

// LastLines is the last n lines of s, joined on one line.
func LastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
