// Package quickhook answers `narrowd hook` before the rest of narrowd
// starts. An agent starts the shim once per tool call, and a Go program
// initialises every package it links before main: in narrowd that is CEL,
// protobuf, Prometheus and the MCP SDK, tens of milliseconds the shim does
// not need while the daemon answers. Go initialises a package as soon as
// its imports are, choosing among the ready ones in import-path order, so
// this package, which imports little more than os and syscall (see
// [hookclient]), runs its init before any of those. It asks the daemon and
// exits with the daemon's reply.
//
// Everything else (arguments it does not parse, a payload it cannot read,
// a config file that may name the socket, a daemon that is down, answers
// something unusable or is older) it hands to the full `narrowd hook` in
// main: the payload it read becomes the process's standard input again,
// and [Handoff] says what the daemon did, so that main does not wait for
// it a second time. It never answers anything but the daemon's own reply.
package quickhook

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path"
	"strconv"
	"syscall"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/narrowd/narrowd/daemon/hookclient"
)

// Handoff is the environment variable through which the early answer
// tells `narrowd hook` that it already asked the daemon: "unreachable: "
// or "unusable: " and the reason. Anyone may set it; it only ever makes
// the shim judge in-process or block.
const Handoff = "NARROWD_HOOK_ASKED"

func init() {
	// With [Handoff] set, an early answer (this one, or narrowd-hook's
	// before it exec'd narrowd) has asked the daemon already.
	if len(os.Args) < 2 || os.Args[1] != "hook" || os.Getenv(Handoff) != "" {
		return
	}
	code, done := Answer(os.Args[2:], os.Stdin, os.Stdout, os.Stderr, os.Getenv, handOff)
	if done {
		os.Exit(code)
	}
}

// Args are the hook's arguments.
type Args struct {
	Agent, Socket, Config, Event string
	Timeout                      time.Duration
	Offline                      bool
	// Interactive is nil unless given: the daemon's setting applies.
	Interactive *bool
}

// DefaultTimeout is how long the shim waits for the daemon.
const DefaultTimeout = 3 * time.Second

// ParseArgs parses the hook's arguments as package flag would in `narrowd
// hook`: -name or --name, a value after = or as the next argument, the
// agent name anywhere. ok is false for anything it does not take (help,
// --, an unknown flag, a bad value, a flag name spelt with ---): main
// parses those itself and says what is wrong.
func ParseArgs(argv []string) (a Args, ok bool) {
	a.Timeout = DefaultTimeout
	var agentFlag string
	var pos []string
	for i := 0; i < len(argv); i++ {
		arg := argv[i]
		if len(arg) < 2 || arg[0] != '-' {
			pos = append(pos, arg)
			continue
		}
		name, value, hasValue, ok := FlagSyntax(arg)
		if !ok {
			return a, false
		}
		switch name {
		case "offline", "interactive":
			b, err := BoolFlag(value, hasValue)
			if err != nil {
				return a, false
			}
			if name == "offline" {
				a.Offline = b
			} else {
				a.Interactive = &b
			}
			continue
		case "agent", "socket", "config", "event", "timeout":
		default:
			return a, false
		}
		if !hasValue {
			if i+1 == len(argv) {
				return a, false
			}
			i++
			value = argv[i]
		}
		switch name {
		case "agent":
			agentFlag = value
		case "socket":
			a.Socket = value
		case "config":
			a.Config = value
		case "event":
			a.Event = value
		case "timeout":
			d, err := time.ParseDuration(value)
			if err != nil {
				return a, false
			}
			a.Timeout = d
		}
	}
	var err error
	if a.Agent, err = AgentName(agentFlag, pos); err != nil {
		return a, false
	}
	return a, true
}

// FlagSyntax reads arg, a "-" and at least one more byte, as package
// flag reads a flag: -name or --name, then =value or nothing (the '='
// cannot be the name's first byte). ok is false for a name package flag
// refuses: empty, or starting with '-' or '='. Both early parsers, the
// hook's and exec's, read flags through it.
func FlagSyntax(arg string) (name, value string, hasValue, ok bool) {
	name = arg[1:]
	if name[0] == '-' {
		name = name[1:]
	}
	if name == "" || name[0] == '-' || name[0] == '=' {
		return "", "", false, false
	}
	name, value, hasValue = cut(name, '=')
	return name, value, hasValue, true
}

// BoolFlag is a boolean flag's value: true when given bare, as package
// flag reads -name.
func BoolFlag(value string, hasValue bool) (bool, error) {
	if !hasValue {
		return true, nil
	}
	return strconv.ParseBool(value)
}

// ErrAgentNames reports more than one agent name, or a name and an
// --agent flag that differ.
var ErrAgentNames = errors.New("narrowd hook takes one agent name")

// AgentName is the agent a hook is for: the --agent flag's value and the
// positional names must agree on one; neither means "auto".
func AgentName(flagValue string, pos []string) (string, error) {
	switch {
	case len(pos) == 1 && flagValue == "":
		return pos[0], nil
	case len(pos) > 1 || len(pos) == 1 && flagValue != pos[0]:
		return "", ErrAgentNames
	case flagValue == "":
		return "auto", nil
	}
	return flagValue, nil
}

// cut is strings.Cut for one byte; package strings is initialised late.
func cut(s string, sep byte) (before, after string, found bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == sep {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// Answer is the early shim. done reports that it wrote the daemon's reply
// and the process should exit with code. Otherwise it has called hand
// with whatever of stdin it consumed (nil if nothing) and why it gives
// up ("" when it did not ask the daemon, or the daemon's answer is for
// main to decode); if hand fails it blocks the call itself and is done.
func Answer(argv []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string,
	hand func(payload []byte, why string) error) (code int, done bool) {
	a, ok := ParseArgs(argv)
	if !ok || a.Offline {
		// Nothing read yet: main reports the arguments, or judges.
		return 0, false
	}
	payload, err := io.ReadAll(io.LimitReader(stdin, hookclient.MaxPayload+1))
	if err != nil || len(payload) > hookclient.MaxPayload {
		return giveUp(stdout, stderr, hand, payload, "")
	}
	sock, ok := socketPath(a, getenv)
	if !ok {
		return giveUp(stdout, stderr, hand, payload, "")
	}
	timeout := a.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	r, err := hookclient.Ask(sock, time.Now().Add(timeout), hookclient.Request{
		Agent: a.Agent, Event: a.Event, Interactive: a.Interactive, Payload: payload})
	var unusable *hookclient.UnusableError
	switch {
	case err == nil && r.JSON != nil:
		// An older daemon's envelope: main decodes it.
		return giveUp(stdout, stderr, hand, payload, "")
	case err == nil:
		stdout.Write(r.Stdout)
		stderr.Write(r.Stderr)
		return r.ExitCode, true
	case errors.As(err, &unusable):
		return giveUp(stdout, stderr, hand, payload, "unusable: "+err.Error())
	default:
		return giveUp(stdout, stderr, hand, payload, "unreachable: "+err.Error())
	}
}

// Standalone is the whole of the small narrowd-hook binary: argv are the
// arguments of `narrowd hook`. It answers as [Answer] does, and hands
// everything else to the full `narrowd hook` by next, which replaces the
// process (see [ExecNarrowd]) and so returns only an error. If it fails,
// the call is blocked.
func Standalone(argv []string, next func() error) int {
	code, done := Answer(argv, os.Stdin, os.Stdout, os.Stderr, os.Getenv, func(payload []byte, why string) error {
		if err := handOff(payload, why); err != nil {
			return err
		}
		return next()
	})
	if !done {
		// Answer read nothing: the arguments are for main to report.
		code, _ = giveUp(os.Stdout, os.Stderr, func([]byte, string) error { return next() }, nil, "")
	}
	return code
}

// ExecNarrowd replaces the process with `narrowd SUBCOMMAND` and argv,
// run from the narrowd beside this executable: the directory it was
// started from, else the one its file is in once links are resolved. It
// returns only when neither can be run.
func ExecNarrowd(subcommand string, argv []string) error {
	var dirs []string
	if d, _ := path.Split(os.Args[0]); d != "" {
		dirs = append(dirs, d)
	}
	if exe, err := os.Executable(); err == nil {
		if d, _ := path.Split(exe); len(dirs) == 0 || path.Clean(d) != path.Clean(dirs[0]) {
			dirs = append(dirs, d)
		}
	}
	args := append([]string{"narrowd", subcommand}, argv...)
	err := errors.New("cannot find this executable")
	for _, d := range dirs {
		bin := path.Join(d, "narrowd")
		args[0] = bin
		err = os.NewSyscallError("exec "+bin, syscall.Exec(bin, args, os.Environ()))
	}
	return err
}

// giveUp hands the call to main; if it cannot, it blocks the call in every
// agent: exit 2 with a reason blocks each one's command hook, and the
// block decision those that read stdout first.
func giveUp(stdout, stderr io.Writer, hand func([]byte, string) error, payload []byte, why string) (int, bool) {
	err := hand(payload, why)
	if err == nil {
		return 0, false
	}
	reason := "narrowd: could not check this call: " + err.Error()
	io.WriteString(stdout, `{"decision":"block","reason":`+strconv.Quote(reason)+"}\n")
	io.WriteString(stderr, reason+"\n")
	return 2, true
}

// handOff makes payload the process's standard input again, in a memory
// file on descriptor 0, and records why in [Handoff].
func handOff(payload []byte, why string) error {
	fd, err := memFile(payload)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	if err := syscall.Dup3(fd, 0, 0); err != nil {
		return os.NewSyscallError("dup3", err)
	}
	if why != "" {
		return os.Setenv(Handoff, why)
	}
	return nil
}

// memFile returns a descriptor of an anonymous file holding b, positioned
// at its start: a memory file, or where the kernel has none an unlinked
// temporary file.
func memFile(b []byte) (int, error) {
	f, err := memOrTemp()
	if err != nil {
		return -1, err
	}
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		return -1, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return -1, err
	}
	fd, err := syscall.Dup(int(f.Fd()))
	if err != nil {
		return -1, os.NewSyscallError("dup", err)
	}
	return fd, nil
}

func memOrTemp() (*os.File, error) {
	const name = "narrowd-hook-payload"
	p, err := syscall.BytePtrFromString(name)
	if err != nil {
		return nil, err
	}
	// MFD_CLOEXEC; golang.org/x/sys/unix, which names it, is initialised
	// late.
	const mfdCloexec = 1
	if nr := sysMemfdCreate; nr > 0 {
		fd, _, errno := syscall.Syscall(uintptr(nr), uintptr(unsafe.Pointer(p)), mfdCloexec, 0)
		if errno == 0 {
			return os.NewFile(fd, name), nil
		}
	}
	f, err := os.CreateTemp("", name)
	if err != nil {
		return nil, err
	}
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// socketPath finds the socket as `narrowd hook` does: the flag, else the
// config file's, else the default. The config file is TOML, and a TOML
// decoder is initialised late: [ConfigSocket] reads the one key in its
// plain form, and leaves ok false for anything else that may name it.
func socketPath(a Args, getenv func(string) string) (string, bool) {
	return SocketPath(a.Socket, a.Config, getenv, nil)
}

// SocketPath finds the daemon's socket as the early answers do: flag when
// set, else the socket the config file (configFile, or the default one)
// names in its plain form ([ConfigSocket]), else [DefaultSocket]. ok is
// false when main must decide: the file may name the socket in another
// form, cannot be read (or, named explicitly, does not exist), or accept,
// when set, refuses its contents.
func SocketPath(flag, configFile string, getenv func(string) string, accept func([]byte) bool) (string, bool) {
	if flag != "" {
		return flag, true
	}
	file, explicit := configFile, configFile != ""
	if !explicit {
		file = DefaultConfigPath(getenv)
	}
	if file != "" {
		b, err := os.ReadFile(file)
		switch {
		case err == nil:
			sock, found, ok := ConfigSocket(b, getenv("HOME"))
			if !ok || accept != nil && !accept(b) {
				return "", false
			}
			if found && sock != "" {
				return sock, true
			}
		case errors.Is(err, os.ErrNotExist) && !explicit:
		default:
			return "", false
		}
	}
	return DefaultSocket(getenv), true
}

// ConfigSocket reads the socket key of a narrowd config file in its plain
// form: one line `socket = "PATH"` or `socket = 'PATH'` (a comment may
// follow; the key in any case, as the decoder matches it) before any line
// that starts with "[". ok is false when the file may set the key in any
// other way, or may not be one a TOML decoder reads as this one does: the
// word "socket" in any case anywhere else, a backslash
// (an escape can spell it), a multi-line string, a byte-order mark or
// invalid UTF-8. found reports the key; a leading "~/" becomes home, as
// narrowd's config does. A file that is not valid TOML for other reasons
// is not detected: its plain socket line still names the daemon asked.
func ConfigSocket(b []byte, home string) (sock string, found, ok bool) {
	if !utf8.Valid(b) || bytes.IndexByte(b, '\\') >= 0 || bytes.HasPrefix(b, []byte("\uFEFF")) ||
		bytes.Contains(b, []byte(`"""`)) || bytes.Contains(b, []byte("'''")) {
		return "", false, false
	}
	// The TOML decoder matches keys to fields as strings.EqualFold does,
	// under which U+017F and U+212A are "s" and "k".
	if bytes.Contains(b, []byte("\u017F")) || bytes.Contains(b, []byte("\u212A")) {
		return "", false, false
	}
	if !hasSocket(b) {
		return "", false, true
	}
	header := false
	for len(b) > 0 {
		var line []byte
		line, b, _ = bytes.Cut(b, []byte("\n"))
		line = bytes.TrimLeft(line, " \t")
		switch {
		case len(line) > 0 && line[0] == '#':
			continue
		case len(line) > 0 && line[0] == '[':
			header = true
		}
		if !hasSocket(line) {
			continue
		}
		v, isKey := plainSocket(line)
		if !isKey || header || found {
			return "", false, false
		}
		sock, found = v, true
	}
	if home != "" && (sock == "~" || len(sock) > 1 && sock[:2] == "~/") {
		sock = path.Join(home, sock[1:])
	}
	return sock, found, true
}

// hasSocket reports "socket" in b in any ASCII case.
func hasSocket(b []byte) bool {
	for i := 0; i+len("socket") <= len(b); i++ {
		if bytes.EqualFold(b[i:i+len("socket")], []byte("socket")) {
			return true
		}
	}
	return false
}

// plainSocket parses `socket = "V"` or `socket = 'V'`, then blanks and an
// optional comment, with no control character but a tab in V.
func plainSocket(line []byte) (string, bool) {
	if len(line) < len("socket") || !bytes.EqualFold(line[:len("socket")], []byte("socket")) {
		return "", false
	}
	rest := bytes.TrimLeft(line[len("socket"):], " \t")
	var ok bool
	if rest, ok = bytes.CutPrefix(rest, []byte("=")); !ok {
		return "", false
	}
	rest = bytes.TrimLeft(rest, " \t")
	if len(rest) == 0 || rest[0] != '"' && rest[0] != '\'' {
		return "", false
	}
	end := bytes.IndexByte(rest[1:], rest[0])
	if end < 0 {
		return "", false
	}
	v := rest[1 : 1+end]
	for _, c := range v {
		if c < 0x20 && c != '\t' || c == 0x7f {
			return "", false
		}
	}
	rest = bytes.Trim(rest[2+end:], " \t\r")
	if len(rest) > 0 && rest[0] != '#' {
		return "", false
	}
	return string(v), true
}

// DefaultConfigPath is $XDG_CONFIG_HOME/narrowd/config.toml, or under
// ~/.config; "" without either variable.
func DefaultConfigPath(getenv func(string) string) string {
	if d := getenv("XDG_CONFIG_HOME"); d != "" {
		return path.Join(d, "narrowd", "config.toml")
	}
	if h := getenv("HOME"); h != "" {
		return path.Join(h, ".config", "narrowd", "config.toml")
	}
	return ""
}

// DefaultSocket is $XDG_RUNTIME_DIR/narrowd/narrowd.sock, or
// /tmp/narrowd-UID/narrowd.sock without a runtime dir (the daemon makes
// that directory 0700 and refuses one another user owns).
func DefaultSocket(getenv func(string) string) string {
	if d := getenv("XDG_RUNTIME_DIR"); d != "" {
		return path.Join(d, "narrowd", "narrowd.sock")
	}
	return path.Join(os.TempDir(), "narrowd-"+strconv.Itoa(os.Getuid()), "narrowd.sock")
}
