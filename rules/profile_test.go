package rules

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestDecidePrecedence(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		rules    []string // outcome of each rule; all match
		wantRule string
		want     Outcome
	}{
		{"allow-only", []string{"allow"}, "r0", Allow},
		{"sandbox-beats-allow", []string{"allow", "sandbox"}, "r1", Sandbox},
		{"ask-beats-sandbox", []string{"sandbox", "ask", "allow"}, "r1", Ask},
		{"deny-beats-all", []string{"allow", "ask", "deny", "sandbox"}, "r2", Deny},
		{"first-of-equals-names", []string{"ask", "ask"}, "r0", Ask},
		{"deny-last-in-file", []string{"allow", "allow", "deny"}, "r2", Deny},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var src strings.Builder
			for i, then := range tt.rules {
				src.WriteString(profRule("r"+string(rune('0'+i)), `call.mutation == "read"`, then))
			}
			p := profLoad(t, src.String())
			got := p.Decide(profInput("Read", profRead))
			if got.Outcome != tt.want || got.Rule != tt.wantRule || got.Reason != "reason of "+tt.wantRule {
				t.Errorf("got %+v, want %s by %s", got, tt.want, tt.wantRule)
			}
		})
	}
}

func TestDecideNoMatch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		src  string
		in   Input
	}{
		{"empty-profile", "", profInput("Read", profRead)},
		{"nothing-matches", profRule("reads", `call.mutation == "read"`, "allow"), profInput("Write", profWriteFile)},
		{"unlabelled-skips-label-rules", profRule("reads", `call.mutation == "read"`, "allow"), profInput("mcp__x", "")},
		{"error-is-no-match", profRule("bad-index", `call.input.nope == "x"`, "deny"), profInput("Read", profRead)},
		{"non-bool-is-no-match", profRule("dyn", `call.input.flag`, "deny"), func() Input {
			in := profInput("Read", profRead)
			in.Call.Input = map[string]any{"flag": "yes"}
			return in
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := profLoad(t, tt.src).Decide(tt.in)
			want := Decision{Outcome: Ask, Rule: "no-match", Reason: "no profile rule allowed this call"}
			if got != want {
				t.Errorf("got %+v, want %+v", got, want)
			}
		})
	}
}

// TestDecideEvalErrors: a rule that fails to evaluate does not match, and
// a failure never lets a call run that the failed rule might have stopped.
func TestDecideEvalErrors(t *testing.T) {
	t.Parallel()
	const (
		fails = `call.input.command.startsWith("rm")` // Read has no command
		// failsLets fails too, without reading call.input, which a rule
		// that lets a call run may not.
		failsLets = `at_most(call.tool, "none")`
		matches   = `call.mutation == "read"`
		notBool   = `call.input`
	)
	type r struct{ id, when, then string }
	tests := []struct {
		name   string
		rules  []r
		labels string
		want   string
	}{
		{"failed-deny-blocks-allow", []r{{"d", fails, "deny"}, {"a", matches, "allow"}}, profRead, "ask error-evaluation"},
		{"failed-ask-blocks-sandbox", []r{{"q", fails, "ask"}, {"s", matches, "sandbox"}}, profRead, "ask error-evaluation"},
		{"failed-sandbox-blocks-allow", []r{{"s", failsLets, "sandbox"}, {"a", matches, "allow"}}, profRead, "ask error-evaluation"},
		{"non-bool-deny-blocks-allow", []r{{"d", notBool, "deny"}, {"a", matches, "allow"}}, profRead, "ask error-evaluation"},
		{"failed-deny-then-ask-asks", []r{{"d", fails, "deny"}, {"q", matches, "ask"}}, profRead, "ask q"},
		{"failed-deny-then-deny-denies", []r{{"d", fails, "deny"}, {"d2", matches, "deny"}}, profRead, "deny d2"},
		{"failed-deny-alone-no-match", []r{{"d", fails, "deny"}}, profRead, "ask no-match"},
		{"failed-allow-no-match", []r{{"a", failsLets + ` && call.mutation == "read"`, "allow"}}, profRead, "ask no-match"},
		{"error-or-true-is-true", []r{{"a", failsLets + ` || call.mutation == "read"`, "allow"}}, profRead, "allow a"},
		{"failed-allow-beside-allow", []r{{"a", failsLets, "allow"}, {"b", matches, "allow"}}, profRead, "allow b"},
		{"skipped-is-not-failed", []r{{"d", `call.mutation == "delete"`, "deny"}, {"a", `call.unlabelled`, "allow"}}, "", "allow a"},
		{"guarded-rule-is-quiet", []r{{"d", `has(call.input.command) && ` + fails, "deny"}, {"a", matches, "allow"}}, profRead, "allow a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var src strings.Builder
			for _, r := range tt.rules {
				src.WriteString(profRule(r.id, r.when, r.then))
			}
			d := profLoad(t, src.String()).Decide(profInput("Read", tt.labels))
			if got := d.Outcome.String() + " " + d.Rule; got != tt.want {
				t.Errorf("got %q (%s), want %q", got, d.Reason, tt.want)
			}
		})
	}
	t.Run("cost-limit", func(t *testing.T) {
		t.Parallel()
		p := profLoad(t, profRule("d", `call.input.items.all(a, call.input.items.all(b, a != b || a == b))`, "deny")+
			profRule("a", matches, "allow"))
		in := profInput("Read", profRead)
		items := make([]any, 1000)
		for i := range items {
			items[i] = float64(i)
		}
		in.Call.Input = map[string]any{"items": items}
		if d := p.Decide(in); d.Rule != "error-evaluation" {
			t.Errorf("got %+v, want error-evaluation", d)
		}
		in.Call.Input = map[string]any{"items": items[:10]}
		if d := p.Decide(in); d.Rule != "d" {
			t.Errorf("got %+v, want d", d)
		}
	})
}

func TestDecideUnlabelled(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		when     string
		then     string
		labels   string // empty: unlabelled
		wantRule string
	}{
		{"deny-on-delete-never-fires-unlabelled", `call.mutation == "delete"`, "deny", "", "no-match"},
		{"deny-on-delete-fires-labelled", `call.mutation == "delete"`, "deny", profWriteFile, "r"},
		{"negated-label-rule-skipped", `!(call.mutation == "read")`, "deny", "", "no-match"},
		{"absent-key-presence-skipped", `!has(call.mutation)`, "deny", "", "no-match"},
		{"unlabelled-ask-fires", `call.unlabelled`, "ask", "", "r"},
		{"unlabelled-ask-quiet-when-labelled", `call.unlabelled`, "ask", profRead, "no-match"},
		{"labelled-mention-counts", `!call.labelled`, "ask", "", "r"},
		{"mention-sees-absent-labels", `call.unlabelled && has(call.mutation)`, "ask", "", "no-match"},
		{"ceiling-empty-when-unlabelled", `call.unlabelled && size(ceiling) == 0`, "ask", "", "r"},
		{"risk-class-unlabelled", `call.unlabelled && call.risk_class == "unlabelled"`, "ask", "", "r"},
		{"risk-class-unlabelled-mentions", `call.risk_class == "unlabelled"`, "ask", "", "r"},
		{"risk-class-other-skipped", `call.risk_class != "read_only"`, "deny", "", "no-match"},
		{"helper-errors-when-unlabelled", `call.unlabelled && !at_least("scope", "bulk")`, "ask", "", "no-match"},
		{"index-form-mentions", `call["unlabelled"]`, "ask", "", "r"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := profLoad(t, profRule("r", tt.when, tt.then))
			got := p.Decide(profInput("mcp__tracker__delete", tt.labels))
			if got.Rule != tt.wantRule {
				t.Errorf("got %+v, want rule %s", got, tt.wantRule)
			}
		})
	}
}

func TestDecideSession(t *testing.T) {
	t.Parallel()
	const when = `call.external_effect && session.called_with("reads_untrusted")`
	tests := []struct {
		name    string
		session Session
		want    string
	}{
		{"unknown-counts-as-tainted", Session{}, "r"},
		{"known-clean", Session{Known: true}, "no-match"},
		{"known-other-label", Session{Known: true, Called: map[string]bool{"destructive": true}}, "no-match"},
		{"known-tainted", Session{Known: true, Called: map[string]bool{"reads_untrusted": true}}, "r"},
	}
	p := profLoad(t, profRule("r", when, "deny")+profRule("tools", `"claude/Read" in session.tools && !session.known`, "ask"))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := profInput("WebFetch", profFetch)
			in.Session = tt.session
			if got := p.Decide(in); got.Rule != tt.want {
				t.Errorf("got %+v, want rule %s", got, tt.want)
			}
		})
	}
	t.Run("unknown-session-has-no-tools", func(t *testing.T) {
		t.Parallel()
		p := profLoad(t, profRule("d", `!("claude/WebFetch" in session.tools)`, "allow")+profRule("k", `!session.known && !has(session.tools)`, "ask"))
		in := profInput("Read", profRead)
		in.Session = Session{Tools: []string{"claude/Read"}}
		if got := p.Decide(in); got.Rule != "k" {
			t.Errorf("got %+v, want k", got)
		}
		in.Session.Known = true
		if got := p.Decide(in); got.Rule != "d" {
			t.Errorf("got %+v, want d", got)
		}
	})
	t.Run("session-fields", func(t *testing.T) {
		t.Parallel()
		p := profLoad(t, profRule("r", `session.known && "claude/Read" in session.tools && size(session.tools) == 2`, "ask"))
		in := profInput("Read", profRead)
		in.Session = Session{Known: true, Tools: []string{"claude/Bash", "claude/Read"}}
		if got := p.Decide(in); got.Rule != "r" {
			t.Errorf("got %+v", got)
		}
	})
}

// TestHelpers checks each variable and helper of the CEL environment.
// Each case is one ask rule; it matches or it does not.
func TestHelpers(t *testing.T) {
	t.Parallel()
	withInput := func(in Input, m map[string]any) Input {
		in.Call.Input = m
		return in
	}
	ev := []Evidence{
		profEv("path-inside", Proven),
		profEv("sandbox-exec", Established),
		profEv("link-escape", PointInTime),
		profEv("sensitive-name", Guess),
	}
	read := profInput("Read", profRead, ev...)
	tests := []struct {
		name string
		when string
		in   Input
		want bool
	}{
		{"at-least-equal", `at_least("scope", "single_record")`, read, true},
		{"at-least-above", `at_least("scope", "bulk")`, read, false},
		{"at-least-below", `at_least("mutation", "update")`, profInput("Write", profWriteFile), true},
		{"at-most-equal", `at_most("egress", "none")`, read, true},
		{"at-most-below", `at_most("egress", "none")`, profInput("WebFetch", profFetch), false},
		{"at-most-dynamic-unknown-label-errors", `at_most(call.tool, "none")`, read, false},
		{"at-most-dynamic-unknown-value-errors", `!at_most("egress", call.tool)`, read, false},
		{"consequence-irreversible", `consequence_at_or_above("irreversible")`, profInput("Write", profWriteFile), true},
		{"consequence-forward-recoverable-is-irreversible-only", `consequence_at_or_above("forward_recoverable")`, profInput("x", profMCPUpdate), false},
		{"consequence-compensatable", `consequence_at_or_above("compensatable")`, profInput("x", profMCPUpdate), true},
		{"consequence-reversible-read", `consequence_at_or_above("compensatable")`, read, false},
		{"has-evidence-any-strength", `has_evidence("link-escape")`, read, true},
		{"has-evidence-absent", `has_evidence("runs-code")`, read, false},
		{"proven-proven", `proven("path-inside")`, read, true},
		{"proven-established", `proven("sandbox-exec")`, read, true},
		{"proven-point-in-time-is-not", `proven("link-escape")`, read, false},
		{"proven-guess-is-not", `proven("sensitive-name")`, read, false},
		{"evidence-list", `evidence.exists(e, e.kind == "sensitive-name" && e.strength == "guess")`, read, true},
		{"evidence-size", `size(evidence) == 4`, read, true},
		{"reads-sensitive", `call.reads_sensitive`, read, true},
		{"reads-sensitive-absent", `call.reads_sensitive`, profInput("Read", profRead), false},
		{"reads-untrusted", `call.reads_untrusted`, read, true},
		{"external-effect-fetch", `call.external_effect`, profInput("WebFetch", profFetch), true},
		{"external-effect-internal-write", `call.external_effect`, profInput("x", profMCPUpdate), true},
		{"external-effect-local-write", `call.external_effect`, profInput("x", profMCPLocalEdt), false},
		{"destructive-overwrite", `call.destructive`, profInput("Write", profWriteFile), true},
		{"destructive-send-is-not", `call.destructive`, profInput("send", profSendMail), false},
		{"moves-money", `call.moves_money`, profInput("refund", profRefund), true},
		{"risk-class", `call.risk_class == "financial"`, profInput("refund", profRefund), true},
		{"facts", `call.open_world && !call.pure_deletion && !call.configuration_object`, profInput("Write", profWriteFile), true},
		{"ceiling-differs", `ceiling.scope == "account_wide" && call.scope == "single_record"`, func() Input {
			in := profInput("Read", profReadAccount)
			in.Narrowed = profLabels(profRead + " +open_world")
			return in
		}(), true},
		{"narrowed-nil-uses-ceiling", `call.scope == "account_wide"`, func() Input {
			in := profInput("Read", profReadAccount)
			in.Narrowed = nil
			return in
		}(), true},
		{"identity", `call.agent == "claude" && call.tool == "Read" && call.key == "claude/Read" && call.cwd == "/work/repo" && call.labelled && !call.unlabelled`, read, true},
		{"input", `call.input.file_path.startsWith("/work/repo/")`, withInput(profInput("Read", profRead), map[string]any{"file_path": "/work/repo/a.go"}), true},
		{"input-missing-key-errors", `call.input.file_path.startsWith("/")`, read, false},
		{"input-has", `!has(call.input.file_path)`, read, true},
		{"nil-call", `call.tool == "" && size(call.input) == 0`, Input{Ceiling: profLabels(profRead)}, true},
		{"call-iterates", `call.exists(k, k == "mutation")`, read, true},
		{"call-size-labelled", `size(call) == 22`, read, true},
		{"called-with-on-other-map-errors", `{"known": true}.called_with("destructive")`, read, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := profLoad(t, profRule("r", tt.when, "ask"))
			got := p.Decide(tt.in).Rule == "r"
			if got != tt.want {
				t.Errorf("%s: matched = %v, want %v", tt.when, got, tt.want)
			}
		})
	}
}

func TestTightenOnly(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		when    string
		then    string
		refused string // substring of the problem; empty when accepted
	}{
		{"allow-delete-refused", `call.mutation == "delete"`, "allow", "would allow a call with mutation=delete"},
		{"allow-read-accepted", `call.mutation == "read"`, "allow", ""},
		{"allow-not-read-refused", `call.mutation != "read"`, "allow", "but not the same call with mutation=read"},
		{"allow-at-least-refused", `at_least("scope", "bulk")`, "allow", "but not the same call with scope=single_record"},
		{"allow-at-most-accepted", `at_most("scope", "bulk") && at_most("egress", "internal")`, "allow", ""},
		{"allow-open-world-refused", `call.open_world`, "allow", "open_world=false"},
		{"allow-not-open-world-accepted", `!call.open_world`, "allow", ""},
		{"allow-pure-deletion-refused", `call.pure_deletion`, "allow", "pure_deletion=false"},
		{"allow-configuration-object-accepted", `call.configuration_object`, "allow", ""},
		{"allow-consequence-refused", `consequence_at_or_above("irreversible")`, "allow", "reversibility=reversible_with_effort"},
		{"allow-destructive-refused", `call.destructive`, "allow", "not tighten-only"},
		{"allow-ceiling-refused", `ceiling.egress == "external"`, "allow", "egress=internal"},
		{"allow-everything-accepted", `true`, "allow", ""},
		{"allow-risk-class-refused", `call.risk_class == "destructive"`, "allow", "not tighten-only"},
		{"allow-tool-specific-refused", `call.tool == "Write" && call.financial == "indirect"`, "allow", "file tool sample"},
		{"allow-behind-odd-evidence-refused", `proven("sandbox-exec") && at_least("mutation", "update")`, "allow", "sample with the evidence the rule names"},
		{"allow-behind-evidence-list-refused", `evidence.exists(e, e.kind == "snapshot" && e.strength == "established") && call.pure_deletion`, "allow", "pure_deletion=false"},
		{"allow-whole-map-compare-refused", `ceiling != {"mutation": "read", "scope": "single_record", "reversibility": "reversible", "egress": "none", "financial": "none", "returns_class": "first_party_structured", "open_world": false, "configuration_object": false, "pure_deletion": false}`, "allow", "not tighten-only"},
		{"sandbox-delete-refused", `call.mutation == "delete"`, "sandbox", "would sandbox"},
		{"deny-delete-not-checked", `call.mutation == "delete"`, "deny", ""},
		{"ask-delete-not-checked", `call.mutation == "delete"`, "ask", ""},
		{"allow-unlabelled-not-checked", `call.unlabelled`, "allow", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			src := profRule("r", tt.when, tt.then)
			problems := CheckProfile("t.toml", []byte(src))
			_, err := LoadProfile("t.toml", []byte(src))
			if (len(problems) > 0) != (err != nil) {
				t.Fatalf("CheckProfile and LoadProfile disagree: %v / %v", problems, err)
			}
			if tt.refused == "" {
				if len(problems) > 0 {
					t.Fatalf("refused: %v", problems)
				}
				return
			}
			if len(problems) != 1 || !strings.Contains(problems[0].Error(), tt.refused) || problems[0].Line != 3 || problems[0].Rule != "r" {
				t.Fatalf("got %v, want one problem on line 3 containing %q", problems, tt.refused)
			}
		})
	}
}

func TestStateIndex(t *testing.T) {
	t.Parallel()
	for i := range numStates {
		if j := stateIndex(stateLabels(i)); j != i {
			t.Fatalf("stateIndex(stateLabels(%d)) = %d", i, j)
		}
	}
	last := MaxLabels()
	last.Facts = [NumFacts]bool{true, true, true}
	if l := stateLabels(numStates - 1); l != last {
		t.Errorf("last state = %v, want %v", l, last)
	}
	if l := stateLabels(0); l != (Labels{}) {
		t.Errorf("first state = %v", l)
	}
}

// TestProfileGolden loads every profile under testdata/profiles and
// compares CheckProfile's report with the .golden file beside it.
// Regenerate with go test ./rules -run ProfileGolden -u and review the diff.
func TestProfileGolden(t *testing.T) {
	inputs, err := filepath.Glob("testdata/profiles/*.toml")
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no profiles: %v", err)
	}
	for _, in := range inputs {
		t.Run(filepath.Base(in), func(t *testing.T) {
			data, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			var got strings.Builder
			problems := CheckProfile(filepath.Base(in), data)
			for _, p := range problems {
				got.WriteString(p.Error() + "\n")
			}
			if len(problems) == 0 {
				got.WriteString("ok\n")
			}
			_, loadErr := LoadProfile(filepath.Base(in), data)
			if (loadErr == nil) != (len(problems) == 0) {
				t.Errorf("LoadProfile error %v, CheckProfile %d problems", loadErr, len(problems))
			}
			if loadErr != nil {
				pe, ok := errors.AsType[*ProfileError](loadErr)
				if !ok || !slices.Equal(pe.Problems, problems) {
					t.Errorf("LoadProfile error is %T with %v", loadErr, loadErr)
				}
				if _, ok := errors.AsType[Problem](loadErr); !ok {
					t.Errorf("errors.As finds no Problem in %v", loadErr)
				}
			}
			golden := strings.TrimSuffix(in, ".toml") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got.String()), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -u to create)", err)
			}
			if got.String() != string(want) {
				t.Errorf("got:\n%s\nwant:\n%s", got.String(), want)
			}
		})
	}
}

func TestProfileFields(t *testing.T) {
	t.Parallel()
	src := `name = "team"
description = "our rules"
workspaces = ["/srv/shared/", "/opt/x/../y"]
sensitive = ["**/*.key", "**/secrets/**"]
` + profRule("reads", `call.mutation == "read"`, "allow")
	p := profLoad(t, src)
	if p.Name() != "team" || p.Description() != "our rules" {
		t.Errorf("name %q description %q", p.Name(), p.Description())
	}
	if got := p.Workspaces(); !slices.Equal(got, []string{"/srv/shared", "/opt/y"}) {
		t.Errorf("workspaces %q", got)
	}
	got := p.Sensitive()
	if !slices.Equal(got, []string{"**/*.key", "**/secrets/**"}) {
		t.Errorf("sensitive %q", got)
	}
	got[0] = "changed"
	if p.Sensitive()[0] != "**/*.key" {
		t.Error("Sensitive returns the profile's own slice")
	}
	rules := p.Rules()
	if len(rules) != 1 || rules[0].ID != "reads" || rules[0].Then != Allow || rules[0].Line != 5 {
		t.Errorf("rules %+v", rules)
	}
	if n := profLoad(t, "").Name(); n != "test" {
		t.Errorf("name from file = %q, want test", n)
	}
}

func TestBuiltinProfiles(t *testing.T) {
	t.Parallel()
	names := BuiltinProfileNames()
	if !slices.Equal(names, []string{"readonly", "standard", "strict"}) {
		t.Fatalf("BuiltinProfileNames() = %q", names)
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			data, err := builtinFS.ReadFile("profiles/" + name + ".toml")
			if err != nil {
				t.Fatal(err)
			}
			if problems := CheckProfile(name+".toml", data); len(problems) > 0 {
				t.Fatalf("built-in profile fails its own check:\n%v", &ProfileError{problems})
			}
			p, err := BuiltinProfile(name)
			if err != nil {
				t.Fatal(err)
			}
			if p.Name() != name || p.Description() == "" {
				t.Errorf("name %q description %q", p.Name(), p.Description())
			}
			hasUnlabelled := false
			for _, r := range p.Rules() {
				if r.ID == "unlabelled-ask" {
					hasUnlabelled = r.Then == Ask
				}
			}
			if !hasUnlabelled {
				t.Error("no unlabelled-ask rule")
			}
		})
	}
	for _, bad := range []string{"", "nope", "../standard", "standard.toml", "*"} {
		if _, err := BuiltinProfile(bad); err == nil {
			t.Errorf("BuiltinProfile(%q) succeeded", bad)
		}
	}
}

// TestBuiltinDecisions pins what each built-in profile does with typical
// calls. Sessions are known and clean unless the case says otherwise.
func TestBuiltinDecisions(t *testing.T) {
	t.Parallel()
	tainted := Session{Known: true, Called: map[string]bool{"reads_untrusted": true}}
	inside := profEv("path-inside", Proven)
	runs := profEv("runs-code", Proven)
	runs.Subject = "go test ./..."
	sourced := profEv("runs-code", Proven)
	sourced.Subject = "source .env"
	secret := profEv("sensitive-name", Guess)
	type want struct{ readonly, standard, strict string }
	tests := []struct {
		name    string
		in      Input
		session *Session
		want    want
	}{
		{"read-inside", profInput("Read", profRead, inside), nil,
			want{"allow read-workspace", "allow read-workspace", "allow read-workspace"}},
		{"read-bulk-grep", profInput("Grep", "read bulk reversible none none third_party_content +open_world", inside), nil,
			want{"allow read-workspace", "allow read-workspace", "allow read-workspace"}},
		{"read-unproven", profInput("Read", profReadAccount), nil,
			want{"ask no-match", "ask no-match", "ask no-match"}},
		{"read-secret", profInput("Read", profRead, inside, secret), nil,
			want{"ask reads-sensitive", "ask reads-sensitive", "ask reads-sensitive"}},
		{"write-inside", profInput("Write", profWriteFile, inside), nil,
			want{"ask no-match", "allow write-workspace-file", "ask no-match"}},
		{"write-unproven-path", profInput("Write", profWriteFile), nil,
			want{"ask no-match", "ask no-match", "ask no-match"}},
		{"shell-write-is-pure-deletion", profInput("Bash", profRmFile, inside), nil,
			want{"ask no-match", "ask no-match", "ask no-match"}},
		{"delete-message", profInput("delete_message", "delete single_record reversible_with_effort internal none first_party_structured +pure_deletion"), nil,
			want{"ask no-match", "ask no-match", "ask no-match"}},
		{"delete-messages-bulk", profInput("delete_messages", "delete bulk reversible_with_effort internal none first_party_structured +pure_deletion"), nil,
			want{"deny no-bulk-deletion", "ask no-match", "ask no-match"}},
		{"subagent", profInput("Task", "read single_record reversible none indirect third_party_content"), nil,
			want{"ask no-match", "allow read-workspace", "ask no-match"}},
		{"run-tests", profInput("Bash", profTestsRun, runs, inside), nil,
			want{"ask no-match", "sandbox run-repo-code", "ask no-match"}},
		// Only build and test runners go to the sandbox, not text the
		// agent wrote.
		{"run-sourced", profInput("Bash", profTestsRun, sourced, inside), nil,
			want{"ask no-match", "ask no-match", "ask no-match"}},
		{"shell-ceiling-clean", profInput("Bash", profShellCeil), nil,
			want{"ask no-match", "ask no-match", "ask no-match"}},
		{"shell-ceiling-tainted", profInput("Bash", profShellCeil), &tainted,
			want{"ask no-send-after-read", "ask no-send-after-read", "deny no-send-after-read"}},
		{"shell-ceiling-unknown-session", profInput("Bash", profShellCeil), &Session{},
			want{"ask no-send-unknown-session", "ask no-send-unknown-session", "deny no-send-unknown-session"}},
		{"fetch-clean", profInput("WebFetch", profFetch), nil,
			want{"ask no-match", "ask no-match", "ask no-match"}},
		{"send-mail-tainted", profInput("send_email", profSendMail), &tainted,
			want{"ask no-send-after-read", "ask no-send-after-read", "deny no-send-after-read"}},
		{"refund", profInput("create_refund", profRefund), nil,
			want{"deny moves-money", "deny moves-money", "deny moves-money"}},
		{"delete-account-data", profInput("delete_all", profDropRepo), nil,
			want{"deny no-bulk-deletion", "deny account-wide-deletion", "deny account-wide-deletion"}},
		{"delete-repository-bulk", profInput("delete_repository", "delete bulk irreversible none none first_party_structured +pure_deletion"), nil,
			want{"deny no-bulk-deletion", "ask no-match", "ask no-match"}},
		{"fetch-tainted", profInput("WebFetch", profFetch), &tainted,
			want{"ask no-send-after-read", "ask no-send-after-read", "deny no-send-after-read"}},
		{"drop-policy", profInput("drop_policy", profDropPolicy), nil,
			want{"deny irreversible-account-wide", "ask no-match", "ask configuration-object"}},
		{"change-org", profInput("update_org", profChangeOrg), nil,
			want{"deny irreversible-account-wide", "ask no-match", "deny irreversible-account-wide"}},
		{"mcp-update", profInput("mcp__tracker__update", profMCPUpdate), nil,
			want{"ask no-match", "ask no-match", "ask no-match"}},
		{"unlabelled", profInput("mcp__x__y", ""), nil,
			want{"ask unlabelled-ask", "ask unlabelled-ask", "ask unlabelled-ask"}},
	}
	profiles := map[string]*Profile{}
	for _, n := range BuiltinProfileNames() {
		p, err := BuiltinProfile(n)
		if err != nil {
			t.Fatal(err)
		}
		profiles[n] = p
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := tt.in
			if tt.session != nil {
				in.Session = *tt.session
			}
			for name, w := range map[string]string{"readonly": tt.want.readonly, "standard": tt.want.standard, "strict": tt.want.strict} {
				d := profiles[name].Decide(in)
				if got := d.Outcome.String() + " " + d.Rule; got != w {
					t.Errorf("%s: got %q, want %q", name, got, w)
				}
			}
		})
	}
}

// TestBuiltinsAtCatalogCeilings runs every built-in tool of the catalog at
// its ceiling (no evidence, clean session) through every built-in profile:
// a domain ceiling (open_world) is asked about, never allowed or refused,
// so a shell command narrowd cannot prove reaches a person.
func TestBuiltinsAtCatalogCeilings(t *testing.T) {
	t.Parallel()
	cat, err := DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range BuiltinProfileNames() {
		p, err := BuiltinProfile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range cat.Entries() {
			in := Input{
				Call:    &Call{Agent: e.Agent, Tool: e.Key, Phase: PreTool},
				Key:     e.Key,
				Ceiling: &e.Labels,
				Session: Session{Known: true},
			}
			d := p.Decide(in)
			if e.Labels.Facts[OpenWorld] && d.Outcome != Ask {
				t.Errorf("%s: %s at its ceiling: %+v, want ask", name, e.Key, d)
			}
		}
	}
}

func TestRiskClass(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, tool, labels, want string
	}{
		{"unlabelled", "x", "", "unlabelled"},
		{"shell-ceiling", "Bash", profShellCeil, "process_execution"},
		{"refund", "create_refund", profRefund, "financial"},
		{"fetch", "WebFetch", profFetch, "network_open_world"},
		{"grep", "Grep", profRead, "search_only"},
		{"read", "Read", profRead, "read_only"},
		{"drop-policy", "drop_policy", profDropPolicy, "security_sensitive"},
		{"grant-role", "grant_role", profChangeOrg, "identity_access"},
		{"change-org", "update_org", profChangeOrg, "privileged_admin"},
		{"drop-repo", "delete_repository", profDropRepo, "destructive"},
		{"write-ceiling", "Write", "delete account_wide irreversible none none first_party_structured +open_world", "destructive"},
		{"send-mail", "send_email", profSendMail, "communication"},
		{"create-issue", "create_issue", "create single_record irreversible external none third_party_content", "communication"},
		{"update-public-page", "update_page", "update single_record irreversible external none first_party_structured", "write_external"},
		{"mcp-update", "update", profMCPUpdate, "write_internal"},
		{"write-file", "Write", profWriteFile, "write_local"},
		{"rm-file", "Bash", profRmFile, "destructive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var l *Labels
			if tt.labels != "" {
				l = profLabels(tt.labels)
			}
			got := RiskClass(l, tt.tool)
			if got != tt.want {
				t.Errorf("RiskClass = %q, want %q", got, tt.want)
			}
			if !slices.Contains(riskClasses[:], got) {
				t.Errorf("%q is not in riskClasses", got)
			}
		})
	}
}

func TestSessionLabels(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		labels string
		ev     []Evidence
		want   []string
	}{
		{"unlabelled-carries-all", "", nil, []string{"reads_untrusted", "external_effect", "destructive", "moves_money", "reads_sensitive"}},
		{"read", profRead, nil, []string{"reads_untrusted"}},
		{"read-secret", profRead, []Evidence{profEv("sensitive-name", Guess)}, []string{"reads_untrusted", "reads_sensitive"}},
		{"write", profWriteFile, nil, []string{"destructive"}},
		{"send", profSendMail, nil, []string{"external_effect"}},
		{"refund", profRefund, nil, []string{"moves_money"}},
		{"internal-update", profMCPUpdate, nil, []string{"external_effect"}},
		{"local-update", profMCPLocalEdt, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var l *Labels
			if tt.labels != "" {
				l = profLabels(tt.labels)
			}
			if got := SessionLabels(l, tt.ev); !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestDecideConcurrent(t *testing.T) {
	t.Parallel()
	p, err := BuiltinProfile("standard")
	if err != nil {
		t.Fatal(err)
	}
	inputs := []Input{
		profInput("Read", profRead, profEv("path-inside", Proven)),
		profInput("Write", profWriteFile, profEv("path-inside", Proven)),
		profInput("x", ""),
	}
	want := make([]Decision, len(inputs))
	for i, in := range inputs {
		want[i] = p.Decide(in)
	}
	done := make(chan struct{})
	for g := range 8 {
		go func() {
			defer func() { done <- struct{}{} }()
			for n := range 200 {
				i := (g + n) % len(inputs)
				if got := p.Decide(inputs[i]); got != want[i] {
					t.Errorf("input %d: got %+v, want %+v", i, got, want[i])
					return
				}
			}
		}()
	}
	for range 8 {
		<-done
	}
}

// TestTightenMasksSound: the tighten-only check skips facts and samples a
// condition cannot read. For conditions that read them in every way the
// language allows, the shortcut must find exactly what full enumeration
// finds.
func TestTightenMasksSound(t *testing.T) {
	t.Parallel()
	conds := []string{
		`call.mutation == "delete"`,
		`call.open_world`,
		`!call.pure_deletion && call.scope == "single_record"`,
		`has(call.configuration_object) && call.configuration_object`,
		`call.destructive`,
		`call.risk_class == "destructive"`,
		`ceiling.open_world || ceiling.mutation == "read"`,
		`call["pure_deletion"]`,
		`call[call.tool == "Bash" ? "open_world" : "pure_deletion"]`,
		`call.exists(k, k == "open_world" && call[k] == true)`,
		`size(ceiling) > 0 && ceiling.all(k, k != "pure_deletion" || !ceiling[k])`,
		`[call].exists(c, c.open_world)`,
		`{"x": call}.x.pure_deletion`,
		`has_evidence("runs-code") && call.pure_deletion`,
		`proven("path-inside") || call.mutation == "delete"`,
		`session.known && call.mutation == "delete"`,
		`evidence.exists(e, e.kind == "runs-code") && call.mutation == "update"`,
		`call.tool == "Write" && call.mutation == "delete"`,
		`call.input.command == "go test ./..." && call.open_world`,
		`call.reads_sensitive || call.mutation == "create"`,
		`evidence.exists(call, call.kind == "path-inside") && at_least("scope", "bulk")`,
	}
	samples := neutralSamples()
	for _, cond := range conds {
		t.Run(cond, func(t *testing.T) {
			t.Parallel()
			p := profLoad(t, profRule("r", cond, "deny"))
			r := p.rules[0]
			full := *r
			full.sampleDep, full.factMask = true, allFacts
			for _, s := range samples {
				w1, ok1 := tightenWitness(r, s.in)
				w2, ok2 := tightenWitness(&full, s.in)
				if ok1 != ok2 || w1 != w2 {
					t.Fatalf("%s: masked %v %v, full %v %v", s.name, ok1, w1, ok2, w2)
				}
				if !r.sampleDep {
					w0, ok0 := tightenWitness(&full, samples[0].in)
					if ok0 != ok2 || w0 != w2 {
						t.Fatalf("%s: condition reads the sample but sampleDep is false", s.name)
					}
				}
			}
		})
	}
}
