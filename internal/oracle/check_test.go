package oracle

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/narrowd/narrowd/daemon"
	"github.com/narrowd/narrowd/daemon/agent"
	"github.com/narrowd/narrowd/parse"
	"github.com/narrowd/narrowd/proofs"
	"github.com/narrowd/narrowd/rules"
)

// Violation classes.
const (
	classExec    = "exec"          // a program the analysis does not name
	classWrite   = "write"         // a write the verdict does not claim
	classConnect = "connect"       // any connection
	classCanary  = "canary-open"   // an open of a canary secret
	classLeak    = "canary-output" // a canary string in the output
)

// violation is one thing a run did that its verdict did not allow.
type violation struct {
	class  string
	call   call
	rule   string // the profile rule that allowed
	detail string // the offending syscall, or what leaked
}

func (v violation) String() string {
	return fmt.Sprintf("%s: %q in %s (allowed by %s): %s", v.class, v.call.text, v.call.ws, v.rule, v.detail)
}

// judge runs one call through the engine exactly as `narrowd check
// --workspace WS` does: a Claude Code PreToolUse payload, decoded by the
// agent package, judged with an empty session.
func judge(eng *daemon.Engine, ws, command string) (rules.Verdict, error) {
	payload, err := json.Marshal(map[string]any{
		"session_id": "oracle", "transcript_path": "/dev/null", "cwd": ws,
		"hook_event_name": "PreToolUse", "tool_name": "Bash",
		"tool_input": map[string]any{"command": command},
	})
	if err != nil {
		return rules.Verdict{}, err
	}
	name, err := agent.Detect(payload)
	if err != nil {
		return rules.Verdict{}, fmt.Errorf("detect: %w", err)
	}
	c, err := agent.Decode(name, bytes.NewReader(payload))
	if err != nil {
		return rules.Verdict{}, fmt.Errorf("decode: %w", err)
	}
	c.Workspaces = []string{ws}
	return eng.Judge(c, rules.Session{}), nil
}

// claims is what an allowed verdict says the call may do.
type claims struct {
	// programs are the resolved paths of every program the analysis
	// says runs (wrappers included) and bash; names their base names,
	// for a PATH search that fails before it finds one.
	programs map[string]bool
	names    map[string]bool
	// readOnly: the narrowed mutation is read, so nothing is written.
	readOnly bool
	// targets are the proven write targets; recursive ones cover their
	// trees.
	targets []proofs.Target
}

// claimsOf reads the claims from the verdict and narrowd's analysis of
// the same text (the engine analyses it the same way; the verdict does
// not carry the program list).
func claimsOf(k *parse.Knowledge, v rules.Verdict, command, ws, cwd string) claims {
	a := parse.Analyze(command, k)
	c := claims{programs: map[string]bool{}, names: map[string]bool{}}
	addProgram := func(name string) {
		if name == "" {
			return
		}
		c.names[filepath.Base(name)] = true
		for _, p := range resolveProgram(name, cwd) {
			c.programs[p] = true
		}
	}
	addProgram("bash")
	for _, p := range a.Programs {
		addProgram(p.Name)
		for _, w := range p.Wrappers {
			addProgram(strings.Fields(w + " x")[0])
		}
	}
	c.readOnly = v.Narrowed != nil && v.Narrowed.Value(rules.Mutation) == "read"
	if !c.readOnly {
		ps := proofs.NewPaths([]string{ws}, nil, proofs.OSDisk{})
		ts, _ := proofs.WriteTargets(a, cwd, ps)
		c.targets = ts
		// What the analysis names as written, in case WriteTargets
		// gives up on a form the profile still allowed.
		for _, p := range a.Programs {
			for _, pa := range p.Paths {
				if pa.Access == parse.Read || !pa.Word.Literal {
					continue
				}
				abs := pa.Word.Value
				if !filepath.IsAbs(abs) {
					abs = filepath.Join(cwd, abs)
				}
				c.targets = append(c.targets, proofs.Target{Abs: filepath.Clean(abs), Recursive: pa.Recursive || pa.Word.Value == "."})
			}
		}
	}
	return c
}

// resolveProgram is where a program name lands: through the tracee's PATH
// for a bare name, against cwd for a path; both as named and with links
// resolved.
func resolveProgram(name, cwd string) []string {
	var cands []string
	if strings.Contains(name, "/") {
		if !filepath.IsAbs(name) {
			name = filepath.Join(cwd, name)
		}
		cands = []string{filepath.Clean(name)}
	} else {
		for _, d := range filepath.SplitList(tracePath()) {
			p := filepath.Join(d, name)
			if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
				cands = append(cands, p)
				break
			}
		}
	}
	var out []string
	for _, p := range cands {
		out = append(out, p)
		if r, err := filepath.EvalSymlinks(p); err == nil {
			out = append(out, r)
		}
	}
	return out
}

// harmlessWrites are what any call may open for writing: the devices the
// sandbox has, its own output, and the names of stdout and stderr.
var harmlessWrites = []string{
	"/dev/null", "/dev/tty", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom",
	"/dev/stdout", "/dev/stderr", "/dev/fd/1", "/dev/fd/2", "/proc/self/fd/1", "/proc/self/fd/2",
	"/tmp/.oracle/out", "/tmp/.oracle/err",
}

func (c claims) allowsWrite(p string) bool {
	if slices.Contains(harmlessWrites, p) || !filepath.IsAbs(p) {
		// Not absolute: a pipe, socket or anonymous inode.
		return true
	}
	if c.readOnly {
		return false
	}
	for _, t := range c.targets {
		if p == t.Abs || (t.Recursive && strings.HasPrefix(p, t.Abs+"/")) {
			return true
		}
	}
	return false
}

var procEnviron = regexp.MustCompile(`^/proc/[^/]+/environ$`)

// check compares one run with its claims.
func (w *world) check(c call, v rules.Verdict, cl claims, r result) []violation {
	var out []violation
	perClass := map[string]int{}
	add := func(class, detail string) {
		// A few per class are enough to see what a call did.
		if perClass[class]++; perClass[class] > 3 {
			return
		}
		out = append(out, violation{class: class, call: c, rule: v.Decision.Rule, detail: detail})
	}
	evs := parseTrace(r.trace)
	acc := accesses(evs, w.ws(c.ws))
	// Files the call made and then renamed onto a claimed target or
	// removed are its own temporaries (sed -i writes beside the file).
	transient := map[string]bool{}
	for i, a := range acc {
		if !a.created {
			continue
		}
		for _, b := range acc[i+1:] {
			if b.path == a.path && (b.unlinked || (b.renamedTo != "" && cl.allowsWrite(realish(b.renamedTo)))) {
				transient[a.path] = true
				break
			}
		}
	}
	for _, a := range acc {
		switch {
		case a.ev.name == "execve" || a.ev.name == "execveat":
			if a.ev.ok() {
				real := a.path
				if rp, err := filepath.EvalSymlinks(a.path); err == nil {
					real = rp
				}
				if !cl.programs[a.path] && !cl.programs[real] {
					add(classExec, shortLine(a.ev.line))
				}
			} else if !cl.names[filepath.Base(a.path)] {
				add(classExec, shortLine(a.ev.line))
			}
		case a.write:
			if !cl.allowsWrite(a.path) && !cl.allowsWrite(realish(a.path)) && !transient[a.path] {
				add(classWrite, shortLine(a.ev.line))
			}
		}
		if a.open && w.secret(a) {
			add(classCanary, shortLine(a.ev.line))
		}
	}
	for _, ev := range evs {
		if t := connectTarget(ev); t != "" {
			add(classConnect, shortLine(ev.line))
		}
	}
	for _, s := range canaries() {
		if strings.Contains(r.out, s) || strings.Contains(r.err, s) {
			add(classLeak, "output holds "+s)
		}
	}
	return out
}

// secret reports an open that reached a canary: its resolved path is in
// a secret root, or it is a process environment, which holds one.
func (w *world) secret(a access) bool {
	if !a.ev.ok() {
		switch a.ev.errno() {
		case "ENOENT", "ENOTDIR", "ENAMETOOLONG", "ELOOP":
			return false
		}
	}
	p := a.path
	if !a.ev.ok() || a.ev.retPath() == "" {
		p = realish(p)
	}
	if procEnviron.MatchString(p) {
		return true
	}
	for _, root := range w.secretRoots {
		if p == root || strings.HasPrefix(p, root+"/") {
			return true
		}
	}
	return false
}

// realish resolves the links in p's parent on the host template (which
// has the same links at the same paths), so a write through docs/ lands
// in the canary directory even when the syscall gave no resolved path.
func realish(p string) string {
	dir, base := filepath.Split(p)
	if rd, err := filepath.EvalSymlinks(dir); err == nil {
		return filepath.Join(rd, base)
	}
	return p
}

func shortLine(s string) string {
	if len(s) > 400 {
		return s[:400] + "…"
	}
	return s
}
