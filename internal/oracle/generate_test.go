package oracle

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
)

// The generator reads the knowledge table as data (the parse package
// keeps its compiled form private) and turns every command, subcommand
// and flag it lists into calls. It reads the same files the parse package
// embeds, so a flag added to the table is generated on the next run.

// knowledgeDir is the table, relative to this package.
const knowledgeDir = "../../parse/knowledge"

// argMode says whether a listed flag takes a value.
type argMode uint8

const (
	argNone argMode = iota
	argRequired
	argOptional // attached only: --color=auto, -i.bak
	argTwo      // the next two words: jq --arg NAME VALUE
)

// flagForm is one flag entry of the table: its aliases and argument mode.
type flagForm struct {
	names []string
	arg   argMode
}

// cmdSpec is one command or subcommand of the table, as the generator
// needs it.
type cmdSpec struct {
	words   []string // "git", "log"
	parser  string   // gnu, posix, git, go, single, clap, none
	abbrev  bool     // long options abbreviate
	flags   []flagForm
	args    []string // operand slots, as written: "read*", "text"
	handler string
	// parentFlags are a persistent parent's flags, valid after the
	// subcommand too.
	parentFlags []flagForm
}

// rule is the spec's name as the table's rules name it: "git log".
func (s *cmdSpec) rule() string { return strings.Join(s.words, " ") }

// parseFlagText reads one flag entry as parse's flagName does:
// "-n|--lines=" takes a value, "--color=?" an optional attached one,
// "--arg=2" two words.
func parseFlagText(text string) flagForm {
	f := flagForm{}
	switch {
	case strings.HasSuffix(text, "=2"):
		f.arg, text = argTwo, strings.TrimSuffix(text, "=2")
	case strings.HasSuffix(text, "=?"):
		f.arg, text = argOptional, strings.TrimSuffix(text, "=?")
	case strings.HasSuffix(text, "="):
		f.arg, text = argRequired, strings.TrimSuffix(text, "=")
	}
	for n := range strings.SplitSeq(text, "|") {
		switch {
		case n == "-#":
			n = "-5" // any all-digit short option (head -5)
		case strings.HasSuffix(n, "*"):
			n = strings.TrimSuffix(n, "*") // a prefix pattern: the bare prefix is one instance
			if len(n) < 2 {
				continue
			}
		}
		f.names = append(f.names, n)
	}
	return f
}

// loadSpecs reads every knowledge file and returns its commands and
// subcommands, sorted by rule name.
func loadSpecs(dir string) ([]*cmdSpec, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.toml"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no knowledge files in %s: %v", dir, err)
	}
	var out []*cmdSpec
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("reading knowledge: %w", err)
		}
		var tf struct {
			Cmd        map[string]map[string]any `toml:"cmd"`
			FlagGroups map[string][]string       `toml:"flag_groups"`
		}
		if _, err := toml.Decode(string(data), &tf); err != nil {
			return nil, fmt.Errorf("decoding %s: %w", f, err)
		}
		for name, raw := range tf.Cmd {
			out = appendSpecs(out, []string{name}, raw, nil, tf.FlagGroups)
			for _, alias := range strs(raw["aliases"]) {
				out = appendSpecs(out, []string{alias}, raw, nil, tf.FlagGroups)
			}
		}
	}
	slices.SortFunc(out, func(a, b *cmdSpec) int { return strings.Compare(a.rule(), b.rule()) })
	return out, nil
}

// appendSpecs adds the spec at words and, recursively, its subcommands.
func appendSpecs(out []*cmdSpec, words []string, raw map[string]any, parent *cmdSpec, groups map[string][]string) []*cmdSpec {
	s := &cmdSpec{words: words, handler: str(raw["handler"])}
	s.parser = str(raw["parser"])
	if s.parser == "" {
		s.parser = "gnu"
		if parent != nil {
			s.parser = parent.parser
		}
	}
	s.abbrev = s.parser == "gnu" || s.parser == "git"
	if b, ok := raw["abbrev"].(bool); ok {
		s.abbrev = b
	}
	for _, t := range strs(raw["flags"]) {
		s.flags = append(s.flags, parseFlagText(t))
	}
	for _, g := range strs(raw["groups"]) {
		for _, t := range groups[g] {
			s.flags = append(s.flags, parseFlagText(t))
		}
	}
	if fm, ok := raw["flag"].(map[string]any); ok {
		for _, t := range sortedKeys(fm) {
			s.flags = append(s.flags, parseFlagText(t))
		}
	}
	s.args = strs(raw["args"])
	if parent != nil && parent.parentFlags != nil {
		s.parentFlags = parent.parentFlags
	}
	if b, _ := raw["persistent"].(bool); b {
		s.parentFlags = append(slices.Clip(s.parentFlags), s.flags...)
	}
	out = append(out, s)
	subs, _ := raw["sub"].(map[string]any)
	for _, name := range sortedKeys(subs) {
		sub, _ := subs[name].(map[string]any)
		out = appendSpecs(out, append(slices.Clone(words), name), sub, s, groups)
		for _, alias := range strs(sub["aliases"]) {
			out = appendSpecs(out, append(slices.Clone(words), alias), sub, s, groups)
		}
	}
	return out
}

func str(v any) string { s, _ := v.(string); return s }

func strs(v any) []string {
	list, _ := v.([]any)
	var out []string
	for _, x := range list {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// payloads is testdata/payloads.toml: the hostile values, operands and
// compositions the generator combines with the table.
type payloads struct {
	// Values are option values (shell text) every value-taking flag
	// gets.
	Values []string `toml:"values"`
	// Operands are per slot kind ("read", "text", "url", "cmd", …) the
	// operands a slot of that kind gets, as shell text.
	Operands map[string][]string `toml:"operands"`
	// Command holds, per command name or handler, extra operands and
	// values aimed at its mini-language.
	Command map[string]struct {
		Text   []string `toml:"text"`
		Values []string `toml:"values"`
	} `toml:"command"`
	// Wrap are compositions; {} is the call.
	Wrap []string `toml:"wrap"`
	// Always are calls every bounded run judges in every workspace.
	Always []string `toml:"always"`
}

func loadPayloads(file string) (*payloads, error) {
	var p payloads
	md, err := toml.DecodeFile(file, &p)
	if err != nil {
		return nil, fmt.Errorf("payloads: %w", err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		return nil, fmt.Errorf("payloads: unknown key %q", und[0].String())
	}
	return &p, nil
}

// generated is one base call and the spec it came from.
type generated struct {
	rule string
	text string
}

// generator turns specs into calls.
type generator struct {
	p *payloads
}

// operandsFor is one operand list for the spec's slots: each slot gets a
// value of its kind, chosen by pick, and optional slots are filled too so
// the program has something to work on.
func (g *generator) operandsFor(s *cmdSpec, pick func(n int) int) []string {
	var out []string
	if len(s.args) == 0 {
		// A handler command with no slots (find, tar) takes its
		// operands from its mini-language payloads.
		if text := g.textFor(s); len(text) > 0 {
			return []string{text[pick(len(text))]}
		}
	}
	for _, slot := range s.args {
		kind := strings.TrimRight(slot, "?*+")
		if strings.HasPrefix(kind, "state-") {
			kind = "state"
		} else if strings.HasPrefix(kind, "remote-") {
			kind = "read"
		}
		switch kind {
		case "create", "update", "overwrite", "delete":
			kind = "write"
		}
		vals := g.p.Operands[kind]
		if kind == "text" {
			vals = append(slices.Clip(g.textFor(s)), vals...)
		}
		if len(vals) == 0 {
			continue
		}
		out = append(out, vals[pick(len(vals))])
	}
	return out
}

// textFor is the mini-language payloads for the spec's command and
// handler.
func (g *generator) textFor(s *cmdSpec) []string {
	var out []string
	for _, k := range []string{s.rule(), s.words[0], s.handler} {
		if c, ok := g.p.Command[k]; ok && k != "" {
			out = append(out, c.Text...)
		}
	}
	return out
}

// valuesFor is the hostile values a value-taking flag of s gets.
func (g *generator) valuesFor(s *cmdSpec) []string {
	out := slices.Clone(g.p.Values)
	for _, k := range []string{s.rule(), s.words[0], s.handler} {
		if c, ok := g.p.Command[k]; ok && k != "" {
			out = append(out, c.Values...)
		}
	}
	return out
}

// isLong reports a long option of the spec's parser family.
func isLong(parser, name string) bool {
	if strings.HasPrefix(name, "--") {
		return true
	}
	// go and single parse whole-word one-dash options.
	return (parser == "go" || parser == "single") && len(name) > 2
}

// valuesPerFlag is how many hostile values each value-taking flag gets
// as a separate word (and two more attached): a different seed draws
// others, so long runs over several seeds meet them all.
const valuesPerFlag = 4

// generate lists every call the spec yields: the bare form, the form
// with operands, each flag name with each hostile value (separate and
// attached), abbreviations of each long option, --no- forms, clusters of
// short flags, and a persistent parent's flags after the subcommand.
// The list is deterministic for a seed.
func (g *generator) generate(s *cmdSpec, rng *rand.Rand) []generated {
	pick := func(n int) int { return rng.IntN(n) }
	var out []generated
	add := func(words ...string) {
		out = append(out, generated{rule: s.rule(), text: strings.Join(slices.DeleteFunc(words, func(w string) bool { return w == "" }), " ")})
	}
	head := strings.Join(s.words, " ")
	ops := func() string { return strings.Join(g.operandsFor(s, pick), " ") }
	add(head)
	add(head, ops())
	add(head, ops())
	values := g.valuesFor(s)
	var longs []string
	var shortsNoArg, shortsArg []string
	all := append(slices.Clip(s.flags), s.parentFlags...)
	for _, f := range all {
		for _, n := range f.names {
			if isLong(s.parser, n) {
				longs = append(longs, n)
			} else if len(n) == 2 && n[0] == '-' {
				if f.arg == argNone {
					shortsNoArg = append(shortsNoArg, n[1:])
				} else if f.arg == argRequired {
					shortsArg = append(shortsArg, n[1:])
				}
			}
		}
	}
	for _, f := range all {
		for _, n := range f.names {
			long := isLong(s.parser, n)
			switch f.arg {
			case argNone:
				add(head, n, ops())
			case argOptional:
				add(head, n, ops())
				v := values[pick(len(values))]
				if long {
					add(head, n+"="+v, ops())
				} else {
					add(head, n+v, ops())
				}
			case argTwo:
				for range valuesPerFlag {
					add(head, n, "name", values[pick(len(values))], ops())
				}
			case argRequired:
				for range valuesPerFlag {
					add(head, n, values[pick(len(values))], ops())
				}
				for range 2 {
					v := values[pick(len(values))]
					if long {
						add(head, n+"="+v, ops())
					} else {
						add(head, n+v, ops())
					}
				}
			}
			if long && s.abbrev && strings.HasPrefix(n, "--") {
				if p := uniquePrefix(n, longs); p != "" {
					w := p
					if f.arg == argRequired || f.arg == argOptional {
						w += "=" + values[pick(len(values))]
					}
					add(head, w, ops())
				}
			}
			if long && s.parser == "git" && strings.HasPrefix(n, "--") && !strings.HasPrefix(n, "--no-") && f.arg == argNone {
				add(head, "--no-"+n[2:], ops())
			}
		}
	}
	if s.parser != "go" && s.parser != "single" && s.parser != "none" && len(shortsNoArg) >= 2 {
		for range 3 {
			c := shortsNoArg[pick(len(shortsNoArg))] + shortsNoArg[pick(len(shortsNoArg))]
			if len(shortsNoArg) > 2 && pick(2) == 0 {
				c += shortsNoArg[pick(len(shortsNoArg))]
			}
			add(head, "-"+c, ops())
		}
		if len(shortsArg) > 0 {
			v := values[pick(len(values))]
			add(head, "-"+shortsNoArg[pick(len(shortsNoArg))]+shortsArg[pick(len(shortsArg))]+v, ops())
			add(head, "-"+shortsNoArg[pick(len(shortsNoArg))]+shortsArg[pick(len(shortsArg))], v, ops())
		}
	}
	return out
}

// uniquePrefix is a shortened form of long that no other listed long
// option of the same level starts with: what getopt_long and git's
// parse-options accept as long. The real tool may know options the table
// does not; that difference is what the oracle looks for.
func uniquePrefix(long string, longs []string) string {
	for l := len(long) - 1; l >= 4; l-- {
		p := long[:l]
		if strings.HasSuffix(p, "-") {
			continue
		}
		n := 0
		for _, o := range longs {
			if strings.HasPrefix(o, p) && o != long {
				n++
			}
		}
		if n == 0 {
			// The shortest unique prefix is found by going on; the
			// first one that is unique and leaves at least one
			// letter out is enough for the oracle.
			shortest := p
			for m := l - 1; m >= 4; m-- {
				q := long[:m]
				if slices.ContainsFunc(longs, func(o string) bool { return o != long && strings.HasPrefix(o, q) }) {
					break
				}
				shortest = q
			}
			return shortest
		}
	}
	return ""
}

// call is one generated call, as judged and run.
type call struct {
	rule string // the spec it came from, or "always" / "planted"
	text string
	ws   string // workspace variant name
}

// sample picks count calls from every command round robin, so a bounded
// run touches every command, wraps some in a composition and gives each a
// workspace variant. count <= 0 takes every generated call.
func sample(g *generator, specs []*cmdSpec, seed uint64, count int, variants []string, gitVariants []string) (calls []call, generatedTotal int) {
	rng := newRNG(seed)
	// One pool per top-level command, so that docker's hundred
	// subcommands do not crowd out the hundreds of small tools.
	var pools [][]generated
	byCommand := map[string]int{}
	for _, s := range specs {
		gen := g.generate(s, rng)
		generatedTotal += len(gen)
		i, ok := byCommand[s.words[0]]
		if !ok {
			i = len(pools)
			byCommand[s.words[0]] = i
			pools = append(pools, nil)
		}
		pools[i] = append(pools[i], gen...)
	}
	for _, pool := range pools {
		rng.Shuffle(len(pool), func(i, j int) { pool[i], pool[j] = pool[j], pool[i] })
	}
	rng.Shuffle(len(pools), func(i, j int) { pools[i], pools[j] = pools[j], pools[i] })
	for round := 0; ; round++ {
		took := false
		for _, pool := range pools {
			if round >= len(pool) {
				continue
			}
			took = true
			gen := pool[round]
			text := gen.text
			if rng.IntN(3) == 0 && len(g.p.Wrap) > 0 {
				text = wrap(g.p.Wrap[rng.IntN(len(g.p.Wrap))], text)
			}
			vs := variants
			if strings.HasPrefix(gen.rule, "git") && len(gitVariants) > 0 && rng.IntN(4) != 0 {
				vs = gitVariants
			}
			calls = append(calls, call{rule: gen.rule, text: text, ws: vs[rng.IntN(len(vs))]})
			if count > 0 && len(calls) >= count {
				return calls, generatedTotal
			}
		}
		if !took {
			return calls, generatedTotal
		}
	}
}

func newRNG(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)) }

// wrap puts text into a composition template. A template that quotes
// {} in single quotes only takes text without single quotes.
func wrap(tmpl, text string) string {
	if strings.Contains(tmpl, "'{}'") && strings.Contains(text, "'") {
		return text
	}
	return strings.ReplaceAll(tmpl, "{}", text)
}
