package rules

import (
	"strings"
	"testing"
)

// profLabels parses labels written as six spec values in spec order,
// then facts as +name: "read single_record reversible none none
// third_party_content +open_world". It panics on a typo, so tables fail
// loudly.
func profLabels(s string) *Labels {
	var l Labels
	fields := strings.Fields(s)
	for i, d := range Dims() {
		v, err := d.Parse(fields[i])
		if err != nil {
			panic(err)
		}
		l.Levels[d] = v
	}
	for _, f := range fields[NumDims:] {
		fact, err := ParseFact(strings.TrimPrefix(f, "+"))
		if err != nil {
			panic(err)
		}
		l.Facts[fact] = true
	}
	return &l
}

// Labels the tests use often.
const (
	profRead        = "read single_record reversible none none third_party_content"
	profReadAccount = "read account_wide reversible none none third_party_content +open_world"
	profWriteFile   = "delete single_record irreversible none none first_party_structured +open_world"
	profRmFile      = "delete single_record irreversible none none first_party_structured +open_world +pure_deletion"
	profShellCeil   = "delete account_wide irreversible external direct third_party_content +open_world"
	profFetch       = "read account_wide reversible external none third_party_content +open_world"
	profSendMail    = "create single_record irreversible external none first_party_structured"
	profRefund      = "create single_record irreversible none direct first_party_structured"
	profDropPolicy  = "delete account_wide irreversible none none first_party_structured +configuration_object"
	profDropRepo    = "delete account_wide irreversible none none first_party_structured +pure_deletion"
	profChangeOrg   = "update account_wide irreversible none none first_party_structured"
	profTestsRun    = "delete bulk irreversible none none third_party_content +open_world"
	profMCPUpdate   = "update single_record reversible_with_effort internal none first_party_structured"
	profMCPLocalEdt = "update single_record reversible none none first_party_structured"
)

// profInput builds an input for tool with the given labels (nil for an
// unlabelled tool), narrowed to themselves.
func profInput(tool, labels string, ev ...Evidence) Input {
	in := Input{
		Call:     &Call{Agent: "claude", Phase: PreTool, Cwd: "/work/repo", Tool: tool, Input: map[string]any{}},
		Key:      "claude/" + tool,
		Evidence: ev,
		Session:  Session{Known: true},
	}
	if labels != "" {
		in.Ceiling = profLabels(labels)
		in.Narrowed = in.Ceiling
	}
	return in
}

func profEv(kind EvidenceKind, s Strength) Evidence {
	return Evidence{Kind: kind, Strength: s, Subject: "x", Detail: "test", Effect: "none"}
}

// profLoad loads a profile from TOML text or fails the test.
func profLoad(t testing.TB, src string) *Profile {
	t.Helper()
	p, err := LoadProfile("test.toml", []byte(src))
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	return p
}

// profRule renders one [[rule]] table.
func profRule(id, when, then string) string {
	return "[[rule]]\nid = \"" + id + "\"\nwhen = '''" + when + "'''\nthen = \"" + then + "\"\nreason = \"reason of " + id + "\"\n\n"
}
