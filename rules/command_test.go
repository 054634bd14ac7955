package rules

import (
	"strings"
	"testing"
)

// shellInput is a Bash call whose text is command; argv, when not nil, is
// the engine's proof that it runs exactly that one program.
func shellInput(command string, argv []string, ev ...Evidence) Input {
	in := profInput("Bash", profTestsRun, ev...)
	in.Call.Input = map[string]any{"command": command}
	if argv != nil {
		in.Command = &ShellCommand{Argv: argv}
	}
	return in
}

// TestCommandIs: command_is matches the proven program's leading words,
// command_exactly all of them; neither matches a call the engine did not
// prove to be one program, nor one whose arguments narrowd found outside
// the workspace or holding a label at its ceiling.
func TestCommandIs(t *testing.T) {
	t.Parallel()
	outside := Evidence{Kind: KindPathOutside, Strength: Proven, Subject: "/etc", Effect: NoEffect}
	raised := Evidence{Kind: KindGitConfigRunsCode, Strength: PointInTime, Subject: ".git/config", Effect: Raise(Scope)}
	inside := Evidence{Kind: KindPathInside, Strength: Proven, Subject: "/work/repo/a", Effect: NoEffect}
	tests := []struct {
		when string
		in   Input
		want bool
	}{
		{`command_is("git status")`, shellInput("git status", []string{"git", "status"}), true},
		{`command_is("git status")`, shellInput("git status --short", []string{"git", "status", "--short"}), true},
		{`command_is("git  status ")`, shellInput("git status", []string{"git", "status"}), true},
		{`command_is("git")`, shellInput("git status", []string{"git", "status"}), true},
		{`command_is("git status")`, shellInput("git status a", []string{"git", "status", "a"}, inside), true},
		{`command_is("git status")`, shellInput("git status; rm -rf ~/x", nil), false},
		{`command_is("git status")`, shellInput("git", []string{"git"}), false},
		{`command_is("git status")`, shellInput("git statusx", []string{"git", "statusx"}), false},
		{`command_is("git status")`, shellInput("git -c a=b status", []string{"git", "-c", "a=b", "status"}), false},
		{`command_is("git status")`, shellInput("git status /etc", []string{"git", "status", "/etc"}, outside), false},
		{`command_is("git status")`, shellInput("git status", []string{"git", "status"}, raised), false},
		{`command_is("git status")`, profInput("Read", profRead), false},
		{`command_exactly("git status")`, shellInput("git status", []string{"git", "status"}), true},
		{`command_exactly("git status")`, shellInput("git status --short", []string{"git", "status", "--short"}), false},
		{`call.program == "git" && call.argv == ["git", "status"]`, shellInput("git status", []string{"git", "status"}), true},
		{`call.argv.size() > 1 && call.argv[1] == "status"`, shellInput("git status", []string{"git", "status"}), true},
		{`has(call.program)`, shellInput("git status; x", nil), false},
	}
	for _, tt := range tests {
		for _, then := range []string{"allow", "ask"} {
			p := profLoad(t, profRule("r", tt.when, then))
			if !p.UsesCommand() {
				t.Errorf("%s: UsesCommand is false", tt.when)
			}
			d := p.Decide(tt.in)
			if got := d.Rule == "r"; got != tt.want {
				t.Errorf("%s (%s) on %q: matched %v, want %v", tt.when, then, tt.in.Call.Input["command"], got, tt.want)
			}
		}
	}
	if profLoad(t, profRule("r", `call.mutation == "read"`, "allow")).UsesCommand() {
		t.Error("a profile that never reads the command fact uses it")
	}
}

// TestLetRulesMayNotReadText: a rule that lets a call run may not read
// call.input (allow and sandbox) or an evidence's subject or detail
// (allow); the problem names the rule's line. Ask and deny rules may.
func TestLetRulesMayNotReadText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		when    string
		then    string
		refused string
	}{
		{`call.input.command.startsWith("git status")`, "allow", "may not read call.input"},
		{`call.input.command.startsWith("git status")`, "sandbox", "may not read call.input"},
		{`call.input.command.startsWith("git status")`, "ask", ""},
		{`call.input.command.startsWith("git status")`, "deny", ""},
		{`has(call.input.command) && call.input.command.contains("status")`, "allow", "may not read call.input"},
		{`call.input.command.matches("^git status")`, "allow", "may not read call.input"},
		{`call.input.command.endsWith("status")`, "allow", "may not read call.input"},
		{`call.input.command == "git status"`, "allow", "may not read call.input"},
		{`call.input.command in ["git status", "ls"]`, "allow", "may not read call.input"},
		{`call["input"]["command"] == "git status"`, "allow", "may not read call.input"},
		{`call.input.file_path.startsWith("/work/repo/")`, "allow", "may not read call.input"},
		{`size(call.input) == 1`, "allow", "may not read call.input"},
		{`evidence.exists(e, e.kind == "known-command" && e.subject.startsWith("git status"))`, "allow", "may not read an evidence's subject"},
		{`evidence.exists(e, e["detail"] == "x")`, "allow", "may not read an evidence's detail"},
		{`evidence.exists(e, e.kind == "runs-code" && e.subject.startsWith("go test"))`, "sandbox", ""},
		{`evidence.exists(e, e.kind == "known-command" && e.subject.startsWith("git status"))`, "ask", ""},
		{`evidence.filter(e, e.kind == "snapshot").size() == 1`, "allow", ""},
		{`command_is("git status")`, "allow", ""},
	}
	for _, tt := range tests {
		src := "# header\n" + profRule("r", tt.when, tt.then)
		problems := CheckProfile("team.toml", []byte(src))
		if tt.refused == "" {
			if len(problems) > 0 {
				t.Errorf("%s (%s): refused: %v", tt.when, tt.then, problems)
			}
			continue
		}
		if len(problems) == 0 {
			t.Errorf("%s (%s): accepted, want refused", tt.when, tt.then)
			continue
		}
		p := problems[0]
		if p.Line != 4 || p.Rule != "r" || !strings.Contains(p.Message, tt.refused) || !strings.Contains(p.Message, "command_is") ||
			!strings.HasPrefix(p.Error(), "team.toml:4: ") {
			t.Errorf("%s (%s): got %v, want team.toml:4 saying %q with a command_is hint", tt.when, tt.then, problems, tt.refused)
		}
	}
}

// TestLetRulesSeeNoText: what loading cannot see (a loop over call's
// keys, an index computed at run time) still finds no input and no
// evidence text when a rule lets a call run.
func TestLetRulesSeeNoText(t *testing.T) {
	t.Parallel()
	in := shellInput("git status; rm -rf ~/x", nil, Evidence{Kind: KindKnownCommand, Strength: Proven, Subject: "git status", Detail: "d", Effect: NoEffect})
	tests := []struct {
		when string
		then string
		want bool
	}{
		{`call.exists(k, k == "input")`, "allow", false},
		{`call.exists(k, k == "input")`, "sandbox", false},
		{`call.exists(k, k == "input")`, "ask", true},
		{`evidence.exists(e, e.exists(k, e[k] == "git status"))`, "allow", false},
		{`evidence.exists(e, e.exists(k, e[k] == "git status"))`, "sandbox", true},
		{`evidence.exists(e, e.exists(k, e[k] == "git status"))`, "deny", true},
	}
	for _, tt := range tests {
		p := profLoad(t, profRule("r", tt.when, tt.then))
		if got := p.Decide(in).Rule == "r"; got != tt.want {
			t.Errorf("%s (%s): matched %v, want %v", tt.when, tt.then, got, tt.want)
		}
	}
}

// TestCommandPatterns: a command pattern is a literal of plain words.
func TestCommandPatterns(t *testing.T) {
	t.Parallel()
	tests := []struct{ when, problem string }{
		{`command_is(call.tool)`, "takes a string literal"},
		{`command_is("")`, "names no program"},
		{`command_is("git status; rm")`, "is not a plain word"},
		{`command_exactly("git $(x)")`, "is not a plain word"},
		{`command_is("npm", "test")`, "takes 1 argument"},
		{`command_is("npm run test:unit") && command_exactly("go test ./...")`, ""},
	}
	for _, tt := range tests {
		problems := CheckProfile("t.toml", []byte(profRule("r", tt.when, "ask")))
		switch {
		case tt.problem == "" && len(problems) > 0:
			t.Errorf("%s: refused: %v", tt.when, problems)
		case tt.problem != "" && (len(problems) != 1 || !strings.Contains(problems[0].Message, tt.problem) || problems[0].Line != 3):
			t.Errorf("%s: got %v, want one problem on line 3 with %q", tt.when, problems, tt.problem)
		}
	}
}

// TestCommandTightenOnly: a grant behind command_is is still enumerated
// over the labels, with a sample running that command.
func TestCommandTightenOnly(t *testing.T) {
	t.Parallel()
	problems := CheckProfile("t.toml", []byte(profRule("r", `command_is("npm test") && call.open_world`, "allow")))
	if len(problems) != 1 || !strings.Contains(problems[0].Message, `sample running npm test`) {
		t.Fatalf("got %v, want the tighten-only check to refuse it on the npm test sample", problems)
	}
	if problems := CheckProfile("t.toml", []byte(profRule("r", `command_is("npm test")`, "allow"))); len(problems) > 0 {
		t.Fatalf("refused: %v", problems)
	}
}

// TestUnknownEvidenceKind: a kind narrowd never emits is an error with
// its line, wherever the profile names it.
func TestUnknownEvidenceKind(t *testing.T) {
	t.Parallel()
	tests := []struct{ when, hint string }{
		{`!has_evidence("sensitve-name") && call.mutation == "read"`, `did you mean "sensitive-name"?`},
		{`proven("path-insde")`, `did you mean "path-inside"?`},
		{`evidence.exists(e, e.kind == "runs_code")`, `did you mean "runs-code"?`},
		{`evidence.all(e, e.kind != "snapshots")`, `did you mean "snapshot"?`},
		{`evidence.exists(e, e["kind"] in ["unproven", "totally-unrelated-kind"])`, `unknown evidence kind "totally-unrelated-kind"`},
		{`!has_evidence("sensitive-" + "nam")`, `has_evidence takes a string literal`},
		{`evidence.exists(e, e.effect == "egress<=nowhere")`, `no evidence has effect "egress<=nowhere"`},
		{`evidence.exists(e, e.strength == "prooven")`, `unknown evidence strength "prooven"`},
	}
	for _, tt := range tests {
		for _, then := range []string{"allow", "deny"} {
			src := "name = \"team\"\n\n" + profRule("r", tt.when, then)
			_, err := LoadProfile("team.toml", []byte(src))
			if err == nil || !strings.Contains(err.Error(), "team.toml:5: ") || !strings.Contains(err.Error(), tt.hint) {
				t.Errorf("%s (%s): got %v, want team.toml:5 with %q", tt.when, then, err, tt.hint)
			}
		}
	}
	for _, ok := range []string{`has_evidence("sensitive-name")`, `evidence.exists(e, e.kind == "snapshot")`, `call.input.kind == "whatever"`,
		`evidence.exists(e, e.effect == "egress<=none" && e.strength == "established")`, `evidence.exists(e, e.effect == "fact:open_world=false" || e.effect == "raise:scope" || e.effect == "none")`} {
		if problems := CheckProfile("t.toml", []byte(profRule("r", ok, "deny"))); len(problems) > 0 {
			t.Errorf("%s: refused: %v", ok, problems)
		}
	}
}

// TestEffects: each constructor reads back as what it built, and the
// text is the public JSON form.
func TestEffects(t *testing.T) {
	t.Parallel()
	for _, d := range Dims() {
		for v := range d.Values() {
			e := Bound(d, Level(v))
			if gd, gv, ok := e.Bound(); !ok || gd != d || gv != Level(v) || !e.Valid() {
				t.Errorf("Bound(%s, %d) = %q reads back as %v %v %v", d, v, e, gd, gv, ok)
			}
		}
		if e := Raise(d); string(e) != "raise:"+d.String() {
			t.Errorf("Raise(%s) = %q", d, e)
		} else if gd, ok := e.Raised(); !ok || gd != d {
			t.Errorf("Raise(%s) reads back as %v %v", d, gd, ok)
		}
	}
	for f := range Fact(NumFacts) {
		e := FactFalse(f)
		if gf, ok := e.FactFalse(); !ok || gf != f || string(e) != "fact:"+f.String()+"=false" {
			t.Errorf("FactFalse(%s) = %q reads back as %v %v", f, e, gf, ok)
		}
	}
	for _, bad := range []Effect{"egress<=lots", "raise:nothing", "fact:open_world=true", "scope", "fact:nope=false"} {
		if bad.Valid() {
			t.Errorf("%q is valid", bad)
		}
	}
	if string(Bound(Egress, 0)) != "egress<=none" || !NoEffect.Valid() {
		t.Error("effect texts changed: they are public JSON")
	}
}
