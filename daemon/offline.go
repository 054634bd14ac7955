package daemon

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

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
	// AuditDir is the daemon's audit log, to which a decision made
	// offline is appended (via "fallback"); empty to record nothing.
	AuditDir string
}

// Offline answers one hook payload in-process, without the daemon: the
// shim's fallback when the daemon is unreachable. It runs the same engine
// and the same answer protocol as the daemon, with the session unknown
// (unknown never relaxes). It appends its decision to the audit log, as
// the daemon would (best effort: the daemon is not there to fail the
// call safe). A post-tool event marks a gap in its session's history,
// since the daemon did not see it.
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
	id := newID()
	start := time.Now()
	v := e.JudgeAs(id, call, rules.Session{})
	answer, reply, avoided, estimate := Answer(call, v, opt, cfg.AllowAtPreTool)
	if cfg.AuditDir != "" {
		rec := newRecord(id, call, v, rules.Session{}, "fallback", answer, time.Now())
		rec.PromptAvoided, rec.PromptAvoidedEstimate = avoided, estimate
		rec.DurationUS = time.Since(start).Microseconds()
		if err := appendAuditFile(cfg.AuditDir, rec); err != nil {
			reply.Stderr = "narrowd: this decision could not be recorded: " + err.Error() + "\n" + reply.Stderr
		}
	}
	return reply
}

// appendAuditFile appends one record to the live audit file in dir with a
// single O_APPEND write and fsyncs it: the shim's fallback, when the
// daemon that owns the log is down (or stopped: a single append of a
// whole line does not interleave with the daemon's own).
func appendAuditFile(dir string, r *Record) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("failed to create the audit directory: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, auditName), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("failed to open the audit log: %w", err)
	}
	_, err = f.Write(append(appendRecord(nil, r), '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
