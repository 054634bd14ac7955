package daemon

import "github.com/narrowd/narrowd/rules"

// EngineConfig configures the decision pipeline.
type EngineConfig struct {
	// Profile is a built-in profile name or a file path; empty means
	// "standard".
	Profile string
	// Workspaces are extra workspace roots beside each call's project dir.
	Workspaces []string
}

// Engine is the one decision pipeline that serve, the hook shim's
// in-process fallback and check all call: catalog → evidence → narrowing
// → profile.
type Engine struct {
	cfg EngineConfig
}

// NewEngine builds the pipeline from its configuration.
func NewEngine(cfg EngineConfig) (*Engine, error) {
	return &Engine{cfg: cfg}, nil
}

// Judge returns the verdict for one call. It never fails: any internal
// problem becomes an ask or deny verdict with a fixed reason.
func (e *Engine) Judge(call rules.Call, sess rules.Session) rules.Verdict {
	// TODO(lead): the real pipeline replaces this placeholder.
	return rules.Verdict{
		Agent:          call.Agent,
		Tool:           call.Tool,
		Decision:       rules.Decision{Outcome: rules.Ask, Rule: "engine-placeholder", Reason: "narrowd engine not built yet"},
		CeilingOutcome: rules.Ask,
	}
}
