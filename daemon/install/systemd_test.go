package install

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeBinary copies /bin/true to a path that needs quoting and escaping
// in ExecStart= ("%" is a specifier, the space splits words), so verify
// both parses the quoting and finds an executable there.
func fakeBinary(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile("/bin/true")
	if err != nil {
		t.Skipf("SKIPPED LOUDLY: no /bin/true to stand in for narrowd: %v", err)
	}
	dir := filepath.Join(t.TempDir(), "my tools")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "narrowd-100%$x")
	if err := os.WriteFile(p, src, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// verify runs systemd-analyze --user verify on paths and returns all it
// printed. Any output at all is a failure: verify exits 0 on many parse
// errors and only prints "ignoring".
func verify(t *testing.T, paths ...string) string {
	t.Helper()
	tool, err := exec.LookPath("systemd-analyze")
	if err != nil {
		if _, err2 := os.Stat("/usr/bin/systemd-analyze"); err2 != nil {
			t.Skip("SKIPPED LOUDLY: systemd-analyze is not installed; the units were NOT verified")
		}
		tool = "/usr/bin/systemd-analyze"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, tool, append([]string{"--user", "verify"}, paths...)...)
	// verify needs a writable runtime dir of its own.
	cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+t.TempDir(), "SYSTEMD_PAGER=", "SYSTEMD_COLORS=0")
	out, err := cmd.CombinedOutput()
	if err != nil && len(out) == 0 {
		return "exit error without output: " + err.Error()
	}
	return string(out)
}

func writeUnits(t *testing.T, units []Unit) (string, []string) {
	t.Helper()
	dir := t.TempDir()
	var paths []string
	for _, u := range units {
		p := filepath.Join(dir, u.Name)
		if err := os.WriteFile(p, u.Content, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return dir, paths
}

func TestUnitsVerify(t *testing.T) {
	bin := fakeBinary(t)
	for _, socket := range []bool{false, true} {
		name := "service-only"
		if socket {
			name = "with-socket"
		}
		t.Run(name, func(t *testing.T) {
			units, err := Units(UnitConfig{Binary: bin, Socket: socket})
			if err != nil {
				t.Fatal(err)
			}
			if want := map[bool]int{false: 1, true: 2}[socket]; len(units) != want {
				t.Fatalf("%d units, want %d", len(units), want)
			}
			_, paths := writeUnits(t, units)
			if out := verify(t, paths...); out != "" {
				t.Errorf("systemd-analyze --user verify printed:\n%s\nunits:\n%s", out, units[0].Content)
			}
		})
	}
	// The check must be able to fail: a typo that verify only warns about.
	t.Run("negative-control", func(t *testing.T) {
		units, err := Units(UnitConfig{Binary: bin})
		if err != nil {
			t.Fatal(err)
		}
		units[0].Content = bytes.Replace(units[0].Content, []byte("Type=notify"), []byte("Type=notifyy"), 1)
		_, paths := writeUnits(t, units)
		if out := verify(t, paths...); !strings.Contains(out, "notifyy") {
			t.Errorf("verify did not complain about Type=notifyy: %q", out)
		}
	})
	t.Run("missing-binary", func(t *testing.T) {
		units, err := Units(UnitConfig{Binary: filepath.Join(t.TempDir(), "absent")})
		if err != nil {
			t.Fatal(err)
		}
		_, paths := writeUnits(t, units)
		if out := verify(t, paths...); out == "" {
			t.Errorf("verify accepted an ExecStart= binary that does not exist")
		}
	})
}

// directives returns the unit's "Key=value" lines, comments skipped.
func directives(content []byte) map[string]string {
	d := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(content))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' || line[0] == '[' {
			continue
		}
		k, v, _ := strings.Cut(line, "=")
		d[k] = v
	}
	return d
}

func TestUnitsContent(t *testing.T) {
	for _, socket := range []bool{false, true} {
		units, err := Units(UnitConfig{Binary: "/usr/local/bin/narrowd", Socket: socket})
		if err != nil {
			t.Fatal(err)
		}
		svc := directives(units[0].Content)
		want := map[string]string{
			"Type":                    "notify",
			"ExecStart":               `"/usr/local/bin/narrowd" serve`,
			"Restart":                 "on-failure",
			"NoNewPrivileges":         "yes",
			"RestrictAddressFamilies": "AF_UNIX AF_INET AF_INET6 AF_NETLINK",
			"MemoryDenyWriteExecute":  "yes",
			"SystemCallArchitectures": "native",
			"LockPersonality":         "yes",
		}
		for k, v := range want {
			if svc[k] != v {
				t.Errorf("socket=%v: %s=%q, want %q", socket, k, svc[k], v)
			}
		}
		// What would blind narrowd to the processes it judges.
		for _, k := range []string{"ProtectProc", "ProcSubset", "PrivateUsers", "PrivateNetwork", "PrivatePIDs",
			"ProtectSystem", "ProtectHome", "PrivateTmp", "PrivateDevices", "ProtectKernelTunables",
			"ProtectKernelModules", "ProtectKernelLogs", "ProtectControlGroups", "ReadWritePaths"} {
			if _, ok := svc[k]; ok {
				t.Errorf("socket=%v: %s= is set; it blinds narrowd (see linux-proofs §7)", socket, k)
			}
		}
		// A service RuntimeDirectory= would be deleted on stop, taking
		// narrowd.socket's listening socket with it.
		if _, ok := svc["RuntimeDirectory"]; ok == socket {
			t.Errorf("socket=%v: RuntimeDirectory= present=%v", socket, ok)
		}
		if socket {
			sock := directives(units[1].Content)
			for k, v := range map[string]string{"ListenStream": "%t/narrowd/narrowd.sock", "SocketMode": "0600", "DirectoryMode": "0700"} {
				if sock[k] != v {
					t.Errorf("socket %s=%q, want %q", k, sock[k], v)
				}
			}
			if svc["Requires"] != SocketUnit {
				t.Errorf("service does not require the socket")
			}
		}
	}
}

func TestSystemdQuote(t *testing.T) {
	for in, want := range map[string]string{
		"/usr/bin/narrowd":       `"/usr/bin/narrowd"`,
		"/opt/my tools/narrowd":  `"/opt/my tools/narrowd"`,
		`/a"b\c`:                 `"/a\"b\\c"`,
		"/home/x/100%/narrowd":   `"/home/x/100%%/narrowd"`,
		"/home/$USER/bin/narrow": `"/home/$USER/bin/narrow"`,
	} {
		if got := systemdQuote(in); got != want {
			t.Errorf("systemdQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestInstallSystemd(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "systemd", "user")
	cfg := UnitConfig{Dir: dir, Binary: "/usr/local/bin/narrowd", Socket: true, Now: fixedNow}
	res, err := InstallSystemd(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 || !res[0].Changed || !res[1].Changed || res[0].Backup != "" {
		t.Fatalf("results %+v", res)
	}
	// Twice: nothing changes.
	res, err = InstallSystemd(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Changed {
			t.Errorf("second install changed %s", r.Path)
		}
	}
	// Without --socket: the service is rewritten (with a backup) and the
	// socket unit an earlier install wrote goes.
	cfg.Socket = false
	res, err = InstallSystemd(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 || !res[0].Changed || res[0].Backup == "" || !res[1].Removed {
		t.Fatalf("results %+v", res)
	}
	if _, err := os.Stat(filepath.Join(dir, SocketUnit)); !os.IsNotExist(err) {
		t.Errorf("socket unit still there: %v", err)
	}
	// Enable by hand, as systemctl --user enable would, then uninstall.
	wants := filepath.Join(dir, "default.target.wants")
	os.MkdirAll(wants, 0o755)
	if err := os.Symlink(filepath.Join(dir, ServiceUnit), filepath.Join(wants, ServiceUnit)); err != nil {
		t.Fatal(err)
	}
	if _, err := UninstallSystemd(cfg); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(dir, ServiceUnit), filepath.Join(wants, ServiceUnit)} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s still there: %v", p, err)
		}
	}
	// A unit narrowd did not write is left alone.
	foreign := []byte("[Service]\nExecStart=/bin/true\n")
	os.WriteFile(filepath.Join(dir, ServiceUnit), foreign, 0o644)
	if _, err := UninstallSystemd(cfg); err == nil || !strings.Contains(err.Error(), "not written by narrowd") {
		t.Errorf("error = %v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, ServiceUnit)); !bytes.Equal(got, foreign) {
		t.Errorf("foreign unit changed")
	}
}
