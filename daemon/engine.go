package daemon

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/narrowd/narrowd/daemon/install"
	"github.com/narrowd/narrowd/parse"
	"github.com/narrowd/narrowd/proofs"
	"github.com/narrowd/narrowd/rules"
	"github.com/narrowd/narrowd/sandbox/snapshot"
)

// EngineConfig configures the decision pipeline. The zero value is the
// embedded catalog and the standard profile.
type EngineConfig struct {
	// Profile is a built-in profile name or a file path; empty means
	// "standard".
	Profile string
	// Workspaces are extra workspace roots beside each call's project dir.
	Workspaces []string
	// LabelFiles are extra label files (TOML, the catalog's format) that
	// label tools by key and def_hash.
	LabelFiles []string
	// MCP resolves MCP tool names to keys and their current def_hash
	// (discovery's registry); nil leaves every MCP tool unlabelled.
	MCP MCPTools
	// NoDisk turns off the symlink and hard link checks, which read the
	// file system at check time. Tests of pure lexical behaviour use it.
	NoDisk bool
	// Snapshots, or else a store opened in SnapshotDir, preserves the
	// files a call would change before it is judged with an id
	// ([Engine.JudgeAs]). Neither set (check, the shim's fallback): no
	// snapshot, so no write narrows on one.
	Snapshots      Snapshots
	SnapshotDir    string
	SnapshotBudget snapshot.Budget
	// Sandbox reports that the caller can carry out a sandbox outcome: a
	// serving daemon that issues tickets for narrowd exec. Without it
	// (check, the shim's in-process fallback) sandbox becomes ask.
	Sandbox bool
	// OwnFiles are more of narrowd's own files and directories (the
	// daemon's state, audit and socket directories, its config file),
	// beside those the engine knows itself (see [ownFiles]). A call that
	// would change one is denied whatever the profile says.
	OwnFiles []string
	// SandboxUndo reports that the sandbox keeps every workspace change
	// of a run for undo (an overlay the daemon verifies, ticket_undo.go).
	SandboxUndo bool
}

// analysisCacheSize is half the shell texts an engine keeps analyses of:
// a day's distinct commands in a few projects fit, at about 1-2 KB each.
const analysisCacheSize = 512

// Engine is the one decision pipeline that serve, the hook shim's
// in-process fallback and check all call: catalog → evidence → narrowing
// → profile. It is immutable but for a cache of shell parses, and safe
// for concurrent use; a reload builds a new one.
type Engine struct {
	cfg       EngineConfig
	catalog   *rules.Catalog
	profile   *rules.Profile
	knowledge *parse.Knowledge
	// analyses caches shell analyses: the same commands come again and
	// again. Only the parse is cached; the proofs look at the disk anew
	// for every call.
	analyses *parse.Cache
	disk     proofs.Disk
	// paths holds the sensitive list and disk, built once; roots are the
	// configured and profile workspaces added after each call's own.
	paths proofs.Paths
	roots []string
	// snapshots is nil when the engine takes none.
	snapshots Snapshots
}

// NewEngine builds the pipeline. A profile, label file or table that does
// not load is an error, so a reload can keep the last good engine.
func NewEngine(cfg EngineConfig) (*Engine, error) {
	e := &Engine{cfg: cfg}
	builtin, err := rules.DefaultCatalog()
	if err != nil {
		return nil, fmt.Errorf("built-in catalog: %w", err)
	}
	e.catalog = builtin
	if len(cfg.LabelFiles) > 0 {
		// Each file loads under its own path, so an error names file:line.
		cs := []*rules.Catalog{builtin}
		for _, f := range cfg.LabelFiles {
			data, err := os.ReadFile(f)
			if err != nil {
				return nil, fmt.Errorf("label file: %w", err)
			}
			c, err := rules.LoadCatalog(f, data)
			if err != nil {
				return nil, fmt.Errorf("label file: %w", err)
			}
			cs = append(cs, c)
		}
		e.catalog = rules.MergeCatalogs(cs...)
	}
	e.profile, err = LoadProfile(cfg.Profile)
	if err != nil {
		return nil, err
	}
	e.knowledge, err = parse.DefaultKnowledge()
	if err != nil {
		return nil, fmt.Errorf("command knowledge: %w", err)
	}
	e.analyses = parse.NewCache(e.knowledge, analysisCacheSize)
	if !cfg.NoDisk {
		e.disk = proofs.OSDisk{}
	}
	home, _ := os.UserHomeDir()
	e.paths = proofs.NewPaths(nil, slices.Concat(e.profile.Sensitive(), storeSensitive(cfg.SnapshotDir)), e.disk).
		WithOwn(home, ownFiles(cfg, home, os.Getenv))
	e.roots = append(slices.Clip(cfg.Workspaces), e.profile.Workspaces()...)
	if e.snapshots, err = openSnapshots(cfg); err != nil {
		return nil, err
	}
	return e, nil
}

// LoadProfile returns a built-in profile by name, or loads a profile file
// when name contains a path separator or ends in .toml.
func LoadProfile(name string) (*rules.Profile, error) {
	if name == "" {
		name = "standard"
	}
	if !strings.ContainsRune(name, filepath.Separator) && !strings.HasSuffix(name, ".toml") {
		p, err := rules.BuiltinProfile(name)
		if err != nil {
			return nil, fmt.Errorf("profile %q: %w", name, err)
		}
		return p, nil
	}
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("profile: %w", err)
	}
	return rules.LoadProfile(name, data)
}

// OwnFiles returns narrowd's own files and directories as the engine
// protects them (absolute, with symlink-resolved forms): what narrowd's
// sandbox must also keep read-only.
func (e *Engine) OwnFiles() []string { return slices.Clone(e.paths.Own) }

// Profile returns the engine's profile.
func (e *Engine) Profile() *rules.Profile { return e.profile }

// Judge returns the verdict for one call. It never fails: an internal
// problem becomes a deny with a fixed reason, and never an allow. It
// takes no snapshot; see [Engine.JudgeAs].
func (e *Engine) Judge(call rules.Call, sess rules.Session) rules.Verdict {
	return e.JudgeAs("", call, sess)
}

// JudgeAs is [Engine.Judge] for a call that will be recorded under id
// (the audit record's id). When the engine has a snapshot store and the
// call has not run yet, the workspace files a proven call would change
// are preserved under id before the profile decides, and the snapshot is
// established evidence. An empty id takes no snapshot.
func (e *Engine) JudgeAs(id string, call rules.Call, sess rules.Session) (v rules.Verdict) {
	defer func() {
		// The schema promises a list, never null.
		if v.Evidence == nil {
			v.Evidence = []rules.Evidence{}
		}
	}()
	defer func() {
		if r := recover(); r != nil {
			v = failVerdict(call, "error-internal", "narrowd hit an internal error and refused the call")
		}
	}()
	v.Agent, v.Tool = call.Agent, call.Tool
	entry, key, mcp := e.resolve(call)
	v.Key = key
	in := rules.Input{Call: &call, Key: key, Session: sess}
	if entry == nil {
		v.Evidence = []rules.Evidence{{
			Kind: rules.KindUnlabelled, Strength: rules.Proven, Subject: key,
			Detail: e.unlabelledWhy(call), Effect: rules.NoEffect,
		}}
		in.Evidence = v.Evidence
		v.Decision = e.profile.Decide(in)
		v.CeilingOutcome = v.Decision.Outcome
		v.RiskClass = rules.RiskClass(nil, call.Tool)
		v.Decision = e.finish(v.Decision)
		return v
	}
	ceiling := entry.Labels
	want := e.mayPreserve(id, call)
	ev, targets, complete := e.evidence(entry.Input, call, mcp, want)
	ev = proofs.Limit(ev)
	if want {
		ev = append(ev, e.preserve(id, targets, complete, ceiling, ev)...)
	}
	v.Evidence = ev
	narrowed := proofs.Narrow(ceiling, v.Evidence)
	v.Ceiling, v.Narrowed = &ceiling, &narrowed

	in.Ceiling, in.Narrowed, in.Evidence = &ceiling, &narrowed, v.Evidence
	in.Command = e.shellCommand(entry.Input, call, mcp)
	v.Decision = e.finish(e.profile.Decide(in))
	if d, ok := ownDeny(v.Evidence); ok {
		v.Decision = d
	}
	if v.Decision.Outcome != rules.Allow {
		// What kept the call at its ceiling comes first: the rule
		// says what the profile makes of it.
		if f := findings(v.Evidence); f != "" {
			v.Decision.Reason = f + upperFirst(v.Decision.Reason)
		}
		v.Decision.Reason += standingFinding(v.Evidence)
	}
	v.Decision.Reason += undoHint(id, v.Decision.Outcome, v.Evidence)

	atCeiling := in
	atCeiling.Narrowed, atCeiling.Evidence = &ceiling, nil
	v.CeilingOutcome = e.finish(e.profile.Decide(atCeiling)).Outcome
	v.RiskClass = rules.RiskClass(&narrowed, call.Tool)
	return v
}

// finish turns outcomes this caller cannot carry out into ones it can: a
// sandbox outcome stays sandbox only where the serving daemon issues
// tickets for narrowd exec; elsewhere (check, the shim's in-process
// fallback, a daemon without Landlock) it asks.
func (e *Engine) finish(d rules.Decision) rules.Decision {
	if d.Outcome == rules.Sandbox && !e.cfg.Sandbox {
		d.Outcome = rules.Ask
		d.Reason += " (narrowd's sandbox is not available, so a person must approve)"
	}
	return d
}

// findingWords says, for a person, what one kind of evidence found that
// kept a call from narrowing: the text holds %s for the evidence's
// subject, or its detail where the subject alone says too little.
var findingWords = map[rules.EvidenceKind]struct {
	text   string
	detail bool
}{
	rules.KindParseError:        {"narrowd could not parse the command (%s)", true},
	rules.KindOverBudget:        {"the command is too large for narrowd to analyse (%s)", true},
	rules.KindUnproven:          {"part of the command is only known when it runs (%s)", false},
	rules.KindUnknownCommand:    {"narrowd cannot tell what %s does", false},
	rules.KindPrivileged:        {"%s runs with raised privileges", false},
	rules.KindRunsCode:          {"%s runs code narrowd did not read", false},
	rules.KindPathOutside:       {"%s is outside the workspace", false},
	rules.KindSensitiveName:     {"%s looks like it holds secrets", false},
	rules.KindSensitiveWord:     {"%s names secrets", false},
	rules.KindLinkEscape:        {"a link leads out of the workspace (%s)", true},
	rules.KindGitConfigRunsCode: {"the repository's git state is not ordinary (%s)", true},
	rules.KindNetworkRedirect:   {"%s opens a network connection", false},
	rules.KindPatternEscapes:    {"the pattern %s can reach outside the workspace", false},
	rules.KindMissingArgument:   {"the call has no usable %s argument", false},
}

// findings names, in words, what kept a call from narrowing (the
// unproven word, the unknown program, the path outside, the secret
// name), at most three, as a sentence that leads the reason, so that
// the person and the agent see why and not only which rule asked.
func findings(ev []rules.Evidence) string {
	var parts []string
	for _, e := range ev {
		w, ok := findingWords[e.Kind]
		if !ok {
			continue
		}
		arg := e.Subject
		if w.detail {
			arg = e.Detail
		}
		part := fmt.Sprintf(w.text, clipRunes(arg, 160))
		if !slices.Contains(parts, part) {
			parts = append(parts, part)
		}
		if len(parts) == 3 {
			break
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "narrowd cannot prove this call safe: " + strings.Join(parts, "; ") + ". "
}

// upperFirst capitalises the first letter of a sentence.
func upperFirst(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if r == utf8.RuneError {
		return s
	}
	return string(unicode.ToUpper(r)) + s[n:]
}

// clipRunes cuts s to at most n bytes at a rune boundary, marking the cut.
func clipRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// resolve finds the catalog entry for a call and its key. MCP tools are
// keyed server/tool and are unlabelled until a label file binds them to
// a def_hash that narrowd has seen.
func (e *Engine) resolve(call rules.Call) (entry *rules.Entry, key string, mcp bool) {
	if entry, key, ok := e.resolveMCP(call); ok {
		return entry, key, true
	}
	if entry, ok := e.catalog.Lookup(call.Agent, call.Tool); ok {
		return entry, entry.Key, false
	}
	return nil, call.Agent + "/" + call.Tool, false
}

// evidence gathers what narrowd can prove about one call's arguments
// and, when targets is set, the workspace files it would change
// (complete reports that the list is whole). mcp says resolve found an
// MCP tool.
func (e *Engine) evidence(spec rules.InputSpec, call rules.Call, mcp, targets bool) (ev []rules.Evidence, ts []proofs.Target, complete bool) {
	if mcp {
		// An MCP server resolves paths itself: only what proofs.MCPTool
		// proves counts.
		return e.mcpEvidence(spec, call), nil, false
	}
	ps := e.paths.WithRoots(append(slices.Clip(call.Workspaces), e.roots...))
	cwd := call.Cwd
	if spec.Kind == rules.InputShell {
		var dir, why string
		if cwd, dir, why = shellDir(spec, call, ps); why != "" {
			return []rules.Evidence{{Kind: rules.KindPathOutside, Strength: rules.Proven, Subject: dir, Detail: why, Effect: rules.NoEffect}}, nil, false
		}
		cmd, ok := call.Input[spec.Field].(string)
		if !ok {
			return []rules.Evidence{{Kind: rules.KindMissingArgument, Strength: rules.Proven, Subject: spec.Field, Detail: "the command argument is missing or not a string", Effect: rules.NoEffect}}, nil, false
		}
		a := e.analyses.Analyze(cmd)
		if targets {
			ts, complete = proofs.WriteTargets(a, cwd, ps)
		}
		return proofs.Shell(a, cwd, ps), ts, complete
	}
	if targets {
		ts, complete = proofs.ToolTargets(spec, call.Input, cwd, ps)
	}
	return proofs.Tool(spec, call.Input, cwd, ps), ts, complete
}

// shellDir is the directory a shell call runs in: its cwd, or the tool's
// directory argument resolved against it. When that argument names no
// directory narrowd can resolve, why says so and dir is the argument.
func shellDir(spec rules.InputSpec, call rules.Call, ps proofs.Paths) (cwd, dir, why string) {
	dir, _ = call.Input[spec.Dir].(string)
	if spec.Dir == "" || dir == "" {
		return call.Cwd, "", ""
	}
	w := ps.Resolve(call.Cwd, dir)
	if w.Abs == "" {
		return "", dir, w.Why
	}
	return w.Abs, dir, ""
}

// failVerdict is the one fixed answer for internal failures: deny.
func failVerdict(call rules.Call, rule, reason string) rules.Verdict {
	return rules.Verdict{
		Agent: call.Agent, Tool: call.Tool, Key: call.Agent + "/" + call.Tool,
		Evidence:       []rules.Evidence{},
		Decision:       rules.Decision{Outcome: rules.Deny, Rule: rule, Reason: reason},
		CeilingOutcome: rules.Deny,
		RiskClass:      "unlabelled",
	}
}

// FailVerdict is the verdict for a call narrowd could not judge at all
// (a payload it could not decode, an engine it could not build): deny,
// never allow.
func FailVerdict(call rules.Call, reason string) rules.Verdict {
	return failVerdict(call, "error-input", reason)
}

// ownFiles lists narrowd's own files for the path proofs: cfg.OwnFiles,
// the profile and label files the engine loads, the snapshot store, the
// default config, state and runtime directories (XDG, else under home),
// and narrowd's binaries; each also in its symlink-resolved form.
func ownFiles(cfg EngineConfig, home string, getenv func(string) string) []string {
	list := slices.Concat(cfg.OwnFiles, cfg.LabelFiles, []string{cfg.SnapshotDir})
	if strings.ContainsRune(cfg.Profile, filepath.Separator) || strings.HasSuffix(cfg.Profile, ".toml") {
		list = append(list, cfg.Profile)
	}
	xdg := func(env, fallback string) string {
		if d := getenv(env); filepath.IsAbs(d) {
			return filepath.Join(d, "narrowd")
		}
		if fallback == "" || home == "" {
			return ""
		}
		return filepath.Join(home, fallback, "narrowd")
	}
	list = append(list, xdg("XDG_CONFIG_HOME", ".config"), xdg("XDG_STATE_HOME", filepath.Join(".local", "state")), xdg("XDG_RUNTIME_DIR", ""))
	// The user units that start the daemon (narrowd install systemd):
	// their ExecStart names its profile and flags.
	if units := xdg("XDG_CONFIG_HOME", ".config"); units != "" {
		units = filepath.Join(filepath.Dir(units), "systemd", "user")
		list = append(list, filepath.Join(units, install.ServiceUnit), filepath.Join(units, install.SocketUnit),
			filepath.Join(units, install.ServiceUnit+".d"), filepath.Join(units, install.SocketUnit+".d"))
	}
	if exe, err := os.Executable(); err == nil {
		dir := filepath.Dir(exe)
		list = append(list, exe, filepath.Join(dir, "narrowd"), filepath.Join(dir, "narrowd-hook"), filepath.Join(dir, "narrowd-exec"))
	}
	out := make([]string, 0, 2*len(list))
	for _, f := range list {
		if f == "" {
			continue
		}
		if abs, err := filepath.Abs(f); err == nil {
			out = append(out, abs)
			if real, err := filepath.EvalSymlinks(abs); err == nil && real != abs {
				out = append(out, real)
			}
		}
	}
	return out
}

// standingFinding names the first standing-configuration target of a
// call that was not allowed, and the tool that loads it, so the person
// sees why an ordinary-looking write asks.
func standingFinding(ev []rules.Evidence) string {
	for _, e := range ev {
		if e.Kind == rules.KindStandingConfig {
			return " [" + e.Subject + ": " + clipRunes(e.Detail, 200) + "]"
		}
	}
	return ""
}

// withOwn returns cfg with more of narrowd's own files.
func (cfg EngineConfig) withOwn(more ...string) EngineConfig {
	cfg.OwnFiles = slices.Concat(cfg.OwnFiles, more)
	return cfg
}

// ownDeny is the engine's own refusal of a call that would change
// narrowd's own files or run its administrative commands. It is not a
// profile rule: narrowd's rules, grants and records are what every
// profile stands on, so no profile (a team's file included) may let an
// agent rewrite them, and the refusal names the file.
func ownDeny(ev []rules.Evidence) (rules.Decision, bool) {
	for _, e := range ev {
		switch e.Kind {
		case rules.KindOwnFile:
			return rules.Decision{Outcome: rules.Deny, Rule: "narrowd-own-files",
				Reason: "this call would change narrowd's own files (" + e.Detail + "); narrowd never lets an agent change its rules, grants or records, so a person must do it outside the agent"}, true
		case rules.KindAdmin:
			return rules.Decision{Outcome: rules.Deny, Rule: "narrowd-own-files",
				Reason: "this call runs narrowd's own administrative command (" + e.Subject + "); narrowd never lets an agent grant, label, install or reconfigure it, so a person must run it outside the agent"}, true
		}
	}
	return rules.Decision{}, false
}
