package install

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

var updateGolden = flag.Bool("u", false, "update golden files")

const (
	testBinary  = "/opt/narrowd/bin/narrowd"
	otherBinary = "/home/dev/go/bin/narrowd"
)

func fixedNow() time.Time { return time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC) }

type level struct {
	name string
	cfg  func(home, project string) Config
	// rel is the settings file relative to home or project.
	rel map[Agent]string
}

func levels() []level {
	return []level{
		{
			name: "user",
			cfg:  func(home, _ string) Config { return Config{Home: home} },
			rel: map[Agent]string{
				Claude: ".claude/settings.json", Codex: ".codex/hooks.json",
				Gemini: ".gemini/settings.json", Copilot: ".copilot/hooks/narrowd.json",
				Cursor: ".cursor/hooks.json",
			},
		},
		{
			name: "project",
			cfg:  func(home, project string) Config { return Config{Home: home, ProjectDir: project} },
			rel: map[Agent]string{
				Claude: ".claude/settings.json", Codex: ".codex/hooks.json",
				Gemini: ".gemini/settings.json", Copilot: ".github/hooks/narrowd.json",
				Cursor: ".cursor/hooks.json",
			},
		},
	}
}

// setup returns a config for agent a at level l in fresh directories and
// the settings file it must edit.
func setup(t *testing.T, a Agent, l level) (Config, string) {
	t.Helper()
	home, project := t.TempDir(), t.TempDir()
	cfg := l.cfg(home, project)
	cfg.Agent, cfg.Binary, cfg.Now = a, testBinary, fixedNow
	base := home
	if cfg.ProjectDir != "" {
		base = project
	}
	path := filepath.Join(base, l.rel[a])
	got, err := SettingsPath(cfg)
	if err != nil || got != path {
		t.Fatalf("SettingsPath = %q, %v; want %q", got, err, path)
	}
	return cfg, path
}

func readOrFail(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeFixture(t *testing.T, path string, data []byte, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, mode); err != nil {
		t.Fatal(err)
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *updateGolden {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -u to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test -u updates it):\n%s", name, got)
	}
}

// backups lists the backup files next to path.
func backups(t *testing.T, path string) []string {
	t.Helper()
	m, err := filepath.Glob(path + BackupSuffix + "*")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// strays lists files in dir that install should never leave: temp files.
func strays(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && strings.Contains(filepath.Base(p), ".narrowd-tmp-") {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// equivalent reports whether a and b hold the same JSON, member order
// included, whatever their formatting.
func equivalent(t *testing.T, a, b []byte) bool {
	t.Helper()
	ta, err := decodeTree(a)
	if err != nil {
		t.Fatalf("decode: %v\n%s", err, a)
	}
	tb, err := decodeTree(b)
	if err != nil {
		t.Fatalf("decode: %v\n%s", err, b)
	}
	return bytes.Equal(encodeTree(ta), encodeTree(tb))
}

// narrowdEntries counts narrowd's handlers per event in a settings file
// and returns the commands or URLs they run.
func narrowdEntries(t *testing.T, a Agent, data []byte) map[string][]string {
	t.Helper()
	var doc struct {
		Hooks map[string][]map[string]any `json:"hooks"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	sp, _ := specFor(a)
	out := map[string][]string{}
	for ev, list := range doc.Hooks {
		for _, e := range list {
			handlers := []map[string]any{e}
			if sp.layout == grouped {
				handlers = nil
				hs, _ := e["hooks"].([]any)
				for _, h := range hs {
					handlers = append(handlers, h.(map[string]any))
				}
			}
			for _, h := range handlers {
				for _, k := range []string{"command", "bash", "url"} {
					if s, ok := h[k].(string); ok && (strings.Contains(s, "narrowd") || strings.Contains(s, "/hook/claude")) {
						out[ev] = append(out[ev], s)
					}
				}
			}
		}
	}
	return out
}

func TestInstallFresh(t *testing.T) {
	for _, a := range Agents() {
		for _, l := range levels() {
			t.Run(string(a)+"-"+l.name, func(t *testing.T) {
				t.Parallel()
				cfg, path := setup(t, a, l)
				res, err := Install(cfg)
				if err != nil {
					t.Fatal(err)
				}
				if !res.Changed || res.Backup != "" || res.Path != path || res.Before != nil {
					t.Errorf("result = %+v", res)
				}
				got := readOrFail(t, path)
				if !bytes.Equal(got, res.After) {
					t.Errorf("file and Result.After differ")
				}
				golden(t, string(a)+"-fresh.json", got)
				fi, _ := os.Stat(path)
				if fi.Mode().Perm() != 0o644 {
					t.Errorf("mode = %v, want 0644", fi.Mode().Perm())
				}
				if d, _ := os.Stat(filepath.Dir(path)); d.Mode().Perm() != 0o755 {
					t.Errorf("dir mode = %v, want 0755", d.Mode().Perm())
				}
				sp, _ := specFor(a)
				entries := narrowdEntries(t, a, got)
				for _, ev := range sp.events {
					want := []string{hookCommandFor(testBinary, a, ev.name)}
					if !reflect.DeepEqual(entries[ev.name], want) {
						t.Errorf("%s: narrowd entries %q, want %q", ev.name, entries[ev.name], want)
					}
				}

				// Uninstall removes the file install created.
				res, err = Uninstall(cfg)
				if err != nil {
					t.Fatal(err)
				}
				if !res.Changed || !res.Removed {
					t.Errorf("uninstall result = %+v", res)
				}
				if _, err := os.Stat(path); !os.IsNotExist(err) {
					t.Errorf("settings file still there after uninstall: %v", err)
				}
				if s := strays(t, filepath.Dir(path)); len(s) > 0 {
					t.Errorf("temp files left: %q", s)
				}
			})
		}
	}
}

func TestInstallExisting(t *testing.T) {
	for _, a := range Agents() {
		for _, l := range levels() {
			t.Run(string(a)+"-"+l.name, func(t *testing.T) {
				t.Parallel()
				cfg, path := setup(t, a, l)
				orig, err := os.ReadFile(filepath.Join("testdata", string(a)+"-existing.json"))
				if err != nil {
					t.Fatal(err)
				}
				writeFixture(t, path, orig, 0o600)

				// Install merges and keeps a backup of the original.
				res, err := Install(cfg)
				if err != nil {
					t.Fatal(err)
				}
				if !res.Changed || res.Backup == "" {
					t.Fatalf("result = %+v", res)
				}
				if b := readOrFail(t, res.Backup); !bytes.Equal(b, orig) {
					t.Errorf("backup differs from the original")
				}
				if fi, _ := os.Stat(res.Backup); fi.Mode().Perm() != 0o600 {
					t.Errorf("backup mode = %v, want 0600", fi.Mode().Perm())
				}
				merged := readOrFail(t, path)
				golden(t, string(a)+"-merged.json", merged)
				if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
					t.Errorf("mode = %v, want the original 0600", fi.Mode().Perm())
				}

				// Twice: nothing changes, no second backup.
				res, err = Install(cfg)
				if err != nil {
					t.Fatal(err)
				}
				if res.Changed || res.Backup != "" {
					t.Errorf("second install result = %+v", res)
				}
				if got := readOrFail(t, path); !bytes.Equal(got, merged) {
					t.Errorf("second install changed the file")
				}
				if n := len(backups(t, path)); n != 1 {
					t.Errorf("%d backups after two installs, want 1", n)
				}

				// Uninstall gives back the original, as JSON.
				res, err = Uninstall(cfg)
				if err != nil {
					t.Fatal(err)
				}
				if !res.Changed || res.Removed {
					t.Errorf("uninstall result = %+v", res)
				}
				if got := readOrFail(t, path); !equivalent(t, got, orig) {
					t.Errorf("after uninstall:\n%s\nwant the JSON of:\n%s", got, orig)
				}
				// A second uninstall finds nothing to do.
				res, err = Uninstall(cfg)
				if err != nil || res.Changed {
					t.Errorf("second uninstall = %+v, %v", res, err)
				}
				if s := strays(t, filepath.Dir(path)); len(s) > 0 {
					t.Errorf("temp files left: %q", s)
				}
			})
		}
	}
}

func TestInstallBinaryChange(t *testing.T) {
	for _, a := range Agents() {
		t.Run(string(a), func(t *testing.T) {
			t.Parallel()
			cfg, path := setup(t, a, levels()[0])
			orig, err := os.ReadFile(filepath.Join("testdata", string(a)+"-existing.json"))
			if err != nil {
				t.Fatal(err)
			}
			writeFixture(t, path, orig, 0o644)
			if _, err := Install(cfg); err != nil {
				t.Fatal(err)
			}
			first := readOrFail(t, path)

			cfg.Binary = otherBinary
			cfg.Now = func() time.Time { return fixedNow().Add(time.Minute) }
			res, err := Install(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Changed || res.Backup == "" {
				t.Fatalf("result = %+v", res)
			}
			second := readOrFail(t, path)
			// In place: the file reads the same with the path swapped.
			if want := bytes.ReplaceAll(first, []byte(testBinary), []byte(otherBinary)); !bytes.Equal(second, want) {
				t.Errorf("binary change did not update in place:\n%s\nwant:\n%s", second, want)
			}
			sp, _ := specFor(a)
			entries := narrowdEntries(t, a, second)
			for _, ev := range sp.events {
				if want := []string{hookCommandFor(otherBinary, a, ev.name)}; !reflect.DeepEqual(entries[ev.name], want) {
					t.Errorf("%s: narrowd entries %q, want %q", ev.name, entries[ev.name], want)
				}
			}
			// Uninstall without --binary still finds the entries.
			cfg.Binary = ""
			if _, err := Uninstall(cfg); err != nil {
				t.Fatal(err)
			}
			if got := readOrFail(t, path); !equivalent(t, got, orig) {
				t.Errorf("after uninstall:\n%s", got)
			}
		})
	}
}

func TestInstallInvalid(t *testing.T) {
	tests := []struct {
		name  string
		agent Agent
		data  string
		want  string
	}{
		{"truncated", Claude, `{"hooks": {`, "not valid JSON"},
		{"trailing-comma", Codex, `{"hooks": {},}`, "not valid JSON"},
		{"comments", Gemini, "{\n  // a comment\n  \"a\": 1\n}", "not valid JSON"},
		{"trailing-data", Claude, `{} {}`, "trailing data"},
		{"top-level-array", Cursor, `[]`, "top level is not an object"},
		{"hooks-not-object", Claude, `{"hooks": []}`, `"hooks" is not an object`},
		{"event-not-array", Gemini, `{"hooks": {"BeforeTool": {}}}`, `"BeforeTool" is not an array`},
		{"flat-event-not-array", Copilot, `{"version": 1, "hooks": {"preToolUse": "x"}}`, `"preToolUse" is not an array`},
		{"unknown-version", Cursor, `{"version": 2, "hooks": {}}`, `unsupported "version"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, path := setup(t, tt.agent, levels()[1])
			writeFixture(t, path, []byte(tt.data), 0o644)
			for _, op := range []func(Config) (Result, error){Install, Uninstall} {
				_, err := op(cfg)
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("error = %v, want one containing %q", err, tt.want)
				}
				if tt.want != `unsupported "version"` && !errors.Is(err, ErrInvalidJSON) {
					t.Errorf("error %v does not wrap ErrInvalidJSON", err)
				}
				if tt.want == `unsupported "version"` {
					break // uninstall has nothing to check the version for
				}
			}
			if got := readOrFail(t, path); string(got) != tt.data {
				t.Errorf("file changed to %q", got)
			}
			if b := backups(t, path); len(b) > 0 {
				t.Errorf("backups written: %q", b)
			}
			if s := strays(t, filepath.Dir(path)); len(s) > 0 {
				t.Errorf("temp files left: %q", s)
			}
		})
	}
}

func TestInstallClaudeHTTP(t *testing.T) {
	cfg, path := setup(t, Claude, levels()[0])
	orig, err := os.ReadFile("testdata/claude-existing.json")
	if err != nil {
		t.Fatal(err)
	}
	writeFixture(t, path, orig, 0o644)
	cfg.HTTPAddr = "127.0.0.1:7433"
	if _, err := Install(cfg); err != nil {
		t.Fatal(err)
	}
	httpForm := readOrFail(t, path)
	golden(t, "claude-http-merged.json", httpForm)
	for _, ev := range []string{"PreToolUse", "PermissionRequest", "PostToolUse"} {
		if got := narrowdEntries(t, Claude, httpForm)[ev]; !reflect.DeepEqual(got, []string{"http://127.0.0.1:7433/hook/claude"}) {
			t.Errorf("%s: %q", ev, got)
		}
	}
	// Back to a command hook: the http entry turns into the command one
	// in place, and the url goes.
	cfg.HTTPAddr = ""
	cfg.Now = func() time.Time { return fixedNow().Add(time.Second) }
	if _, err := Install(cfg); err != nil {
		t.Fatal(err)
	}
	if got, want := readOrFail(t, path), readOrFail(t, "testdata/claude-merged.json"); !bytes.Equal(got, want) {
		t.Errorf("http → command:\n%s\nwant:\n%s", got, want)
	}
	if _, err := Uninstall(cfg); err != nil {
		t.Fatal(err)
	}
	if got := readOrFail(t, path); !equivalent(t, got, orig) {
		t.Errorf("after uninstall:\n%s", got)
	}
}

func TestInstallRefusals(t *testing.T) {
	home := t.TempDir()
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"unknown-agent", Config{Agent: "vim", Home: home, Binary: testBinary}, `unknown agent "vim"`},
		{"relative-binary", Config{Agent: Claude, Home: home, Binary: "narrowd"}, "not absolute"},
		{"no-binary", Config{Agent: Claude, Home: home}, "no narrowd binary"},
		{"newline-binary", Config{Agent: Claude, Home: home, Binary: "/bin/nar\nrowd"}, "control character"},
		{"http-not-claude", Config{Agent: Codex, Home: home, Binary: testBinary, HTTPAddr: "127.0.0.1:1"}, "only supported for claude"},
		{"http-remote", Config{Agent: Claude, Home: home, Binary: testBinary, HTTPAddr: "10.0.0.1:7433"}, "loopback only"},
		{"http-no-port", Config{Agent: Claude, Home: home, Binary: testBinary, HTTPAddr: "127.0.0.1"}, "invalid --http"},
		{"http-bad-port", Config{Agent: Claude, Home: home, Binary: testBinary, HTTPAddr: "127.0.0.1:99999"}, "port number"},
		{"no-home", Config{Agent: Claude, Binary: testBinary}, "no home directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Install(tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want one containing %q", err, tt.want)
			}
		})
	}
	if entries, _ := os.ReadDir(home); len(entries) > 0 {
		t.Errorf("refused installs wrote %d entries into home", len(entries))
	}
}

func TestInstallHTTPAddrForms(t *testing.T) {
	for addr, url := range map[string]string{
		"localhost:7433": "http://localhost:7433/hook/claude",
		"[::1]:7433":     "http://[::1]:7433/hook/claude",
		"127.0.0.2:80":   "http://127.0.0.2:80/hook/claude",
	} {
		cfg, path := setup(t, Claude, levels()[0])
		cfg.HTTPAddr = addr
		if _, err := Install(cfg); err != nil {
			t.Fatalf("%s: %v", addr, err)
		}
		if got := narrowdEntries(t, Claude, readOrFail(t, path))["PreToolUse"]; !reflect.DeepEqual(got, []string{url}) {
			t.Errorf("%s: %q, want %q", addr, got, url)
		}
	}
}

func TestInstallDryRun(t *testing.T) {
	cfg, path := setup(t, Cursor, levels()[0])
	orig := readOrFail(t, "testdata/cursor-existing.json")
	writeFixture(t, path, orig, 0o644)
	cfg.DryRun = true
	res, err := Install(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Changed || res.Backup != "" || !bytes.Equal(res.After, readOrFail(t, "testdata/cursor-merged.json")) {
		t.Errorf("dry run result = %+v", res)
	}
	if got := readOrFail(t, path); !bytes.Equal(got, orig) || len(backups(t, path)) > 0 {
		t.Errorf("dry run wrote")
	}
	// A dry uninstall of a fresh install reports the removal, writes nothing.
	cfg.DryRun = false
	os.Remove(path)
	if _, err := Install(cfg); err != nil {
		t.Fatal(err)
	}
	cfg.DryRun = true
	res, err = Uninstall(cfg)
	if err != nil || !res.Removed {
		t.Fatalf("dry uninstall = %+v, %v", res, err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("dry uninstall removed the file")
	}
}

func TestInstallEdgeCases(t *testing.T) {
	t.Run("empty-file", func(t *testing.T) {
		cfg, path := setup(t, Claude, levels()[1])
		writeFixture(t, path, []byte("\n"), 0o644)
		res, err := Install(cfg)
		if err != nil || !res.Changed || res.Backup == "" {
			t.Fatalf("%+v, %v", res, err)
		}
		golden(t, "claude-fresh.json", readOrFail(t, path))
	})
	t.Run("uninstall-leaves-untouched-file-alone", func(t *testing.T) {
		cfg, path := setup(t, Claude, levels()[1])
		data := []byte(`{"model":"opus"}`) // compact: must not be reformatted
		writeFixture(t, path, data, 0o644)
		res, err := Uninstall(cfg)
		if err != nil || res.Changed {
			t.Fatalf("%+v, %v", res, err)
		}
		if got := readOrFail(t, path); !bytes.Equal(got, data) {
			t.Errorf("file rewritten: %s", got)
		}
	})
	t.Run("installed-but-reformatted-is-unchanged", func(t *testing.T) {
		cfg, path := setup(t, Codex, levels()[1])
		if _, err := Install(cfg); err != nil {
			t.Fatal(err)
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, readOrFail(t, path)); err != nil {
			t.Fatal(err)
		}
		writeFixture(t, path, compact.Bytes(), 0o644)
		res, err := Install(cfg)
		if err != nil || res.Changed {
			t.Fatalf("%+v, %v", res, err)
		}
		if got := readOrFail(t, path); !bytes.Equal(got, compact.Bytes()) {
			t.Errorf("an unchanged file was rewritten:\n%s", got)
		}
	})
	t.Run("duplicates-collapse", func(t *testing.T) {
		cfg, path := setup(t, Claude, levels()[1])
		cmd := HookCommand(otherBinary, Claude)
		data := `{"hooks": {"PreToolUse": [
			{"matcher": "*", "hooks": [{"type": "command", "command": "` + cmd + `"}]},
			{"matcher": "Bash", "hooks": [{"type": "command", "command": "guard"}, {"type": "command", "command": "` + cmd + `"}]}
		]}}`
		writeFixture(t, path, []byte(data), 0o644)
		if _, err := Install(cfg); err != nil {
			t.Fatal(err)
		}
		got := readOrFail(t, path)
		if e := narrowdEntries(t, Claude, got)["PreToolUse"]; len(e) != 1 {
			t.Errorf("PreToolUse narrowd entries %q, want one", e)
		}
		if !strings.Contains(string(got), `"command": "guard"`) {
			t.Errorf("the other hook was lost:\n%s", got)
		}
	})
	t.Run("user-keys-on-our-handler-kept", func(t *testing.T) {
		cfg, path := setup(t, Claude, levels()[1])
		data := `{"hooks": {"PreToolUse": [{"matcher": "Bash|Edit", "hooks": [
			{"type": "command", "command": "` + HookCommand(otherBinary, Claude) + `", "statusMessage": "narrowd", "timeout": 5}]}]}}`
		writeFixture(t, path, []byte(data), 0o644)
		if _, err := Install(cfg); err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Hooks map[string][]struct {
				Matcher string           `json:"matcher"`
				Hooks   []map[string]any `json:"hooks"`
			} `json:"hooks"`
		}
		json.Unmarshal(readOrFail(t, path), &doc)
		g := doc.Hooks["PreToolUse"][0]
		h := g.Hooks[0]
		if g.Matcher != "Bash|Edit" || h["statusMessage"] != "narrowd" || h["timeout"] != float64(30) || h["command"] != HookCommand(testBinary, Claude) || h["onFailure"] != "block" {
			t.Errorf("group %+v", g)
		}
	})
	t.Run("symlinked-settings", func(t *testing.T) {
		cfg, path := setup(t, Gemini, levels()[0])
		target := filepath.Join(t.TempDir(), "dotfiles-settings.json")
		writeFixture(t, target, readOrFail(t, "testdata/gemini-existing.json"), 0o640)
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.Symlink(target, path); err != nil {
			t.Fatal(err)
		}
		if _, err := Install(cfg); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Lstat(path); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("symlink replaced: %v", err)
		}
		if got := readOrFail(t, target); !bytes.Equal(got, readOrFail(t, "testdata/gemini-merged.json")) {
			t.Errorf("target not edited:\n%s", got)
		}
		if fi, _ := os.Stat(target); fi.Mode().Perm() != 0o640 {
			t.Errorf("target mode = %v", fi.Mode().Perm())
		}
	})
	t.Run("user-dir-override", func(t *testing.T) {
		cfg, _ := setup(t, Codex, levels()[0])
		cfg.UserDir = filepath.Join(t.TempDir(), "codex-home")
		res, err := Install(cfg)
		if err != nil || res.Path != filepath.Join(cfg.UserDir, "hooks.json") {
			t.Fatalf("%+v, %v", res, err)
		}
	})
	t.Run("binary-needing-quotes", func(t *testing.T) {
		cfg, path := setup(t, Copilot, levels()[0])
		cfg.Binary = "/home/o'neil/my tools/narrowd"
		if _, err := Install(cfg); err != nil {
			t.Fatal(err)
		}
		want := `'/home/o'\''neil/my tools/narrowd' hook copilot --event preToolUse`
		if got := narrowdEntries(t, Copilot, readOrFail(t, path))["preToolUse"]; !reflect.DeepEqual(got, []string{want}) {
			t.Errorf("%q, want %q", got, want)
		}
		// Idempotent with a quoted command too.
		if res, err := Install(cfg); err != nil || res.Changed {
			t.Errorf("second install: %+v, %v", res, err)
		}
	})
	t.Run("backup-names-do-not-collide", func(t *testing.T) {
		cfg, path := setup(t, Cursor, levels()[0])
		writeFixture(t, path, []byte(`{}`), 0o644)
		if _, err := Install(cfg); err != nil {
			t.Fatal(err)
		}
		cfg.Binary = otherBinary // same clock: the same backup stamp
		res, err := Install(cfg)
		if err != nil || !strings.HasSuffix(res.Backup, "Z-2") {
			t.Fatalf("%+v, %v", res, err)
		}
		if n := len(backups(t, path)); n != 2 {
			t.Errorf("%d backups", n)
		}
	})
}

func TestJSONTreeRoundTrip(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"empty-object", `{}`, "{}\n"},
		{"order-kept", `{"b":1,"a":2}`, "{\n  \"b\": 1,\n  \"a\": 2\n}\n"},
		{"numbers-as-written", `[1.0,2e3,-0,1E+2]`, "[\n  1.0,\n  2e3,\n  -0,\n  1E+2\n]\n"},
		{"no-html-escaping", `{"c":"<&>"}`, "{\n  \"c\": \"<&>\"\n}\n"},
		{"unicode-escapes-decoded", `["\u00e9"]`, "[\n  \"é\"\n]\n"},
		{"duplicate-keys-kept", `{"a":1,"a":2}`, "{\n  \"a\": 1,\n  \"a\": 2\n}\n"},
		{"nested-empties", `{"a":[],"b":{}}`, "{\n  \"a\": [],\n  \"b\": {}\n}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := decodeTree([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if got := string(encodeTree(v)); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			var a, b any
			if err := json.Unmarshal([]byte(tt.in), &a); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(tt.want), &b); err != nil {
				t.Fatalf("output is not JSON: %v", err)
			}
		})
	}
}

func TestOurs(t *testing.T) {
	want := HookCommand(testBinary, Claude)
	tests := []struct {
		name    string
		handler string
		wantCmd string
		ours    bool
	}{
		{"exact", `{"command": "` + want + `"}`, want, true},
		{"other-path", `{"command": "/usr/bin/narrowd hook claude"}`, want, true},
		{"quoted-path", `{"command": "'/my tools/narrowd' hook codex"}`, "", true},
		{"copilot-bash", `{"bash": "narrowd hook copilot"}`, "", true},
		{"bare-hook", `{"command": "narrowd hook"}`, "", true},
		{"http", `{"type": "http", "url": "http://127.0.0.1:1/hook/claude"}`, "", true},
		{"renamed-binary-exact", `{"command": "/opt/guard hook claude"}`, "/opt/guard hook claude", true},
		{"other-tool", `{"command": "/usr/local/bin/other-guard check"}`, want, false},
		{"narrowd-not-hook", `{"command": "narrowd check --jsonl"}`, want, false},
		{"hook-not-narrowd", `{"command": "guard hook claude"}`, want, false},
		{"empty-command", `{"command": ""}`, "", false},
		{"other-url", `{"type": "http", "url": "http://127.0.0.1:1/hooks/pre-tool-use"}`, "", false},
		{"command-not-string", `{"command": ["narrowd", "hook"]}`, "", false},
		{"small-binary", `{"command": "/opt/narrowd/bin/narrowd-hook gemini"}`, want, true},
		{"small-binary-quoted", `{"bash": "'/my tools/narrowd-hook' copilot --event preToolUse"}`, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := decodeTree([]byte(tt.handler))
			if err != nil {
				t.Fatal(err)
			}
			if got := ours(v.(*object), tt.wantCmd); got != tt.ours {
				t.Errorf("ours = %v, want %v", got, tt.ours)
			}
		})
	}
}

func TestHookCommand(t *testing.T) {
	tests := []struct {
		binary string
		agent  Agent
		want   string
	}{
		{"/opt/narrowd/bin/narrowd", Claude, "/opt/narrowd/bin/narrowd hook claude"},
		{"/opt/narrowd/bin/narrowd-hook", Codex, "/opt/narrowd/bin/narrowd-hook codex"},
		{"/my tools/narrowd-hook", Gemini, "'/my tools/narrowd-hook' gemini"},
		{"/opt/guard/bin/guard", Cursor, "/opt/guard/bin/guard hook cursor"},
		// Only the exact name takes the agent alone.
		{"/opt/x/narrowd-hook-old", Claude, "/opt/x/narrowd-hook-old hook claude"},
	}
	for _, tt := range tests {
		if got := HookCommand(tt.binary, tt.agent); got != tt.want {
			t.Errorf("HookCommand(%q, %s) = %q, want %q", tt.binary, tt.agent, got, tt.want)
		}
	}
}

// An install of `narrowd hook` is rewritten in place to run narrowd-hook
// once it is installed beside narrowd (and back), with no second entry;
// uninstall finds either form.
func TestInstallSwitchesToHookBinary(t *testing.T) {
	small := filepath.Join(filepath.Dir(testBinary), HookBinaryName)
	for _, a := range []Agent{Claude, Codex, Gemini, Copilot, Cursor} {
		t.Run(string(a), func(t *testing.T) {
			cfg, path := setup(t, a, levels()[0])
			for _, bin := range []string{testBinary, small, testBinary, small} {
				cfg.Binary = bin
				if _, err := Install(cfg); err != nil {
					t.Fatal(err)
				}
				entries := narrowdEntries(t, a, readOrFail(t, path))
				if len(entries) == 0 {
					t.Fatalf("installing %s wrote no hook", bin)
				}
				for ev, cmds := range entries {
					if len(cmds) != 1 || !strings.HasPrefix(cmds[0], HookCommand(bin, a)) {
						t.Errorf("after installing %s, %s runs %q", bin, ev, cmds)
					}
				}
			}
			cfg.Binary = ""
			if _, err := Uninstall(cfg); err != nil {
				t.Fatal(err)
			}
			if got, err := os.ReadFile(path); err == nil && strings.Contains(string(got), "narrowd") {
				t.Errorf("uninstall left narrowd's hooks:\n%s", got)
			}
		})
	}
}

// An install from before --event (one "narrowd hook copilot" command for
// every event) is rewritten in place to name each event, and uninstall
// finds either form.
func TestInstallCopilotAddsEvent(t *testing.T) {
	cfg, path := setup(t, Copilot, levels()[0])
	cfg.Binary = "/opt/guard/bin/guard" // not named narrowd: found by its exact command
	old := HookCommand(cfg.Binary, Copilot)
	writeFixture(t, path, []byte(`{"version":1,"hooks":{"preToolUse":[{"type":"command","bash":"`+old+`","timeoutSec":30}],"permissionRequest":[{"type":"command","bash":"`+old+`","timeoutSec":30}]}}`), 0o644)
	if _, err := Install(cfg); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Hooks map[string][]struct {
			Bash string `json:"bash"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal(readOrFail(t, path), &doc); err != nil {
		t.Fatal(err)
	}
	for _, ev := range []string{"preToolUse", "permissionRequest", "postToolUse"} {
		var got []string
		for _, h := range doc.Hooks[ev] {
			got = append(got, h.Bash)
		}
		if want := []string{old + " --event " + ev}; !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %q, want %q", ev, got, want)
		}
	}
	if _, err := Uninstall(cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("uninstall left %s: %v", path, err)
	}
}
