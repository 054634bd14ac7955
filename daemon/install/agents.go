package install

import (
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"strings"
)

// Agent names a coding agent whose hook settings install can edit.
type Agent string

// The supported agents.
const (
	Claude  Agent = "claude"
	Codex   Agent = "codex"
	Gemini  Agent = "gemini"
	Copilot Agent = "copilot"
	Cursor  Agent = "cursor"
)

// Agents returns the supported agents in a stable order.
func Agents() []Agent { return []Agent{Claude, Codex, Gemini, Copilot, Cursor} }

// HookTimeoutSeconds is the timeout written into every hook entry. The
// shim answers in milliseconds; the margin covers a cold start and a
// daemon restart. Gemini's entry carries it in milliseconds.
const HookTimeoutSeconds = 30

// layout is how a settings file nests hook handlers under an event.
type layout int

const (
	// grouped: hooks.<Event> is a list of {"matcher", "hooks": [handler…]}
	// groups (Claude Code, Codex, Gemini CLI).
	grouped layout = iota
	// flat: {"version": 1, "hooks": {"<event>": [handler…]}} (Copilot CLI,
	// Cursor).
	flat
)

// event is one hook event narrowd installs into, with its group matcher
// ("" for the flat layout).
type event struct{ name, matcher string }

// spec is what install knows about one agent's settings.
type spec struct {
	userDir     string // the agent's user config dir, relative to the home dir
	userFile    string // the settings file, relative to userDir
	projectFile string // the settings file, relative to a project dir
	layout      layout
	events      []event
	// ownFile: the settings file exists only for narrowd, so uninstall
	// removes it once narrowd's entries are gone.
	ownFile bool
}

func specFor(a Agent) (spec, error) {
	all := func(names ...string) []event {
		evs := make([]event, len(names))
		for i, n := range names {
			evs[i] = event{n, "*"}
		}
		return evs
	}
	none := func(names ...string) []event {
		evs := make([]event, len(names))
		for i, n := range names {
			evs[i] = event{name: n}
		}
		return evs
	}
	switch a {
	case Claude:
		return spec{".claude", "settings.json", ".claude/settings.json", grouped,
			all("PreToolUse", "PermissionRequest", "PostToolUse"), false}, nil
	case Codex:
		return spec{".codex", "hooks.json", ".codex/hooks.json", grouped,
			all("PreToolUse", "PermissionRequest", "PostToolUse"), false}, nil
	case Gemini:
		return spec{".gemini", "settings.json", ".gemini/settings.json", grouped,
			all("BeforeTool", "AfterTool"), false}, nil
	case Copilot:
		return spec{".copilot", "hooks/narrowd.json", ".github/hooks/narrowd.json", flat,
			none("preToolUse", "permissionRequest", "postToolUse"), true}, nil
	case Cursor:
		return spec{".cursor", "hooks.json", ".cursor/hooks.json", flat,
			none("preToolUse", "beforeShellExecution", "beforeMCPExecution", "beforeReadFile", "postToolUse"), false}, nil
	}
	return spec{}, fmt.Errorf("unknown agent %q (want one of %s)", a, agentList())
}

func agentList() string {
	names := make([]string, 0, len(Agents()))
	for _, a := range Agents() {
		names = append(names, string(a))
	}
	return strings.Join(names, ", ")
}

// handler renders narrowd's hook handler for cfg.Agent under event.
func handler(cfg Config, event string) *object {
	cmd := hookCommandFor(cfg.Binary, cfg.Agent, event)
	h := &object{}
	switch cfg.Agent {
	case Claude:
		if cfg.HTTPAddr != "" {
			h.set("type", rawString("http"))
			h.set("url", rawString(hookURL(cfg.HTTPAddr)))
		} else {
			h.set("type", rawString("command"))
			h.set("command", rawString(cmd))
		}
		h.set("timeout", rawInt(HookTimeoutSeconds))
		// Claude Code fails open on a hook that times out, crashes or
		// cannot connect unless the handler says "block".
		h.set("onFailure", rawString("block"))
	case Codex:
		h.set("type", rawString("command"))
		h.set("command", rawString(cmd))
		h.set("timeout", rawInt(HookTimeoutSeconds))
	case Gemini:
		h.set("type", rawString("command"))
		h.set("command", rawString(cmd))
		h.set("timeout", rawInt(HookTimeoutSeconds*1000)) // milliseconds
	case Copilot:
		h.set("type", rawString("command"))
		h.set("bash", rawString(cmd))
		h.set("timeoutSec", rawInt(HookTimeoutSeconds))
	case Cursor:
		h.set("command", rawString(cmd))
		// Cursor fails open on a crash, a timeout or invalid JSON
		// unless the hook is failClosed.
		h.set("failClosed", rawBool(true))
		h.set("timeout", rawInt(HookTimeoutSeconds))
	}
	return h
}

// handlerKeys are the keys that select or configure a handler's transport.
// When narrowd's entry changes form (command ↔ http) the ones the new form
// does not use are dropped; every other key a user added is kept.
func handlerKeys() []string {
	return []string{"command", "url", "bash", "headers", "allowedEnvVars", "args", "shell"}
}

// ours reports whether a handler is narrowd's: its command runs
// "narrowd … hook", it runs exactly the command install would write (with
// or without --event), or
// its URL is the daemon's Claude hook endpoint.
func ours(h *object, wantCmd string) bool {
	for _, k := range []string{"command", "bash"} {
		if c, ok := h.str(k); ok {
			c = strings.TrimSpace(c)
			exact := c != "" && (c == wantCmd || strings.HasPrefix(c, wantCmd+" --event "))
			runsHook := strings.Contains(c, " hook ") || strings.HasSuffix(c, " hook")
			if exact || strings.Contains(c, "narrowd") && runsHook || strings.Contains(c, HookBinaryName) {
				return true
			}
		}
	}
	if u, ok := h.str("url"); ok && strings.Contains(u, "/hook/claude") {
		return true
	}
	return false
}

// HookBinaryName is the small binary that is `narrowd hook` on its own
// (cmd/narrowd-hook). It starts in a fraction of narrowd's time, and hands
// whatever the daemon does not answer to the narrowd beside it.
const HookBinaryName = "narrowd-hook"

// HookCommand is the shell command an agent runs to reach narrowd: the
// binary, quoted for a POSIX shell when it needs to be, then "hook" and the
// agent's name; narrowd-hook takes the agent's name alone.
func HookCommand(binary string, a Agent) string {
	if filepath.Base(binary) == HookBinaryName {
		return shellQuote(binary) + " " + string(a)
	}
	return shellQuote(binary) + " hook " + string(a)
}

// hookCommandFor is the command for one event. Copilot's camelCase
// payloads do not name their event, and a permissionRequest payload looks
// like a preToolUse one, so Copilot's commands say which event they serve.
func hookCommandFor(binary string, a Agent, event string) string {
	cmd := HookCommand(binary, a)
	if a == Copilot && event != "" {
		cmd += " --event " + event
	}
	return cmd
}

func shellQuote(s string) string {
	safe := s != ""
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_./:@%+=,-", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func hookURL(addr string) string { return "http://" + addr + "/hook/claude" }

// checkHTTPAddr accepts host:port on loopback only: a hook payload carries
// file contents and commands, and the daemon's HTTP listener is loopback.
func checkHTTPAddr(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("invalid --http address %q: %w", addr, err)
	}
	if p, err := netip.ParseAddrPort(net.JoinHostPort("127.0.0.1", port)); err != nil || p.Port() == 0 {
		return "", fmt.Errorf("invalid --http address %q: want a port number 1-65535", addr)
	}
	if host != "localhost" {
		ip, err := netip.ParseAddr(host)
		if err != nil || !ip.IsLoopback() {
			return "", fmt.Errorf("invalid --http address %q: the daemon listens on loopback only (127.0.0.1, [::1] or localhost)", addr)
		}
	}
	return net.JoinHostPort(host, port), nil
}

// checkBinary accepts an absolute, clean path without control characters,
// which a shell, an agent's settings and a systemd unit can all carry.
func checkBinary(p string) error {
	if p == "" {
		return fmt.Errorf("no narrowd binary path given")
	}
	if !filepath.IsAbs(p) {
		return fmt.Errorf("binary path %q is not absolute", p)
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("binary path %q contains a control character", p)
		}
	}
	return nil
}
