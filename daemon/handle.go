package daemon

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"time"

	"github.com/narrowd/narrowd/daemon/agent"
	"github.com/narrowd/narrowd/rules"
)

// hasPermissionHook lists the agents with a hook that fires only when the
// agent is about to ask a person (Claude and Codex PermissionRequest,
// Copilot permissionRequest). For them narrowd abstains at pre-tool time
// for calls it would allow, and allows at the permission request: the one
// place a prompt is really avoided.
var hasPermissionHook = map[string]bool{agent.Claude: true, agent.Codex: true, agent.Copilot: true}

// Handle answers one hook payload from the named agent ("auto" detects
// it) and returns the agent's reply and, for a decision, its audit id. It
// never fails open: a payload that does not decode, an engine that
// panics, or an audit record that cannot be written durably all give a
// blocking reply ([agent.Fail]). A decision's audit record is written
// before Handle returns (and fsynced then or soon after; see
// Config.AuditSyncWithin).
func (s *Server) Handle(name string, payload []byte, via string, opt agent.Options) (reply agent.Reply, id string) {
	return s.HandleEvent(name, "", payload, via, opt)
}

// HandleEvent is [Server.Handle] for a hook whose configured event is
// known (narrowd hook --event), as [agent.DecodeEvent] reads it; "" is
// the same as Handle.
func (s *Server) HandleEvent(name, event string, payload []byte, via string, opt agent.Options) (reply agent.Reply, id string) {
	return s.handle(name, event, payload, via, opt, time.Time{})
}

// handle is [Server.HandleEvent] for a client that stops waiting at
// deadline (the zero time: never). A call that reaches the daemon after
// it, as calls queued while the daemon was stopped do, is not judged:
// the shim has answered it in-process, so it is recorded as abandoned.
// A call whose judgement ends after it is recorded as abandoned too, with
// its verdict: the answer reached nobody.
func (s *Server) handle(name, event string, payload []byte, via string, opt agent.Options, deadline time.Time) (reply agent.Reply, id string) {
	start := time.Now()
	var call rules.Call
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("panic answering a hook call; blocking it", "agent", name, "panic", p)
			s.metrics.decisions.WithLabelValues(agentLabel(name), s.metrics.toolLabel(name, call.Tool), "error").Inc()
			reply, id = agent.Fail(name, call, "narrowd hit an internal error"), ""
		}
	}()

	name, call, err := decodeCall(name, event, payload)
	if err != nil {
		return s.failDecode(name, via, err, start)
	}

	if call.Phase == rules.PostTool {
		if s.tickets.postTool(call) {
			s.log.Warn("a sandboxed call ran without redeeming its ticket; no more rewrites in this session", "agent", call.Agent)
		}
		s.recordRan(call)
		return agent.Abstain(name, call), ""
	}
	if gone(deadline) {
		return s.unjudged(name, call, via, start, "abandoned", "the client stopped waiting before narrowd judged the call; the shim answered it in-process"), ""
	}
	release, ok := s.admit.admit(len(payload), deadline)
	if !ok {
		s.metrics.shed.Inc()
		return s.unjudged(name, call, via, start, "error", "narrowd is overloaded and did not judge this call in time; retry it"), ""
	}
	// The slot bounds judging, which costs CPU; the audit append after
	// it waits for the disk and is shared by every call of a batch.
	released := false
	defer func() {
		if !released {
			release()
		}
	}()

	// Counted until its record is appended: the audit's writer waits
	// for it, under load, to share one write.
	s.audit.coming.Add(1)
	defer s.audit.coming.Add(-1)
	sess := s.sessions.Get(call.Agent, call.Session)
	// The id exists before the verdict: a snapshot taken while judging
	// is kept under it, so `narrowd undo ID` finds it from the audit.
	id = newID()
	t0 := time.Now()
	eng := s.engine.Load()
	var v rules.Verdict
	if s.tickets.redeems(eng, call) {
		v = redeemVerdict(call)
	} else {
		v = eng.JudgeAs(id, call, sess)
		if s.tickets != nil {
			v = eng.sandboxed(call, sess, v)
		}
	}
	s.metrics.duration.Observe(time.Since(t0).Seconds())
	release()
	released = true
	if v.Decision.Outcome == rules.Sandbox {
		// The sandbox outcome is carried out by narrowd exec with a
		// ticket; without one it is asked about.
		t, err := s.tickets.issue(eng, call)
		if err != nil {
			v.Decision.Outcome = rules.Ask
			v.Decision.Reason += " (narrowd's sandbox cannot take this call: " + err.Error() + "; a person must approve)"
		} else {
			s.tickets.setCallID(t, id)
			opt.Rewrite = t.rewrite
		}
	}

	answer, reply, avoided, estimate := s.answer(call, v, opt)
	if gone(deadline) {
		// Judged, but the client had stopped waiting: nobody received
		// this answer.
		answer, avoided, estimate = "abandoned", false, false
	}
	rec := newRecord(id, call, v, sess, via, answer, s.cfg.now())
	rec.PromptAvoided, rec.PromptAvoidedEstimate = avoided, estimate
	rec.DurationUS = time.Since(start).Microseconds()
	if err := s.audit.Append(rec); err != nil {
		s.metrics.auditErrors.Inc()
		s.metrics.decisions.WithLabelValues(agentLabel(name), s.metrics.toolLabel(name, call.Tool), "error").Inc()
		s.log.Error("audit write failed; blocking the call", "agent", name, "tool", call.Tool, "err", err)
		return agent.Fail(name, call, "narrowd could not record this decision"), ""
	}
	s.count(call, v, answer, avoided, estimate)
	return reply, rec.ID
}

// decodeCall decodes payload as the named agent sends it ("auto": as the
// agent its shape names), for the configured event ("" when unknown). It
// returns the agent the reply must be encoded for. Copilot and Cursor also
// run the hooks in .claude/settings.json, so a hook configured for one
// agent can get another's payload: that payload is decoded as the agent
// that sent it, so that the reply is in the dialect the real caller reads.
// When the sender cannot be told, the error stands and the call fails.
func decodeCall(name, event string, payload []byte) (string, rules.Call, error) {
	if name == "auto" {
		detected, err := agent.Detect(payload)
		if err != nil {
			return name, rules.Call{}, err
		}
		name = detected
	}
	call, err := agent.DecodeEventBytes(name, event, payload)
	if errors.Is(err, agent.ErrAgentMismatch) {
		real, derr := agent.Detect(payload)
		if derr != nil || real == name {
			return name, rules.Call{}, err
		}
		call, err = agent.DecodeEventBytes(real, event, payload)
		if err != nil {
			return real, rules.Call{}, err
		}
		return real, call, nil
	}
	return name, call, err
}

// answer applies the abstain-then-permission protocol to a verdict and
// encodes the reply.
func (s *Server) answer(call rules.Call, v rules.Verdict, opt agent.Options) (answer string, reply agent.Reply, avoided, estimate bool) {
	return Answer(call, v, opt, s.cfg.AllowAtPreTool)
}

// Answer turns a verdict into the agent's reply under the
// abstain-then-permission protocol, and says what was answered (an
// outcome name, or "abstain") and whether the call was a prompt avoided
// or an estimated one.
//
// At a permission request the agent is about to ask a person: allow there
// is a real prompt avoided; any other outcome is encoded as the agent
// needs. At pre-tool time, for agents with a permission-request hook and
// unless allowAtPreTool, a call narrowd would allow gets no opinion: the
// agent's own flow runs it or, if it would prompt, comes back with a
// permission request. Everywhere else the verdict is encoded as it is, and
// an allow of a call whose ceiling would not have been allowed is an
// estimated prompt avoided.
func Answer(call rules.Call, v rules.Verdict, opt agent.Options, allowAtPreTool bool) (answer string, reply agent.Reply, avoided, estimate bool) {
	o := v.Decision.Outcome
	switch {
	case call.Phase == rules.PermissionAsk:
		return o.String(), agent.Encode(call.Agent, call, v.Decision, opt), o == rules.Allow, false
	case o == rules.Allow && hasPermissionHook[call.Agent] && !allowAtPreTool:
		return "abstain", agent.Abstain(call.Agent, call), false, false
	}
	reply = agent.Encode(call.Agent, call, v.Decision, opt)
	return o.String(), reply, false, o == rules.Allow && v.CeilingOutcome != rules.Allow
}

// count updates the metrics for an answered, recorded decision.
func (s *Server) count(call rules.Call, v rules.Verdict, answer string, avoided, estimate bool) {
	a, t := agentLabel(call.Agent), s.metrics.toolLabel(call.Agent, call.Tool)
	m := s.metrics
	m.decisions.WithLabelValues(a, t, answer).Inc()
	if avoided {
		m.promptsAvoided.WithLabelValues(a, t).Inc()
	}
	if estimate {
		m.avoidedEstimate.WithLabelValues(a, t).Inc()
	}
	if v.Ceiling == nil {
		m.unlabelled.WithLabelValues(a).Inc()
	}
	for _, e := range v.Evidence {
		m.evidenceCounter(string(e.Kind), e.Strength).Inc()
	}
}

// recordRan adds a call that ran to its session's history. If that fails
// the session is forgotten in memory, so it reads as unknown rather than
// as cleaner than it was.
func (s *Server) recordRan(call rules.Call) {
	if call.Session == "" {
		return
	}
	v := s.engine.Load().Judge(call, s.sessions.Get(call.Agent, call.Session))
	key := v.Key
	if key == "" {
		key = call.Agent + "/" + call.Tool
	}
	if err := s.sessions.Record(call.Agent, call.Session, key, CalledLabels(v)); err != nil {
		s.log.Error("session history write failed; the session is now unknown", "agent", call.Agent, "err", err)
		s.sessions.forget(call.Agent, call.Session)
	}
}

// gone reports that a client's deadline has passed.
func gone(deadline time.Time) bool { return !deadline.IsZero() && time.Now().After(deadline) }

// unjudged records a call narrowd did not judge, and answers it with a
// block: one that reached the daemon after its client had stopped
// waiting (answer "abandoned": nobody reads the block), or one shed
// under overload (answer "error").
func (s *Server) unjudged(name string, call rules.Call, via string, start time.Time, answer, reason string) agent.Reply {
	rule := "abandoned"
	if answer != "abandoned" {
		rule = "error-overload"
	}
	rec := unjudgedRecord(call, via, rule, reason, answer, reason, s.cfg.now(), start)
	s.metrics.decisions.WithLabelValues(agentLabel(name), s.metrics.toolLabel(name, call.Tool), answer).Inc()
	if err := s.audit.Append(rec); err != nil {
		s.metrics.auditErrors.Inc()
		s.log.Error("audit write failed", "err", err)
	}
	return agent.Fail(name, call, reason)
}

// failDecode answers a payload that did not decode: a blocking reply,
// recorded (best effort) and counted.
func (s *Server) failDecode(name, via string, err error, start time.Time) (agent.Reply, string) {
	reason := "narrowd could not read the hook payload"
	switch {
	case errors.Is(err, agent.ErrTooLarge):
		reason = "the hook payload is larger than narrowd accepts"
	case errors.Is(err, agent.ErrUnknownAgent):
		reason = "the hook names an agent narrowd does not know"
	case errors.Is(err, agent.ErrUnsupportedEvent):
		reason = "narrowd does not judge this hook event; remove it from the hook configuration"
	case errors.Is(err, agent.ErrAgentMismatch):
		reason = "the payload comes from a different agent than the hook is configured for"
	}
	rec := unjudgedRecord(rules.Call{Agent: name}, via, "error-decode", reason, "error", err.Error(), s.cfg.now(), start)
	s.log.Warn("hook payload refused", "agent", name, "via", via, "err", err)
	s.metrics.decisions.WithLabelValues(agentLabel(name), "other", "error").Inc()
	if aerr := s.audit.Append(rec); aerr != nil {
		s.metrics.auditErrors.Inc()
		s.log.Error("audit write failed", "err", aerr)
		rec.ID = ""
	}
	return agent.Fail(name, rules.Call{}, reason), rec.ID
}

// unjudgedRecord is the audit record of a call narrowd answered with a
// block without judging it: its labels are unknown and its decision is
// deny by rule.
func unjudgedRecord(call rules.Call, via, rule, reason, answer, errText string, now, start time.Time) *Record {
	return &Record{
		ID:              newID(),
		ToolName:        call.Tool,
		RiskClass:       "unknown",
		SideEffectClass: "unknown",
		ResourceScope:   "unknown",
		Decision:        "deny",
		PolicyRule:      rule,
		Reason:          reason,
		Timestamp:       now.UTC().Format(time.RFC3339Nano),
		Agent:           call.Agent,
		Event:           call.Event,
		Phase:           string(call.Phase),
		Session:         call.Session,
		Cwd:             call.Cwd,
		ToolUseID:       call.ID,
		Summary:         summarize(call.Input),
		Via:             via,
		Answer:          answer,
		Error:           errText,
		DurationUS:      time.Since(start).Microseconds(),
	}
}

// newRecord builds the audit record of one decision.
func newRecord(id string, call rules.Call, v rules.Verdict, sess rules.Session, via, answer string, now time.Time) *Record {
	risk := v.RiskClass
	if risk == "" {
		risk = "unknown"
	}
	ts := now.UTC().Format(time.RFC3339Nano)
	return &Record{
		ID:              id,
		ToolName:        call.Tool,
		RiskClass:       risk,
		SideEffectClass: sideEffectClass(v.Narrowed),
		ResourceScope:   resourceScope(v.Narrowed),
		Decision:        seed004Decision(v.Decision.Outcome),
		PolicyRule:      v.Decision.Rule,
		Reason:          v.Decision.Reason,
		Timestamp:       ts,
		Agent:           call.Agent,
		Event:           call.Event,
		Phase:           string(call.Phase),
		Session:         call.Session,
		Cwd:             call.Cwd,
		ToolUseID:       call.ID,
		Summary:         summarize(call.Input),
		Via:             via,
		Answer:          answer,
		Outcome:         v.Decision.Outcome.String(),
		CeilingOutcome:  v.CeilingOutcome.String(),
		SessionKnown:    sess.Known,
		Verdict:         &v,
	}
}

// newID returns a random call id.
func newID() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
