package rules

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Dim names one of the six labels of spec §3, in the order the spec asks
// them: mutation → scope → reversibility → egress → financial →
// returns_class.
type Dim uint8

// The six labels.
const (
	Mutation Dim = iota
	Scope
	Reversibility
	Egress
	Financial
	ReturnsClass

	// NumDims is the number of labels.
	NumDims = 6
)

// dimInfo is the closed value set of each label, least risky first.
var dimInfo = [NumDims]struct {
	name   string
	values []string
}{
	Mutation:      {"mutation", []string{"read", "create", "update", "delete"}},
	Scope:         {"scope", []string{"single_record", "bulk", "account_wide"}},
	Reversibility: {"reversibility", []string{"reversible", "reversible_with_effort", "irreversible"}},
	Egress:        {"egress", []string{"none", "internal", "external"}},
	Financial:     {"financial", []string{"none", "indirect", "direct"}},
	ReturnsClass:  {"returns_class", []string{"first_party_structured", "third_party_content"}},
}

// Dims lists the six labels in spec order.
func Dims() []Dim { return []Dim{Mutation, Scope, Reversibility, Egress, Financial, ReturnsClass} }

// String returns the label's spec name, such as "mutation".
func (d Dim) String() string {
	if d >= NumDims {
		return fmt.Sprintf("dim(%d)", uint8(d))
	}
	return dimInfo[d].name
}

// Values returns the label's value names, least risky first.
func (d Dim) Values() []string { return dimInfo[d].values }

// Max returns the riskiest level of the label.
func (d Dim) Max() Level { return Level(len(dimInfo[d].values) - 1) }

// ParseDim returns the label named s. Unknown names are an error, never a
// default (spec P3).
func ParseDim(s string) (Dim, error) {
	for d := range Dim(NumDims) {
		if dimInfo[d].name == s {
			return d, nil
		}
	}
	return 0, fmt.Errorf("unknown label %q", s)
}

// Level is a position in one label's ordered value set: 0 is the least
// risky value. A Level means nothing without its [Dim].
type Level uint8

// Name returns the spec value of level l on label d, such as "delete".
func (d Dim) Name(l Level) string {
	if d >= NumDims || int(l) >= len(dimInfo[d].values) {
		return fmt.Sprintf("%s(%d)", d, l)
	}
	return dimInfo[d].values[l]
}

// Parse returns the level of value s on label d. An unknown value is an
// error that names the allowed ones.
func (d Dim) Parse(s string) (Level, error) {
	if d >= NumDims {
		return 0, fmt.Errorf("unknown label %d", d)
	}
	for i, v := range dimInfo[d].values {
		if v == s {
			return Level(i), nil
		}
	}
	return 0, fmt.Errorf("unknown %s value %q (want one of %s)", d, s, strings.Join(dimInfo[d].values, ", "))
}

// Fact names one of the facts that sit beside the labels (spec §4). They
// are not labels and never verdicts.
type Fact uint8

// The facts. Unconstrained addressing (§4.3) is recorded as OpenWorld.
const (
	OpenWorld Fact = iota
	ConfigurationObject
	PureDeletion

	// NumFacts is the number of facts.
	NumFacts = 3
)

var factNames = [NumFacts]string{"open_world", "configuration_object", "pure_deletion"}

// String returns the fact's spec name.
func (f Fact) String() string {
	if f >= NumFacts {
		return fmt.Sprintf("fact(%d)", uint8(f))
	}
	return factNames[f]
}

// ParseFact returns the fact named s.
func ParseFact(s string) (Fact, error) {
	for f := range Fact(NumFacts) {
		if factNames[f] == s {
			return f, nil
		}
	}
	return 0, fmt.Errorf("unknown fact %q", s)
}

// Labels is one complete set of the six labels plus the facts. The zero
// value is the least risky set (read, single_record, reversible, none,
// none, first_party_structured) with every fact false; it is never a
// default for a tool nobody labelled, which has no Labels at all.
type Labels struct {
	Levels [NumDims]Level
	Facts  [NumFacts]bool
}

// Get returns the level of label d.
func (l Labels) Get(d Dim) Level { return l.Levels[d] }

// Value returns the spec value name of label d.
func (l Labels) Value(d Dim) string { return d.Name(l.Levels[d]) }

// Fact reports whether fact f holds.
func (l Labels) Fact(f Fact) bool { return l.Facts[f] }

// With returns a copy of l with label d set to level v.
func (l Labels) With(d Dim, v Level) Labels {
	l.Levels[d] = v
	return l
}

// AtMost reports whether every label of l is at most as risky as the same
// label of m. Facts are not compared.
func (l Labels) AtMost(m Labels) bool {
	for d := range Dim(NumDims) {
		if l.Levels[d] > m.Levels[d] {
			return false
		}
	}
	return true
}

// Join returns the riskier value of each label of l and m, and each fact
// that holds in either. A compound action is as risky as its riskiest part.
func (l Labels) Join(m Labels) Labels {
	for d := range Dim(NumDims) {
		l.Levels[d] = max(l.Levels[d], m.Levels[d])
	}
	for f := range Fact(NumFacts) {
		l.Facts[f] = l.Facts[f] || m.Facts[f]
	}
	return l
}

// Meet returns the less risky value of each label of l and m. Facts are
// taken from l: narrowing a label never invents or removes a fact.
func (l Labels) Meet(m Labels) Labels {
	for d := range Dim(NumDims) {
		l.Levels[d] = min(l.Levels[d], m.Levels[d])
	}
	return l
}

// Max returns the riskiest value of every label, the domain ceiling of
// spec §4, with open_world set.
func MaxLabels() Labels {
	var l Labels
	for d := range Dim(NumDims) {
		l.Levels[d] = d.Max()
	}
	l.Facts[OpenWorld] = true
	return l
}

// Map returns the labels and facts as names, the shape profiles and JSON
// see: {"mutation": "read", …, "open_world": false, …}.
func (l Labels) Map() map[string]any {
	m := make(map[string]any, NumDims+NumFacts)
	for d := range Dim(NumDims) {
		m[d.String()] = l.Value(d)
	}
	for f := range Fact(NumFacts) {
		m[f.String()] = l.Facts[f]
	}
	return m
}

// String formats l compactly in spec order, for people.
func (l Labels) String() string {
	var b strings.Builder
	for d := range Dim(NumDims) {
		if d > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(l.Value(d))
	}
	for f := range Fact(NumFacts) {
		if l.Facts[f] {
			b.WriteString(" +")
			b.WriteString(f.String())
		}
	}
	return b.String()
}

// MarshalJSON writes the labels in spec order, then the facts.
func (l Labels) MarshalJSON() ([]byte, error) {
	// Every audit record carries labels, so this avoids fmt; names and
	// values are fixed identifiers, but quoting keeps it correct anyway.
	b := make([]byte, 0, 256)
	b = append(b, '{')
	for d := range Dim(NumDims) {
		if d > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, d.String())
		b = append(b, ':')
		b = strconv.AppendQuote(b, l.Value(d))
	}
	for f := range Fact(NumFacts) {
		b = append(b, ',')
		b = strconv.AppendQuote(b, f.String())
		b = append(b, ':')
		b = strconv.AppendBool(b, l.Facts[f])
	}
	return append(b, '}'), nil
}

// UnmarshalJSON reads labels strictly: all six labels must be present with
// known values; facts may be omitted (false) but unknown keys are errors.
func (l *Labels) UnmarshalJSON(data []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	m := make(map[string]any, len(raw))
	for k, v := range raw {
		var x any
		if err := json.Unmarshal(v, &x); err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
		m[k] = x
	}
	got, err := LabelsFromMap(m)
	if err != nil {
		return err
	}
	*l = got
	return nil
}

// LabelsFromMap reads labels from decoded JSON or TOML. Every label is
// required, every value must be one of the spec's, facts must be booleans,
// and an unknown key is an error (spec P3: no new values, no defaults).
func LabelsFromMap(m map[string]any) (Labels, error) {
	var l Labels
	var errs []string
	seen := make(map[string]bool, len(m))
	for d := range Dim(NumDims) {
		name := d.String()
		seen[name] = true
		v, ok := m[name]
		if !ok {
			errs = append(errs, fmt.Sprintf("missing label %q", name))
			continue
		}
		s, ok := v.(string)
		if !ok {
			errs = append(errs, fmt.Sprintf("label %q must be a string", name))
			continue
		}
		lv, err := d.Parse(s)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		l.Levels[d] = lv
	}
	for f := range Fact(NumFacts) {
		name := f.String()
		seen[name] = true
		v, ok := m[name]
		if !ok {
			continue
		}
		b, ok := v.(bool)
		if !ok {
			errs = append(errs, fmt.Sprintf("fact %q must be true or false", name))
			continue
		}
		l.Facts[f] = b
	}
	var unknown []string
	for k := range m {
		if !seen[k] {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	for _, k := range unknown {
		errs = append(errs, fmt.Sprintf("unknown label %q", k))
	}
	if len(errs) > 0 {
		return Labels{}, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return l, nil
}
