package rules

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// profFuzzSeeds returns the profile testdata and the built-in profiles.
func profFuzzSeeds(f *testing.F) [][]byte {
	f.Helper()
	var seeds [][]byte
	files, _ := filepath.Glob("testdata/profiles/*.toml")
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, data)
	}
	for _, n := range BuiltinProfileNames() {
		data, err := builtinFS.ReadFile("profiles/" + n + ".toml")
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, data)
	}
	return seeds
}

// FuzzLoadProfile: arbitrary bytes never panic; a failure is a
// *ProfileError whose every problem has a line inside the file; a success
// decides without panicking.
func FuzzLoadProfile(f *testing.F) {
	for _, s := range profFuzzSeeds(f) {
		f.Add(s)
	}
	f.Add([]byte("[[rule]]\nid = \"x\"\nwhen = 'call.mutation == \"read\"'\nthen = \"allow\"\nreason = \"r\"\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := LoadProfile("fuzz.toml", data)
		if err != nil {
			pe, ok := errors.AsType[*ProfileError](err)
			if !ok || len(pe.Problems) == 0 {
				t.Fatalf("error %T %v is not a *ProfileError with problems", err, err)
			}
			lines := bytes.Count(data, []byte("\n")) + 1
			for _, pr := range pe.Problems {
				if pr.Line < 0 || pr.Line > lines || pr.File != "fuzz.toml" || pr.Message == "" {
					t.Fatalf("bad problem %+v (file has %d lines)", pr, lines)
				}
			}
			return
		}
		for _, in := range profFuzzInputs() {
			d := p.Decide(in)
			if d.Rule == "" || d.Reason == "" {
				t.Fatalf("decision without rule or reason: %+v", d)
			}
		}
	})
}

func profFuzzInputs() []Input {
	return []Input{
		profInput("Read", profRead, profEv("path-inside", Proven)),
		profInput("Bash", profShellCeil),
		profInput("mcp__x__y", ""),
		func() Input {
			in := profInput("Bash", profShellCeil)
			in.Call.Input = map[string]any{"command": "git status --short"}
			in.Command = &ShellCommand{Argv: []string{"git", "status", "--short"}}
			return in
		}(),
	}
}

// profFuzzRules are the profiles FuzzDecide runs against: the built-ins
// and one that exercises every variable and helper.
const profFuzzRules = `
[[rule]]
id = "deny-delete"
when = 'call.mutation == "delete" && at_least("scope", "bulk")'
then = "deny"
reason = "r"

[[rule]]
id = "ask-input"
when = 'has(call.input.command) && call.input.command.contains("curl")'
then = "ask"
reason = "r"

[[rule]]
id = "ask-session"
when = 'session.called_with("reads_untrusted") && call.external_effect'
then = "ask"
reason = "r"

[[rule]]
id = "sandbox-code"
when = 'has_evidence("runs-code") && at_most("egress", "none")'
then = "sandbox"
reason = "r"

[[rule]]
id = "allow-read"
when = '''call.mutation == "read" && at_most("egress", "internal")
  && !consequence_at_or_above("compensatable") && !call.reads_sensitive
  && evidence.all(e, e.strength != "guess") && ceiling.financial != "direct"'''
then = "allow"
reason = "r"

[[rule]]
id = "allow-command"
when = 'command_is("git status") || command_exactly("ls") || call.argv.size() == 1'
then = "allow"
reason = "r"

[[rule]]
id = "allow-proven"
when = 'proven("path-inside") && call.scope == "single_record" && call.egress == "none" && !call.pure_deletion'
then = "allow"
reason = "r"
`

// FuzzDecide: the same input always gets the same decision, and an
// unlabelled call is never allowed unless a rule that mentions unlabelled
// allows it (none of these profiles has one).
func FuzzDecide(f *testing.F) {
	f.Add(uint64(0), uint8(0), "Read", "cat a.txt", "path-inside", uint8(0), true, false)
	f.Add(uint64(647<<3|4), uint8(0), "Bash", "rm -rf /", "runs-code", uint8(1), false, true)
	f.Add(uint64(123), uint8(3), "mcp__x__y", "", "sensitive-name", uint8(3), true, true)
	profiles := []*Profile{}
	for _, n := range BuiltinProfileNames() {
		p, err := BuiltinProfile(n)
		if err != nil {
			f.Fatal(err)
		}
		profiles = append(profiles, p)
	}
	p, err := LoadProfile("fuzz.toml", []byte(profFuzzRules))
	if err != nil {
		f.Fatal(err)
	}
	profiles = append(profiles, p)
	f.Fuzz(func(t *testing.T, state uint64, narrow uint8, tool, command, kind string, strength uint8, known, unlabelled bool) {
		ceiling := stateLabels(int(state % numStates))
		narrowed := ceiling
		for d := range Dim(NumDims) {
			if narrow&(1<<d) != 0 {
				narrowed.Levels[d] = 0
			}
		}
		in := Input{
			Call:     &Call{Agent: "claude", Tool: tool, Cwd: "/work/repo", Input: map[string]any{"command": command}},
			Key:      "claude/" + tool,
			Ceiling:  &ceiling,
			Narrowed: &narrowed,
			Evidence: []Evidence{{Kind: EvidenceKind(kind), Strength: Strength(strength % 5), Subject: command}},
			Session:  Session{Known: known, Called: map[string]bool{kind: true}, Tools: []string{tool}},
		}
		if unlabelled {
			in.Ceiling, in.Narrowed = nil, nil
		}
		if words := strings.Fields(command); len(words) > 0 && known {
			in.Command = &ShellCommand{Argv: words}
		}
		for _, p := range profiles {
			first := p.Decide(in)
			if again := p.Decide(in); again != first {
				t.Fatalf("%s: %+v then %+v", p.Name(), first, again)
			}
			if unlabelled && (first.Outcome == Allow || first.Outcome == Sandbox) {
				t.Fatalf("%s: unlabelled call got %+v", p.Name(), first)
			}
			if strings.TrimSpace(first.Reason) == "" {
				t.Fatalf("%s: empty reason in %+v", p.Name(), first)
			}
		}
	})
}
