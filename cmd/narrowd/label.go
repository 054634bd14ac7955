package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/narrowd/narrowd/daemon/mcp"
	"github.com/narrowd/narrowd/rules"
)

const labelUsage = `label [--labels FILE] [--definition FILE] [--agent AGENT] [--project DIR]... [--reviewer NAME] [--method TEXT] SERVER/TOOL

Walks a person through labelling one MCP tool (spec §6): it shows the
tool's exact definition and def_hash, asks the six questions in spec order
(mutation, scope, reversibility, egress, financial, returns_class), then the
facts, which argument is the tool's target, the reviewer and the method,
with one line of reasoning per label, and appends the record to a labels
file a team can commit (default .narrowd/labels.toml; serve --labels FILE
loads it). Answers are read line by line from stdin.

The definition comes from --definition (one tools/list entry as JSON) or
from listing the servers named SERVER in the agents' MCP configuration,
confined as serve does. Its annotations are shown and recorded as
host_asserted: an explicit hint may raise a label, never lower it, and an
absent hint is no statement at all.`

// labelQuestions are spec §3's questions, in spec order.
var labelQuestions = map[rules.Dim]string{
	rules.Mutation:      "does this action change any state outside the current session, and how? (§3.1)",
	rules.Scope:         "what is the largest blast radius of one call? (§3.2; §4.3: an unconstrained path or URL addresses everything it can reach)",
	rules.Reversibility: "after the action completes, is there an action that fully restores the state before it? (§3.3)",
	rules.Egress:        "who, at worst, can receive data through this action? (§3.4)",
	rules.Financial:     "does this action move money or commit spend? (§3.5)",
	rules.ReturnsClass:  "can what the action returns contain free text written by someone other than the user or the service? (§3.6)",
}

var factQuestions = map[rules.Fact]string{
	rules.OpenWorld:           "is the action labelled from a domain ceiling (§4.1), or is an unconstrained argument its main target (§4.3)?",
	rules.ConfigurationObject: "does it only remove configuration attached to an object that survives (§4.2)?",
	rules.PureDeletion:        "does its target stop existing with nothing put in its place (§4.4)?",
}

// runLabel is `narrowd label`.
func runLabel(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "label", labelUsage)
	labelsPath := fs.String("labels", filepath.Join(".narrowd", "labels.toml"), "the labels file to append to")
	defPath := fs.String("definition", "", "a file holding the tool's tools/list entry (JSON) instead of listing its server")
	agentName := fs.String("agent", "", "only servers from this agent's configuration (when several define SERVER)")
	var projects multiFlag
	fs.Var(&projects, "project", "a project directory whose MCP configuration is read (default the current directory; repeatable)")
	reviewer := fs.String("reviewer", "", "who reviewed the tool (asked when empty)")
	method := fs.String("method", "", "how it was reviewed, such as the source read and its commit (asked when empty)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 || !strings.Contains(fs.Arg(0), "/") {
		fs.Usage()
		return exitError{1}
	}
	key := fs.Arg(0)
	server, toolName, _ := strings.Cut(key, "/")

	var def json.RawMessage
	var sources []string
	if *defPath != "" {
		data, err := os.ReadFile(*defPath)
		if err != nil {
			return fmt.Errorf("definition: %w", err)
		}
		def = bytes.TrimSpace(data)
		sources = []string{*defPath}
	} else {
		if len(projects) == 0 {
			if wd, err := os.Getwd(); err == nil {
				projects = append(projects, wd)
			}
		}
		var err error
		def, sources, err = discoverDefinition(ctx, e, server, toolName, *agentName, projects)
		if err != nil {
			return err
		}
	}
	var head struct {
		Name        string         `json:"name"`
		Annotations map[string]any `json:"annotations"`
		InputSchema struct {
			Properties map[string]json.RawMessage `json:"properties"`
		} `json:"inputSchema"`
	}
	if err := json.Unmarshal(def, &head); err != nil {
		return fmt.Errorf("definition: %w", err)
	}
	if head.Name != toolName {
		return fmt.Errorf("the definition names tool %q, not %q", head.Name, toolName)
	}
	hash, err := rules.DefHash(def)
	if err != nil {
		return fmt.Errorf("definition: %w", err)
	}
	shown := displayJSON(def)

	w := e.stdout
	fmt.Fprintf(w, "tool       %s\n", key)
	fmt.Fprintf(w, "def_hash   %s\n", hash)
	fmt.Fprintf(w, "from       %s\n", strings.Join(sources, ", "))
	fmt.Fprintf(w, "\nThe definition below is data written by the server's author. Label what the\n")
	fmt.Fprintf(w, "tool can do; never follow instructions inside it (spec P2).\n")
	fmt.Fprintf(w, "----- definition -----\n%s\n----- end of definition -----\n\n", shown)

	floors, asserted := hostFloors(head.Annotations)
	if len(asserted) > 0 {
		fmt.Fprintf(w, "host_asserted (annotations; they may raise a label, never lower it):\n")
		for _, a := range asserted {
			fmt.Fprintf(w, "  %s\n", a)
		}
	} else {
		fmt.Fprintf(w, "host_asserted: no annotations (absent is unknown: nothing is assumed)\n")
	}

	in := &answers{sc: bufio.NewScanner(e.stdin), w: w}
	in.sc.Buffer(make([]byte, 64<<10), 64<<10)
	var labels rules.Labels
	why := map[string]string{}
	for _, d := range rules.Dims() {
		fmt.Fprintf(w, "\n%s: %s\n", d, labelQuestions[d])
		v, err := in.choice(fmt.Sprintf("  %s (%s): ", d, strings.Join(d.Values(), " | ")), d.Values())
		if err != nil {
			return err
		}
		lvl, _ := d.Parse(v)
		reason, err := in.line("  why (one line, citing the deciding rule): ")
		if err != nil {
			return err
		}
		if f, ok := floors[d]; ok && f.level > lvl {
			fmt.Fprintf(w, "  raised to %s: %s\n", d.Name(f.level), f.why)
			reason = fmt.Sprintf("%s; raised to %s by host_asserted %s", reason, d.Name(f.level), f.why)
			lvl = f.level
		}
		labels = labels.With(d, lvl)
		why[d.String()] = reason
	}
	for f := range rules.Fact(rules.NumFacts) {
		fmt.Fprintf(w, "\n%s: %s\n", f, factQuestions[f])
		v, err := in.choice(fmt.Sprintf("  %s (yes | no): ", f), []string{"yes", "no"})
		if err != nil {
			return err
		}
		if v == "yes" {
			labels.Facts[f] = true
			if why[f.String()], err = in.line("  why: "); err != nil {
				return err
			}
		}
	}
	spec, err := askInput(in, w, head.InputSchema.Properties)
	if err != nil {
		return err
	}
	if *reviewer == "" {
		if *reviewer, err = in.line("\nreviewer: "); err != nil {
			return err
		}
	}
	if *method == "" {
		if *method, err = in.line("method (what was read or observed, with source links or commit): "); err != nil {
			return err
		}
	}
	rec := labelRecord{
		Key: key, DefHash: hash, Labels: labels, Why: why, Input: spec,
		Reviewer: *reviewer, Method: *method, Reviewed: time.Now().UTC().Truncate(time.Second),
		Definition: shownOneLine(def), Asserted: asserted,
	}
	if err := appendLabel(*labelsPath, rec); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nrecorded %s at def_hash %s in %s\n", key, hash, *labelsPath)
	return nil
}

// discoverDefinition lists the servers named server in the agents' MCP
// configuration and returns the tool's definition. Several servers of
// that name with different definitions are an error: the person must
// pick one with --agent.
func discoverDefinition(ctx context.Context, e env, server, tool, agentName string, projects []string) (json.RawMessage, []string, error) {
	d := mcpDiscovery(e, projects, time.Hour, nil)
	servers, _, problems := mcp.Locate(d.Locations)
	for _, p := range problems {
		fmt.Fprintf(e.stderr, "narrowd label: mcp configuration: %v\n", p)
	}
	defs := map[string]json.RawMessage{}
	sources := map[string][]string{}
	var errs []string
	found := false
	for _, s := range servers {
		if s.Name != server || agentName != "" && s.Agent != agentName {
			continue
		}
		found = true
		if s.RepoRemote() {
			errs = append(errs, mcp.ErrRepoRemote.Error())
			continue
		}
		tools, err := d.Lister.List(ctx, s)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		for _, t := range tools {
			if t.Name == tool {
				defs[t.DefHash] = t.Definition
				sources[t.DefHash] = append(sources[t.DefHash], fmt.Sprintf("%s server %q in %s", s.Agent, s.Name, s.Source))
			}
		}
	}
	switch {
	case !found:
		return nil, nil, fmt.Errorf("no agent configures an MCP server named %q (pass --definition FILE)", server)
	case len(defs) == 0 && len(errs) > 0:
		return nil, nil, fmt.Errorf("server %q could not be listed: %s", server, strings.Join(errs, "; "))
	case len(defs) == 0:
		return nil, nil, fmt.Errorf("server %q lists no tool %q", server, tool)
	case len(defs) > 1:
		var all []string
		for h, src := range sources {
			all = append(all, h[:12]+": "+strings.Join(src, ", "))
		}
		slices.Sort(all)
		return nil, nil, fmt.Errorf("servers named %q list %d definitions of %q; pick one with --agent: %s", server, len(defs), tool, strings.Join(all, "; "))
	}
	for h, def := range defs {
		return def, sources[h], nil
	}
	return nil, nil, errors.New("unreachable")
}

// floor is a lowest value a host assertion allows for one label.
type floor struct {
	level rules.Level
	why   string
}

// hostFloors reads MCP annotations as host_asserted statements. Only an
// explicit hint counts (MCP's defaults are nobody's statement), and only
// in the direction that tightens: readOnlyHint=true or
// destructiveHint=false never lower a label.
func hostFloors(ann map[string]any) (map[rules.Dim]floor, []string) {
	floors := map[rules.Dim]floor{}
	var asserted []string
	raise := func(d rules.Dim, value, why string) {
		l, _ := d.Parse(value)
		if f, ok := floors[d]; !ok || l > f.level {
			floors[d] = floor{l, why}
		}
	}
	keys := make([]string, 0, len(ann))
	for k := range ann {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := ann[k]
		b, isBool := v.(bool)
		s, isString := v.(string)
		switch {
		case k == "readOnlyHint" && isBool && !b:
			raise(rules.Mutation, "create", "readOnlyHint=false: the tool says it changes its environment")
		case k == "destructiveHint" && isBool && b:
			// Even beside readOnlyHint=true, where MCP calls it
			// meaningless: of two statements, the riskier holds (P4).
			raise(rules.Mutation, "delete", "destructiveHint=true: the tool says it may destroy or overwrite")
		case k == "openWorldHint" && isBool && b:
			raise(rules.Egress, "external", "openWorldHint=true: the tool says it reaches external entities")
			raise(rules.ReturnsClass, "third_party_content", "openWorldHint=true: what it returns comes from external entities")
		case k == "consequenceClass" && isString:
			// Seed 001's classes, ordered by remedy left.
			switch s {
			case "irreversible":
				raise(rules.Reversibility, "irreversible", "consequenceClass=irreversible")
			case "forward_recoverable", "compensatable":
				raise(rules.Reversibility, "reversible_with_effort", "consequenceClass="+s)
			}
		}
		asserted = append(asserted, fmt.Sprintf("%s=%s", k, displayValue(v)))
	}
	return floors, asserted
}

func displayValue(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "?"
	}
	return escapeInvisible(string(b))
}

// askInput asks which argument is the tool's target, so that a call can
// narrow on it (§4.3, §5). The argument must be in the input schema:
// narrowd never guesses from names.
func askInput(in *answers, w io.Writer, props map[string]json.RawMessage) (rules.InputSpec, error) {
	names := make([]string, 0, len(props))
	for k := range props {
		names = append(names, k)
	}
	slices.Sort(names)
	kinds := []string{rules.InputNone, rules.InputRead, rules.InputWrite, rules.InputEdit, rules.InputDelete, rules.InputList, rules.InputGlob, rules.InputGrep, rules.InputFetch}
	fmt.Fprintf(w, "\ntarget: which argument says what a call touches? narrowd narrows a call only on\n")
	fmt.Fprintf(w, "an absolute path proven inside the workspace in the argument named here (none: never narrow).\n")
	fmt.Fprintf(w, "  arguments: %s\n", strings.Join(names, ", "))
	kind, err := in.choice(fmt.Sprintf("  kind (%s): ", strings.Join(kinds, " | ")), kinds)
	if err != nil {
		return rules.InputSpec{}, err
	}
	spec := rules.InputSpec{Kind: kind}
	argQ := "  argument holding the path: "
	switch kind {
	case rules.InputNone:
		return spec, nil
	case rules.InputGlob, rules.InputGrep:
		if spec.Dir, err = in.choice("  argument holding the search root: ", names); err != nil {
			return spec, err
		}
		argQ = "  argument holding the pattern: "
	case rules.InputFetch:
		argQ = "  argument holding the URL: "
	}
	spec.Field, err = in.choice(argQ, names)
	return spec, err
}

// answers reads one answer per line.
type answers struct {
	sc *bufio.Scanner
	w  io.Writer
}

func (a *answers) line(prompt string) (string, error) {
	for {
		fmt.Fprint(a.w, prompt)
		if !a.sc.Scan() {
			if err := a.sc.Err(); err != nil {
				return "", fmt.Errorf("reading answers: %w", err)
			}
			return "", errors.New("answers ended before the label was complete; nothing was written")
		}
		s := strings.TrimSpace(a.sc.Text())
		if s != "" && utf8.ValidString(s) && !strings.ContainsFunc(s, unicode.IsControl) {
			fmt.Fprintln(a.w)
			return s, nil
		}
		fmt.Fprintf(a.w, "\n  an answer is one non-empty line of text\n")
	}
}

func (a *answers) choice(prompt string, allowed []string) (string, error) {
	for {
		s, err := a.line(prompt)
		if err != nil {
			return "", err
		}
		if slices.Contains(allowed, s) {
			return s, nil
		}
		fmt.Fprintf(a.w, "  %q is not one of: %s\n", s, strings.Join(allowed, ", "))
	}
}

// displayJSON indents a definition for a person, with every invisible or
// control character escaped so that nothing in it can hide or move text.
func displayJSON(def []byte) string {
	var b bytes.Buffer
	if json.Indent(&b, def, "", "  ") != nil {
		return escapeInvisible(string(def))
	}
	return escapeInvisible(b.String())
}

func shownOneLine(def []byte) string {
	var b bytes.Buffer
	if json.Compact(&b, def) != nil {
		return escapeInvisible(string(def))
	}
	return escapeInvisible(b.String())
}

// escapeInvisible writes \uXXXX for characters a terminal would not show
// as themselves: controls, format characters (bidi overrides, zero-width)
// and anything not graphic.
func escapeInvisible(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r == '\n' || r == ' ' || unicode.IsGraphic(r) && !unicode.Is(unicode.Cf, r) {
			b.WriteRune(r)
			continue
		}
		if r > 0xffff {
			fmt.Fprintf(&b, `\U%08x`, r)
		} else {
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}

// labelRecord is one [[tool]] record of a labels file.
type labelRecord struct {
	Key, DefHash     string
	Labels           rules.Labels
	Why              map[string]string
	Input            rules.InputSpec
	Reviewer, Method string
	Reviewed         time.Time
	Definition       string
	Asserted         []string
}

// appendLabel appends rec to the labels file and keeps the result only
// if the whole file still loads as a catalog. An older record of the same
// key stays as history (spec §1).
func appendLabel(path string, rec labelRecord) error {
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("labels file: %w", err)
	}
	var b bytes.Buffer
	b.Write(old)
	if len(old) > 0 && !bytes.HasSuffix(old, []byte("\n")) {
		b.WriteByte('\n')
	}
	if len(old) == 0 {
		b.WriteString("# MCP tool labels (spec §6), written by narrowd label. Commit this file.\n")
		b.WriteString("# A record binds to one (key, def_hash); when a tool's definition changes,\n")
		b.WriteString("# its records stay as history and the tool is unlabelled until reviewed again.\n")
	}
	fmt.Fprintf(&b, "\n# %s reviewed by %s\n", rec.Key, commentLine(rec.Reviewer))
	fmt.Fprintf(&b, "# definition (data, never instructions): %s\n", commentLine(rec.Definition))
	if len(rec.Asserted) > 0 {
		fmt.Fprintf(&b, "# host_asserted (may only raise labels): %s\n", commentLine(strings.Join(rec.Asserted, " ")))
	} else {
		b.WriteString("# host_asserted: none\n")
	}
	b.WriteString("[[tool]]\n")
	fmt.Fprintf(&b, "key = %s\n", tomlString(rec.Key))
	fmt.Fprintf(&b, "def_hash = %s\n", tomlString(rec.DefHash))
	fmt.Fprintf(&b, "reviewer = %s\n", tomlString(rec.Reviewer))
	fmt.Fprintf(&b, "method = %s\n", tomlString(rec.Method))
	fmt.Fprintf(&b, "reviewed = %s\n", rec.Reviewed.Format(time.RFC3339))
	fmt.Fprintf(&b, "[tool.input]\nkind = %s\n", tomlString(rec.Input.Kind))
	if rec.Input.Field != "" {
		fmt.Fprintf(&b, "field = %s\n", tomlString(rec.Input.Field))
	}
	if rec.Input.Dir != "" {
		fmt.Fprintf(&b, "dir = %s\n", tomlString(rec.Input.Dir))
	}
	b.WriteString("[tool.labels]\n")
	for _, d := range rules.Dims() {
		fmt.Fprintf(&b, "%s = %s\n", d, tomlString(rec.Labels.Value(d)))
	}
	for f := range rules.Fact(rules.NumFacts) {
		if rec.Labels.Fact(f) {
			fmt.Fprintf(&b, "%s = true\n", f)
		}
	}
	b.WriteString("[tool.why]\n")
	for _, d := range rules.Dims() {
		fmt.Fprintf(&b, "%s = %s\n", d, tomlString(rec.Why[d.String()]))
	}
	for f := range rules.Fact(rules.NumFacts) {
		if rec.Labels.Fact(f) {
			fmt.Fprintf(&b, "%s = %s\n", f, tomlString(rec.Why[f.String()]))
		}
	}
	c, err := rules.LoadCatalog(path, b.Bytes())
	if err != nil {
		return fmt.Errorf("the labels file would not load; nothing was written: %w", err)
	}
	if got, ok := c.Bound(rec.Key, rec.DefHash); !ok || got.Labels != rec.Labels {
		return errors.New("the new record does not bind as written; nothing was written")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("labels file: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".labels-*.toml")
	if err != nil {
		return fmt.Errorf("labels file: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b.Bytes()); err != nil {
		tmp.Close()
		return fmt.Errorf("labels file: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("labels file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("labels file: %w", err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("labels file: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("labels file: %w", err)
	}
	return nil
}

// commentLine keeps a comment on one line whatever the text holds.
func commentLine(s string) string {
	return escapeInvisible(strings.ReplaceAll(s, "\n", `\n`))
}

// tomlString is a TOML basic string: JSON's escapes are TOML's, except
// that TOML has no \/ and wants \u for control characters, as JSON does.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
