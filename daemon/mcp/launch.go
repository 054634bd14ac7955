package mcp

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// Launcher builds the command that starts a stdio server. The [Lister]
// starts and stops it, then calls cleanup; a Launcher only decides what
// runs and how it is confined. Tests use it to see the argv.
type Launcher interface {
	Command(ctx context.Context, s Server) (cmd *exec.Cmd, cleanup func(), err error)
}

// NamespaceLauncher starts a server in a new user and network namespace:
// it has no network (only a loopback that is down), so a repository
// program cannot phone home or download anything. It does not confine
// writes; [ExecLauncher] does, once narrowd's own sandbox is available.
type NamespaceLauncher struct{}

// Command returns the confined command.
func (NamespaceLauncher) Command(ctx context.Context, s Server) (*exec.Cmd, func(), error) {
	if s.Command == "" {
		return nil, nil, errors.New("no command")
	}
	cmd := exec.CommandContext(ctx, s.Command, s.Args...)
	cmd.Dir, cmd.Env = serverDir(s), serverEnv(s)
	uid, gid := os.Getuid(), os.Getgid()
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// A PID namespace of its own: the server is its init, and the
		// kernel ends whatever it started when it is killed.
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET | syscall.CLONE_NEWPID,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
		Setpgid:     true,
		Pdeathsig:   syscall.SIGKILL,
	}
	return cmd, func() {}, nil
}

// ExecLauncher starts a server through narrowd's own sandbox,
// `narrowd exec --confine --write TMP -- …`: no network, and writes only
// to a fresh directory that is removed afterwards. Listing tools needs no
// writes, so not even the project is writable. The sandbox starts the
// program in its writable directory; a small sh trampoline moves it to the
// directory the agent would start it in.
type ExecLauncher struct {
	// Narrowd is the narrowd executable.
	Narrowd string
	// TempDir is where the writable directories are made; empty means
	// the system's.
	TempDir string
}

// Command returns the confined command.
func (l ExecLauncher) Command(ctx context.Context, s Server) (*exec.Cmd, func(), error) {
	if s.Command == "" {
		return nil, nil, errors.New("no command")
	}
	tmp, err := os.MkdirTemp(l.TempDir, "narrowd-mcp-")
	if err != nil {
		return nil, nil, err
	}
	argv := []string{"exec", "--confine", "--write", tmp, "--", "/bin/sh", "-c", `cd -- "$0" && exec "$@"`, serverDir(s), s.Command}
	argv = append(argv, s.Args...)
	cmd := exec.CommandContext(ctx, l.Narrowd, argv...)
	cmd.Dir, cmd.Env = tmp, serverEnv(s)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	return cmd, func() { os.RemoveAll(tmp) }, nil
}

// serverDir is where the agent would start the server: its cwd if the
// configuration names one, else the project, else the home directory.
func serverDir(s Server) string {
	switch {
	case s.Dir != "":
		return s.Dir
	case s.Project != "":
		return s.Project
	}
	if h, err := os.UserHomeDir(); err == nil {
		return h
	}
	return "/"
}

// passedEnv are the only variables of narrowd's own environment a server
// sees, beside its configured env: enough to find node or python, never
// narrowd's own secrets.
var passedEnv = []string{"PATH", "HOME", "USER", "LANG", "LC_ALL", "TMPDIR", "NODE_PATH"}

func serverEnv(s Server) []string {
	var env []string
	for _, k := range passedEnv {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	for _, k := range sortedKeys(s.Env) {
		env = append(env, k+"="+s.Env[k])
	}
	return env
}
