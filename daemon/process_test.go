package daemon

// Tests that run the real narrowd binary: crashes, shims, other users,
// socket activation.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestAuditSurvivesSIGKILL sends calls to a real daemon, kills it with
// SIGKILL while calls are in flight, and checks that every call it
// acknowledged has its audit record on disk: with records fsynced later
// (the default) and before each answer.
func TestAuditSurvivesSIGKILL(t *testing.T) {
	bin := narrowdBinary(t)
	for _, tt := range []struct {
		name  string
		extra []string
	}{
		{"sync-within-default", nil},
		{"sync-within-1h", []string{"--audit-sync-within", "1h"}},
		{"sync-before-answer", []string{"--audit-sync-within", "0"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := shortDir(t)
			cmd, sock := startBinary(t, bin, dir, tt.extra...)
			acked := killDuringCalls(t, cmd, sock)
			recs := auditIDs(t, filepath.Join(dir, "state", "audit"))
			for _, id := range acked {
				if recs[id] == nil {
					t.Errorf("acknowledged call %s has no audit record", id)
				}
			}
			t.Logf("%d calls acknowledged, %d records on disk", len(acked), len(recs))
		})
	}
}

// killDuringCalls makes calls from eight clients, SIGKILLs the daemon
// after the 150th answer, and returns the ids of the calls it answered.
func killDuringCalls(t *testing.T, cmd *exec.Cmd, sock string) []string {
	c := &Client{Socket: sock, Timeout: 10 * time.Second}
	var mu sync.Mutex
	var acked []string
	var n atomic.Int64
	killed := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := 0; ; i++ {
				env, err := c.Hook(context.Background(), "claude", mcpCall(fmt.Sprintf("k%d-%d", w, i)), nil)
				if err != nil {
					return // the daemon is gone
				}
				mu.Lock()
				acked = append(acked, env.ID)
				mu.Unlock()
				if n.Add(1) == 150 {
					cmd.Process.Signal(syscall.SIGKILL)
					close(killed)
				}
			}
		})
	}
	select {
	case <-killed:
	case <-time.After(60 * time.Second):
		t.Fatal("daemon never acknowledged 150 calls")
	}
	wg.Wait()
	cmd.Wait()
	return acked
}

// shimResult is what one run of `narrowd hook` produced.
type shimResult struct {
	code           int
	stdout, stderr string
}

func runShim(t testing.TB, bin, sock string, agentName string, stdin io.Reader) shimResult {
	cmd := exec.Command(bin, "hook", "--socket", sock, agentName)
	cmd.Env = append(os.Environ(), "HOME="+filepath.Dir(filepath.Dir(sock)), "XDG_CONFIG_HOME=/nonexistent")
	cmd.Stdin = stdin
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	code := 0
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Errorf("shim: %v", err)
		code = -1
	}
	return shimResult{code, out.String(), errb.String()}
}

// TestShimsWhileDaemonDies runs real shims while the daemon is killed:
// each one gets the daemon's answer, or judges in-process and says so,
// or blocks. None lets a call it cannot allow run.
func TestShimsWhileDaemonDies(t *testing.T) {
	bin := narrowdBinary(t)
	dir := shortDir(t)
	cmd, sock := startBinary(t, bin, dir)
	payload := mcpCall("dying")

	// Four streams of shims; the daemon dies after the first dozen.
	const shims = 40
	results := make([]shimResult, shims)
	var next, done atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= shims {
					return
				}
				results[i] = runShim(t, bin, sock, "claude", bytes.NewReader(payload))
				if done.Add(1) == 12 {
					cmd.Process.Signal(syscall.SIGKILL)
				}
			}
		})
	}
	wg.Wait()
	var fromDaemon, inProcess, blocked int
	for i, r := range results {
		switch {
		case r.code == 2:
			blocked++
		case r.code != 0:
			t.Errorf("shim %d exited %d: %s", i, r.code, r.stderr)
		case !strings.Contains(r.stdout, `"permissionDecision":"deny"`) && !strings.Contains(r.stdout, `"permissionDecision":"ask"`):
			t.Errorf("shim %d let an unlabelled tool through: %q %q", i, r.stdout, r.stderr)
		case strings.Contains(r.stderr, "evaluated in-process"):
			inProcess++
		default:
			fromDaemon++
		}
	}
	t.Logf("%d answered by the daemon, %d in-process, %d blocked", fromDaemon, inProcess, blocked)
	if inProcess+blocked == 0 || fromDaemon == 0 {
		t.Error("the test did not see both the daemon answering and the daemon gone")
	}
}

// TestShimHugePayload feeds the real shim 100 MB: it refuses with a
// blocking reply, and the daemon is unaffected.
func TestShimHugePayload(t *testing.T) {
	bin := narrowdBinary(t)
	dir := shortDir(t)
	_, sock := startBinary(t, bin, dir)
	huge := io.MultiReader(bytes.NewReader(mcpCall("huge")[:30]), io.LimitReader(zeroReader{}, 100<<20))
	r := runShim(t, bin, sock, "claude", huge)
	if r.code != 2 || !strings.Contains(r.stdout, `"block"`) {
		t.Fatalf("100 MB payload: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	r = runShim(t, bin, sock, "claude", bytes.NewReader(mcpCall("after")))
	if r.code != 0 || strings.Contains(r.stderr, "in-process") {
		t.Fatalf("daemon hurt by a huge payload: %+v", r)
	}
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	return len(p), nil
}

// TestSocketActivation hands the daemon a listening socket on fd 3 the
// way systemd does.
func TestSocketActivation(t *testing.T) {
	bin := narrowdBinary(t)
	dir := shortDir(t)
	sock := filepath.Join(dir, "act.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	f, err := ln.(*net.UnixListener).File()
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	ns := filepath.Join(dir, "notify.sock")
	pc, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: ns, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	// LISTEN_PID must be the daemon's pid; exec keeps the shell's.
	cmd := exec.Command("/bin/sh", "-c", `LISTEN_PID=$$ LISTEN_FDS=1 exec "$0" serve --socket "$1" --state-dir "$2"`,
		bin, filepath.Join(dir, "unused", "x.sock"), filepath.Join(dir, "state"))
	cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+ns, "HOME="+dir, "XDG_CONFIG_HOME=/nonexistent")
	cmd.ExtraFiles = []*os.File{f}
	cmd.Stderr = testWriter{t}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	buf := make([]byte, 128)
	pc.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := pc.Read(buf)
	if err != nil || !strings.HasPrefix(string(buf[:n]), "READY=1") {
		t.Fatalf("no READY=1: %q %v", buf[:n], err)
	}
	c := &Client{Socket: sock, Timeout: 5 * time.Second}
	env, err := c.Hook(context.Background(), "claude", mcpCall("act"), nil)
	if err != nil || !isBlocking(env.Reply) {
		t.Fatalf("activated socket: %+v %v", env, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "unused", "x.sock")); err == nil {
		t.Error("the daemon bound its own socket despite socket activation")
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if _, err := os.Stat(sock); err != nil {
		t.Error("the daemon removed systemd's socket")
	}
}

// TestPeerOtherUser connects as another uid (needs root to switch) over
// loopback TCP and over the Unix socket (opened up for the test): both are
// refused with 403 and counted.
func TestPeerOtherUser(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run a client as another user")
	}
	if os.Getenv("NARROWD_PEER_HELPER") != "" {
		t.Skip("helper")
	}
	d := startDaemon(t, nil)
	// The test binary, where uid 65534 can run it.
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	hdir := shortDir(t)
	os.Chmod(hdir, 0o755)
	helper := filepath.Join(hdir, "helper")
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(helper, b, 0o755); err != nil {
		t.Fatal(err)
	}
	// Open the socket to everyone, for this test only.
	os.Chmod(filepath.Dir(d.socket), 0o755)
	os.Chmod(d.socket, 0o666)
	os.Chmod(filepath.Dir(filepath.Dir(d.socket)), 0o755)

	for _, target := range []string{"tcp:" + d.httpURL + "/hook/claude", "unix:" + d.socket} {
		cmd := exec.Command(helper, "-test.run=^TestPeerHelper$")
		cmd.Env = append(os.Environ(), "NARROWD_PEER_HELPER="+target)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("helper for %s: %v\n%s", target, err, out)
		}
		if !strings.Contains(string(out), "STATUS 403") {
			t.Errorf("%s from another user: %s", target, out)
		}
	}
	if got := metricSum(d.scrape(t), "narrowd_peer_rejections_total", nil); got != 2 {
		t.Errorf("narrowd_peer_rejections_total = %v, want 2", got)
	}
	// Our own uid is still served.
	if _, err := d.client().Hook(context.Background(), "claude", mcpCall("me"), nil); err != nil {
		t.Fatal(err)
	}
}

// TestPeerHelper is the other user's client in TestPeerOtherUser.
func TestPeerHelper(t *testing.T) {
	target := os.Getenv("NARROWD_PEER_HELPER")
	if target == "" {
		t.Skip("run by TestPeerOtherUser")
	}
	var resp *http.Response
	var err error
	switch {
	case strings.HasPrefix(target, "tcp:"):
		resp, err = http.Post(strings.TrimPrefix(target, "tcp:"), "application/json", bytes.NewReader(mcpCall("other")))
	case strings.HasPrefix(target, "unix:"):
		hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", strings.TrimPrefix(target, "unix:"))
		}}}
		resp, err = hc.Post("http://narrowd/v1/hook/claude", "application/json", bytes.NewReader(mcpCall("other")))
	}
	if err != nil {
		fmt.Println("ERROR", err)
		return
	}
	resp.Body.Close()
	fmt.Println("STATUS", resp.StatusCode)
}
