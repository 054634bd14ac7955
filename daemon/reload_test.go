package daemon

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestReloadThroughSymlinks: a profile reached through symlinks is
// reloaded when the file they end at is edited (home-manager: a link
// into a store), and when a directory link on its way is swapped
// (a Kubernetes ConfigMap: profile.toml -> ..data/profile.toml, with
// ..data -> a dated directory that is replaced by renaming a new link).
func TestReloadThroughSymlinks(t *testing.T) {
	dir := shortDir(t)
	store := filepath.Join(dir, "store")
	cfg := filepath.Join(dir, "cfg")
	for _, d := range []string{store, cfg, filepath.Join(cfg, "v1"), filepath.Join(cfg, "v2")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	target := filepath.Join(store, "profile.toml")
	write := func(p, s string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(target, "# one\n")
	write(filepath.Join(cfg, "v1", "profile.toml"), "# v1\n")
	write(filepath.Join(cfg, "v2", "profile.toml"), "# v2\n")
	mustLink := func(old, new string) {
		t.Helper()
		if err := os.Symlink(old, new); err != nil {
			t.Fatal(err)
		}
	}
	// home-manager's layout.
	home := filepath.Join(dir, "home-profile.toml")
	mustLink(target, home)
	// The ConfigMap's layout.
	mustLink("v1", filepath.Join(cfg, "..data"))
	mustLink("..data/profile.toml", filepath.Join(cfg, "profile.toml"))

	for _, tc := range []struct {
		name, profile string
		change        func()
	}{
		{"edit the link's target", home, func() { write(target, "# two\n") }},
		{"swap a directory link", filepath.Join(cfg, "profile.toml"), func() {
			tmp := filepath.Join(cfg, "..data_tmp")
			mustLink("v2", tmp)
			if err := os.Rename(tmp, filepath.Join(cfg, "..data")); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := startDaemon(t, func(c *Config) { c.Engine.Profile = tc.profile })
			before := d.engine.Load()
			time.Sleep(100 * time.Millisecond) // let the watcher start
			tc.change()
			deadline := time.Now().Add(5 * time.Second)
			for d.engine.Load() == before {
				if time.Now().After(deadline) {
					t.Fatal("the change was not seen")
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}

func TestWatchSet(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "real"), 0o700)
	os.WriteFile(filepath.Join(dir, "real", "p.toml"), nil, 0o600)
	os.Symlink("real", filepath.Join(dir, "link"))
	os.Symlink(filepath.Join(dir, "link", "p.toml"), filepath.Join(dir, "p.toml"))
	want, dirs := watchSet([]string{filepath.Join(dir, "p.toml")})
	for _, p := range []string{"p.toml", "link", "real/p.toml"} {
		if !want[filepath.Join(dir, p)] {
			t.Errorf("%s not watched; want %v", p, want)
		}
	}
	if !dirs[dir] || !dirs[filepath.Join(dir, "real")] {
		t.Errorf("dirs %v", dirs)
	}
	// A loop ends.
	os.Symlink("loop", filepath.Join(dir, "loop"))
	watchSet([]string{filepath.Join(dir, "loop", "x")})
}
