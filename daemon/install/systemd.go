package install

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"text/template"
	"time"
)

// Unit names written by [InstallSystemd].
const (
	ServiceUnit = "narrowd.service"
	SocketUnit  = "narrowd.socket"
)

// unitMarker is the first line of every unit install writes; uninstall
// removes only units that carry it.
const unitMarker = "# Written by `narrowd install systemd`; `narrowd uninstall systemd` removes it."

// UnitConfig says where narrowd's systemd user units go and what they run.
type UnitConfig struct {
	// Dir is the user unit directory, usually ~/.config/systemd/user.
	Dir string
	// Binary is the absolute path of the narrowd binary ExecStart= runs.
	Binary string
	// Socket also installs narrowd.socket, so that systemd owns the hook
	// socket and starts the daemon on the first connection.
	Socket bool
	// DryRun computes the change and writes nothing.
	DryRun bool
	// Now stamps backup names; nil means time.Now.
	Now func() time.Time
}

// Unit is one rendered unit file.
type Unit struct {
	// Name is the unit's file name, e.g. narrowd.service.
	Name string
	// Content is the unit file.
	Content []byte
}

// Units renders narrowd.service and, with cfg.Socket, narrowd.socket.
func Units(cfg UnitConfig) ([]Unit, error) {
	if err := checkBinary(cfg.Binary); err != nil {
		return nil, err
	}
	data := struct {
		Marker, ExecStart string
		Socket            bool
	}{unitMarker, systemdQuote(cfg.Binary) + " serve", cfg.Socket}
	units := []Unit{{ServiceUnit, render(serviceTemplate, data)}}
	if cfg.Socket {
		units = append(units, Unit{SocketUnit, render(socketTemplate, data)})
	}
	return units, nil
}

func render(text string, data any) []byte {
	var b bytes.Buffer
	// The templates are constants exercised by every test: a failure here
	// is a bug, not an input error.
	template.Must(template.New("unit").Parse(text)).Execute(&b, data)
	return b.Bytes()
}

// InstallSystemd writes the units of [Units] into cfg.Dir, each with a
// backup of a different previous version. Without cfg.Socket it removes a
// narrowd.socket an earlier install wrote, since the daemon then binds the
// socket itself. It does not run systemctl.
func InstallSystemd(cfg UnitConfig) ([]Result, error) {
	units, err := Units(cfg)
	if err != nil {
		return nil, err
	}
	var results []Result
	for _, u := range units {
		res, err := writeUnit(cfg, u)
		results = append(results, res)
		if err != nil {
			return results, err
		}
	}
	if !cfg.Socket {
		res, err := removeUnit(cfg, SocketUnit)
		if res.Changed {
			results = append(results, res)
		}
		if err != nil {
			return results, err
		}
	}
	return results, nil
}

// UninstallSystemd removes the units install wrote from cfg.Dir, keeping a
// backup of each, and the symlinks "systemctl --user enable" made for them
// in cfg.Dir's *.wants directories. A unit file of the same name that
// install did not write is left alone and reported as an error. It does
// not run systemctl: a running unit keeps running until it is stopped.
func UninstallSystemd(cfg UnitConfig) ([]Result, error) {
	var results []Result
	var errs []error
	for _, name := range []string{SocketUnit, ServiceUnit} {
		res, err := removeUnit(cfg, name)
		results = append(results, res)
		errs = append(errs, err)
		if err != nil {
			continue
		}
		links, err := removeWants(cfg, name)
		results = append(results, links...)
		errs = append(errs, err)
	}
	return results, errors.Join(errs...)
}

// removeWants removes the symlinks named name in cfg.Dir/*.wants.
func removeWants(cfg UnitConfig, name string) ([]Result, error) {
	dir, err := unitDir(cfg)
	if err != nil {
		return nil, err
	}
	links, err := filepath.Glob(filepath.Join(dir, "*.wants", name))
	if err != nil {
		return nil, err
	}
	var results []Result
	for _, l := range links {
		fi, err := os.Lstat(l)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			continue
		}
		results = append(results, Result{Path: l, Changed: true, Removed: true})
		if cfg.DryRun {
			continue
		}
		if err := os.Remove(l); err != nil {
			return results, fmt.Errorf("disable %s: %w", name, err)
		}
	}
	return results, nil
}

func unitDir(cfg UnitConfig) (string, error) {
	if cfg.Dir == "" {
		return "", fmt.Errorf("no systemd unit directory given")
	}
	return filepath.Abs(cfg.Dir)
}

func writeUnit(cfg UnitConfig, u Unit) (Result, error) {
	dir, err := unitDir(cfg)
	if err != nil {
		return Result{}, err
	}
	res := Result{Path: filepath.Join(dir, u.Name), After: u.Content}
	before, mode, err := readFile(res.Path)
	if err != nil {
		return res, err
	}
	res.Before = before
	if bytes.Equal(before, u.Content) {
		return res, nil
	}
	res.Changed = true
	if cfg.DryRun {
		return res, nil
	}
	if before != nil {
		if res.Backup, err = backup(res.Path, before, mode, now(cfg.Now)); err != nil {
			return res, err
		}
	} else {
		mode = 0o644
	}
	return res, writeAtomic(res.Path, u.Content, mode)
}

func removeUnit(cfg UnitConfig, name string) (Result, error) {
	dir, err := unitDir(cfg)
	if err != nil {
		return Result{}, err
	}
	res := Result{Path: filepath.Join(dir, name)}
	if fi, err := os.Lstat(res.Path); err == nil && !fi.Mode().IsRegular() {
		return res, fmt.Errorf("%s is not a regular file; not written by narrowd install, left alone", res.Path)
	}
	before, mode, err := readFile(res.Path)
	if err != nil || before == nil {
		return res, err
	}
	res.Before = before
	if !bytes.HasPrefix(before, []byte(unitMarker+"\n")) {
		return res, fmt.Errorf("%s was not written by narrowd install; left alone", res.Path)
	}
	res.Changed, res.Removed = true, true
	if cfg.DryRun {
		return res, nil
	}
	if res.Backup, err = backup(res.Path, before, mode, now(cfg.Now)); err != nil {
		return res, err
	}
	if err := os.Remove(res.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return res, fmt.Errorf("remove %s: %w", res.Path, err)
	}
	return res, nil
}

func now(f func() time.Time) time.Time {
	if f == nil {
		return time.Now()
	}
	return f()
}

// systemdQuote quotes the program path of ExecStart=: inside double
// quotes a backslash and a quote are escaped, and "%" is a specifier
// unless doubled. "$" stays: systemd substitutes variables only in the
// arguments, never in the program path (verify confirms it).
func systemdQuote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "%", "%%")
	return `"` + r.Replace(s) + `"`
}

const serviceTemplate = `{{.Marker}}
#
# narrowd judges coding agents' tool calls. It has to see the agent it
# judges: the peer's /proc/<pid> entries (exe, ns/*, fds), the host's
# network namespace (/proc/net/tcp owners, sock_diag over netlink) and the
# host's PIDs. The hardening below is the subset that works in a user
# manager WITHOUT a user namespace; everything that would hide another
# process from narrowd is deliberately left out (see the end of [Service]).

[Unit]
Description=narrowd: judges coding-agent tool calls
Documentation=https://github.com/narrowd/narrowd
{{- if .Socket}}
# narrowd.socket owns the hook socket and passes it in (LISTEN_FDS).
Requires=narrowd.socket
After=narrowd.socket
{{- end}}

[Service]
# narrowd serve sends READY=1 on $NOTIFY_SOCKET once it answers hooks.
Type=notify
NotifyAccess=main
ExecStart={{.ExecStart}}
Restart=on-failure
RestartSec=1s
{{- if .Socket}}
# No RuntimeDirectory=: narrowd.socket creates %t/narrowd, and systemd
# deletes a service's RuntimeDirectory= when the service stops, which would
# unlink the socket that narrowd.socket keeps listening on.
{{- else}}
# The daemon binds $XDG_RUNTIME_DIR/narrowd/narrowd.sock itself. In a user
# unit RuntimeDirectory= resolves under $XDG_RUNTIME_DIR (%t), not /run.
RuntimeDirectory=narrowd
RuntimeDirectoryMode=0700
{{- end}}
# Session history and the audit log: $XDG_STATE_HOME/narrowd
# (~/.local/state/narrowd), passed in as $STATE_DIRECTORY.
StateDirectory=narrowd
StateDirectoryMode=0700
UMask=0077

# Hardening that needs no user namespace (seccomp and prctl based):
# no setuid gains, for narrowd or anything it might start.
NoNewPrivileges=yes
# No execution-domain changes (personality(2)).
LockPersonality=yes
# No realtime scheduling; a busy agent cannot starve the desktop.
RestrictRealtime=yes
# No setuid/setgid files created.
RestrictSUIDSGID=yes
# Go never needs writable and executable memory.
MemoryDenyWriteExecute=yes
SystemCallArchitectures=native
# @system-service holds what narrowd uses: pidfd_open and pidfd ioctls,
# openat2, statx, copy_file_range, FICLONE. A filtered call fails with
# EPERM instead of killing the daemon.
SystemCallFilter=@system-service
SystemCallErrorNumber=EPERM
# AF_UNIX: the hook socket. AF_INET/AF_INET6: the loopback HTTP hook and
# metrics listener. AF_NETLINK: sock_diag, to find the process that owns a
# loopback TCP connection.
RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6 AF_NETLINK
# narrowd itself creates no namespaces; its sandbox runs as a child of the
# agent's shell, not of this unit.
RestrictNamespaces=yes

# Deliberately NOT set, because each one blinds narrowd to the processes it
# judges:
#  PrivateUsers=: a private user namespace makes /proc/<agent>/ns/* and
#   /proc/<agent>/exe unreadable (EACCES, tested).
#  ProtectSystem=, ProtectHome=, PrivateTmp=, PrivateDevices=,
#   ProtectKernelTunables=, ProtectKernelModules=, ProtectKernelLogs=,
#   ProtectControlGroups=, ProtectClock=, ProtectHostname=, ReadWritePaths=:
#   a user manager can only apply them inside a user namespace. systemd 252
#   silently skips them; newer systemd turns PrivateUsers= on for them,
#   which is the case above. narrowd also reads the agent's workspace to
#   prove paths, so it cannot be walled off from $HOME anyway.
#  ProtectProc=invisible, ProcSubset=pid: hide other processes' /proc
#   entries and /proc/net, i.e. the agent's identity and its sockets.
#  PrivateNetwork=, PrivatePIDs=: narrowd must share the host's network
#   namespace (loopback listener, socket owners) and PID namespace (peer
#   credentials).

[Install]
WantedBy=default.target
{{- if .Socket}}
Also=narrowd.socket
{{- end}}
`

const socketTemplate = `{{.Marker}}
#
# systemd owns narrowd's hook socket and starts narrowd.service on the
# first connection; the daemon takes the socket from LISTEN_FDS. The hook
# shim looks for it at $XDG_RUNTIME_DIR/narrowd/narrowd.sock.

[Unit]
Description=narrowd hook socket
Documentation=https://github.com/narrowd/narrowd

[Socket]
# %t is $XDG_RUNTIME_DIR (/run/user/UID, mode 0700) in a user manager.
ListenStream=%t/narrowd/narrowd.sock
# Only the user may connect: the socket and its directory.
SocketMode=0600
DirectoryMode=0700
RemoveOnStop=yes

[Install]
WantedBy=sockets.target
`
