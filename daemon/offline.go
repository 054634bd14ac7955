package daemon

import (
	"errors"

	"github.com/narrowd/narrowd/daemon/agent"
	"github.com/narrowd/narrowd/rules"
)

// OfflineConfig configures [Offline].
type OfflineConfig struct {
	Engine         EngineConfig
	AllowAtPreTool bool
	// StateDir is where a post-tool event judged offline marks a gap in
	// its session's history; empty to mark nothing.
	StateDir string
}

// Offline answers one hook payload in-process, without the daemon: the
// shim's fallback when the daemon is unreachable. It runs the same engine
// and the same answer protocol as the daemon, with the session unknown
// (unknown never relaxes). It writes no audit record. A post-tool event
// marks a gap in its session's history, since the daemon did not see it.
// Any failure (the payload does not decode, the engine cannot be built,
// a panic) gives a blocking reply.
func Offline(cfg OfflineConfig, name string, payload []byte, opt agent.Options) agent.Reply {
	return OfflineEvent(cfg, name, "", payload, opt)
}

// OfflineEvent is [Offline] for a hook whose configured event is known
// (narrowd hook --event); "" is the same as Offline.
func OfflineEvent(cfg OfflineConfig, name, event string, payload []byte, opt agent.Options) (reply agent.Reply) {
	var call rules.Call
	defer func() {
		if p := recover(); p != nil {
			reply = agent.Fail(name, call, "narrowd hit an internal error")
		}
	}()
	name, call, err := decodeCall(name, event, payload)
	if err != nil {
		if errors.Is(err, agent.ErrUnknownAgent) && name == "auto" {
			return agent.Fail(name, rules.Call{}, "narrowd could not tell which agent sent the hook payload")
		}
		return agent.Fail(name, rules.Call{}, "narrowd could not read the hook payload")
	}
	if call.Phase == rules.PostTool {
		// Best effort: if the gap cannot be written the daemon may later
		// read this session as complete; nothing more can be done here.
		_ = AppendGap(cfg.StateDir, call.Agent, call.Session)
		return agent.Abstain(name, call)
	}
	e, err := NewEngine(cfg.Engine.withOwn(cfg.StateDir))
	if err != nil {
		return agent.Fail(name, call, "narrowd's profile could not be loaded")
	}
	v := e.Judge(call, rules.Session{})
	_, reply, _, _ = Answer(call, v, opt, cfg.AllowAtPreTool)
	return reply
}
