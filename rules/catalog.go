package rules

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

//go:embed catalog/builtin.toml
var builtinCatalog []byte

// Input kinds say how narrowd reads a tool's arguments to gather evidence.
// A tool whose kind is "none" keeps its ceiling on every call.
const (
	InputNone   = "none"   // nothing to narrow on
	InputShell  = "shell"  // a shell command text
	InputRead   = "read"   // one file path read
	InputWrite  = "write"  // one file path written (created or overwritten)
	InputEdit   = "edit"   // one existing file changed in place
	InputDelete = "delete" // one path removed
	InputGlob   = "glob"   // a pattern under a search root
	InputGrep   = "grep"   // a search under a root
	InputList   = "list"   // a directory listed
	InputFetch  = "fetch"  // a URL requested
	InputPatch  = "patch"  // an apply_patch envelope naming files
)

var inputKinds = []string{InputNone, InputShell, InputRead, InputWrite, InputEdit, InputDelete, InputGlob, InputGrep, InputList, InputFetch, InputPatch}

// Entry is the labels of one tool action with one line of reasoning per
// label (spec §6).
type Entry struct {
	// Key is namespace/tool, such as "claude/Bash" (spec §1).
	Key string
	// Agent and Names tie a built-in entry to the tool names an agent
	// sends; empty for entries bound by def_hash alone.
	Agent string
	Names []string
	// DefHash binds labels to one exact definition; empty for built-in
	// tools, whose definitions hosts do not pass to hooks.
	DefHash string
	Labels  Labels
	// Why holds one line of reasoning per label and per fact set true,
	// keyed by label or fact name.
	Why map[string]string
	// Input says how to read the call's arguments: its kind and the
	// argument names that carry the command, path, pattern or URL.
	Input InputSpec
	// Reviewer, Method and Reviewed record who labelled it, how and when.
	Reviewer string
	Method   string
	Reviewed time.Time
}

// InputSpec names the arguments narrowd reads to narrow a call.
type InputSpec struct {
	Kind string `toml:"kind"`
	// Field is the argument holding the command, path, pattern or URL.
	Field string `toml:"field"`
	// Dir is the argument holding a directory the call runs in or
	// searches under, when the tool has one.
	Dir string `toml:"dir"`
}

// Catalog holds the labelled tools: built-in tools by agent and name, and
// def_hash-bound tools by key, with history.
type Catalog struct {
	byName  map[string]*Entry // agent + "\x00" + tool name
	byKey   map[string][]*Entry
	entries []*Entry
}

// Lookup returns the built-in entry for the tool an agent named.
func (c *Catalog) Lookup(agent, tool string) (*Entry, bool) {
	e, ok := c.byName[agent+"\x00"+tool]
	return e, ok
}

// Bound returns the labels recorded for key at exactly defHash. A key
// whose newest record has another hash is unlabelled: its old labels stay
// in [Catalog.History] but never apply (spec §1).
func (c *Catalog) Bound(key, defHash string) (*Entry, bool) {
	recs := c.byKey[key]
	if len(recs) == 0 {
		return nil, false
	}
	newest := recs[len(recs)-1]
	if newest.DefHash == "" || newest.DefHash != defHash {
		return nil, false
	}
	return newest, true
}

// History returns every record for key, oldest first.
func (c *Catalog) History(key string) []*Entry { return c.byKey[key] }

// Entries returns every entry in file order.
func (c *Catalog) Entries() []*Entry { return c.entries }

// catalogFile is the TOML shape of a catalog or label file.
type catalogFile struct {
	Class map[string]classDef `toml:"class"`
	Tool  []toolDef           `toml:"tool"`
}

type classDef struct {
	Labels map[string]any    `toml:"labels"`
	Why    map[string]string `toml:"why"`
}

type toolDef struct {
	Key      string            `toml:"key"`
	Agent    string            `toml:"agent"`
	Names    []string          `toml:"names"`
	Class    string            `toml:"class"`
	DefHash  string            `toml:"def_hash"`
	Labels   map[string]any    `toml:"labels"`
	Why      map[string]string `toml:"why"`
	Input    InputSpec         `toml:"input"`
	Reviewer string            `toml:"reviewer"`
	Method   string            `toml:"method"`
	Reviewed time.Time         `toml:"reviewed"`
}

// CatalogError lists every problem found in a catalog file, each with its
// file:line.
type CatalogError struct {
	Problems []string
}

func (e *CatalogError) Error() string { return strings.Join(e.Problems, "\n") }

// DefaultCatalog returns the embedded catalog of built-in agent tools.
func DefaultCatalog() (*Catalog, error) {
	return LoadCatalog("builtin.toml", builtinCatalog)
}

// LoadCatalog reads one or more catalog files into a catalog. Later files
// add tools and append label records; a second built-in entry for the
// same agent and tool name is an error.
func LoadCatalog(filename string, data []byte, more ...[]byte) (*Catalog, error) {
	c := &Catalog{byName: map[string]*Entry{}, byKey: map[string][]*Entry{}}
	if err := c.add(filename, data); err != nil {
		return nil, err
	}
	for i, d := range more {
		if err := c.add(fmt.Sprintf("%s#%d", filename, i+2), d); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func (c *Catalog) add(filename string, data []byte) error {
	var f catalogFile
	md, err := toml.Decode(string(data), &f)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return &CatalogError{[]string{fmt.Sprintf("%s:%d: %s", filename, pe.Position.Line, pe.Message)}}
		}
		return &CatalogError{[]string{fmt.Sprintf("%s: %v", filename, err)}}
	}
	lines := tableLines(data, "[[tool]]")
	lineOf := func(i int) int {
		if i < len(lines) {
			return lines[i]
		}
		return 1
	}
	var problems []string
	for _, k := range md.Undecoded() {
		problems = append(problems, fmt.Sprintf("%s: unknown key %q", filename, k.String()))
	}
	classes := make(map[string]Entry, len(f.Class))
	classNames := make([]string, 0, len(f.Class))
	for name := range f.Class {
		classNames = append(classNames, name)
	}
	sort.Strings(classNames)
	for _, name := range classNames {
		cd := f.Class[name]
		l, err := LabelsFromMap(cd.Labels)
		line := findLine(data, "[class."+name)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s:%d: class %s: %v", filename, line, name, err))
			continue
		}
		if msg := checkWhy(l, cd.Why); msg != "" {
			problems = append(problems, fmt.Sprintf("%s:%d: class %s: %s", filename, line, name, msg))
		}
		classes[name] = Entry{Labels: l, Why: cd.Why}
	}
	for i, td := range f.Tool {
		pos := fmt.Sprintf("%s:%d", filename, lineOf(i))
		e := &Entry{
			Key: td.Key, Agent: td.Agent, Names: td.Names, DefHash: td.DefHash,
			Input: td.Input, Reviewer: td.Reviewer, Method: td.Method, Reviewed: td.Reviewed,
		}
		if e.Input.Kind == "" {
			e.Input.Kind = InputNone
		}
		switch {
		case td.Key == "" || !strings.Contains(td.Key, "/"):
			problems = append(problems, fmt.Sprintf("%s: tool key %q must be namespace/tool", pos, td.Key))
			continue
		case td.Class != "" && td.Labels != nil:
			problems = append(problems, fmt.Sprintf("%s: %s: give class or labels, not both", pos, td.Key))
			continue
		case td.Class != "":
			cl, ok := classes[td.Class]
			if !ok {
				problems = append(problems, fmt.Sprintf("%s: %s: unknown class %q", pos, td.Key, td.Class))
				continue
			}
			e.Labels, e.Why = cl.Labels, cl.Why
		default:
			l, err := LabelsFromMap(td.Labels)
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s: %s: %v", pos, td.Key, err))
				continue
			}
			if msg := checkWhy(l, td.Why); msg != "" {
				problems = append(problems, fmt.Sprintf("%s: %s: %s", pos, td.Key, msg))
				continue
			}
			e.Labels, e.Why = l, td.Why
		}
		if !contains(inputKinds, e.Input.Kind) {
			problems = append(problems, fmt.Sprintf("%s: %s: unknown input kind %q", pos, td.Key, e.Input.Kind))
			continue
		}
		if len(td.Names) > 0 && td.Agent == "" {
			problems = append(problems, fmt.Sprintf("%s: %s: names need an agent", pos, td.Key))
			continue
		}
		for _, n := range td.Names {
			k := td.Agent + "\x00" + n
			if _, dup := c.byName[k]; dup {
				problems = append(problems, fmt.Sprintf("%s: %s: tool %s/%s listed twice", pos, td.Key, td.Agent, n))
				continue
			}
			c.byName[k] = e
		}
		c.byKey[e.Key] = append(c.byKey[e.Key], e)
		c.entries = append(c.entries, e)
	}
	if len(problems) > 0 {
		return &CatalogError{problems}
	}
	return nil
}

// checkWhy requires one line of reasoning for every label and for every
// fact that is set (spec §6 step 4), and nothing for unknown names.
func checkWhy(l Labels, why map[string]string) string {
	var missing []string
	for _, d := range Dims() {
		if strings.TrimSpace(why[d.String()]) == "" {
			missing = append(missing, d.String())
		}
	}
	for f := range Fact(NumFacts) {
		if l.Facts[f] && strings.TrimSpace(why[f.String()]) == "" {
			missing = append(missing, f.String())
		}
	}
	if len(missing) > 0 {
		return "missing reasoning for " + strings.Join(missing, ", ")
	}
	for k := range why {
		if _, err := ParseDim(k); err == nil {
			continue
		}
		if _, err := ParseFact(k); err == nil {
			continue
		}
		return fmt.Sprintf("reasoning for unknown label %q", k)
	}
	return ""
}

// tableLines returns the 1-based line of each occurrence of a TOML
// array-of-tables header, such as "[[tool]]", in file order. The TOML
// decoder gives no key positions, so problems are placed by header.
func tableLines(data []byte, header string) []int {
	var lines []int
	for i, line := range bytes.Split(data, []byte("\n")) {
		if string(bytes.TrimSpace(line)) == header {
			lines = append(lines, i+1)
		}
	}
	return lines
}

func findLine(data []byte, prefix string) int {
	for i, line := range bytes.Split(data, []byte("\n")) {
		if bytes.HasPrefix(bytes.TrimSpace(line), []byte(prefix)) {
			return i + 1
		}
	}
	return 1
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// MergeCatalogs returns a catalog with the entries of every given catalog,
// in order. Name lookups take the first catalog that names a tool; label
// records for one key are appended in order, so a later file's record is
// the newest.
func MergeCatalogs(cs ...*Catalog) *Catalog {
	m := &Catalog{byName: map[string]*Entry{}, byKey: map[string][]*Entry{}}
	for _, c := range cs {
		for k, e := range c.byName {
			if _, ok := m.byName[k]; !ok {
				m.byName[k] = e
			}
		}
		for _, e := range c.entries {
			m.byKey[e.Key] = append(m.byKey[e.Key], e)
			m.entries = append(m.entries, e)
		}
	}
	return m
}
