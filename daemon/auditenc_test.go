package daemon

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/narrowd/narrowd/rules"
)

// fullRecord sets every field of a Record, so that the differential test
// covers each one.
func fullRecord() *Record {
	approver := "alice <a&b>"
	ceiling := rules.MaxLabels()
	var narrowed rules.Labels
	return &Record{
		ID: "0123456789abcdef01234567", ToolName: "Bash", RiskClass: "read_only",
		SideEffectClass: "none", ResourceScope: "project", Decision: "allow",
		PolicyRule: "read-workspace", Reason: "reads <inside> & \"quoted\"",
		Approver: &approver, Timestamp: "2026-11-30T17:00:00.123456789Z",
		Agent: "claude", Event: "PreToolUse", Phase: "pre_tool", Session: "s-1",
		Cwd: "/ws/é", ToolUseID: "toolu_1", Summary: "ls -la\tsrc\n\x01",
		Via: "http", Answer: "abstain", Outcome: "allow", CeilingOutcome: "ask",
		PromptAvoided: true, PromptAvoidedEstimate: true, SessionKnown: true,
		Verdict: &rules.Verdict{
			Agent: "claude", Tool: "Bash", Key: "claude/Bash",
			Ceiling: &ceiling, Narrowed: &narrowed,
			Evidence: []rules.Evidence{
				{Kind: "path-inside", Strength: rules.Proven, Subject: "src", Detail: "inside", Effect: "scope<=single_record"},
				{Kind: "x", Strength: rules.Strength(9), Subject: "\u2028\u2029", Detail: "\xff\xfe", Effect: "none"},
			},
			Decision:       rules.Decision{Outcome: rules.Allow, Rule: "r", Reason: "why"},
			CeilingOutcome: rules.Outcome(7),
			RiskClass:      "read_only",
		},
		Error: "boom", Corrects: true, DurationUS: 1234,
	}
}

// TestFullRecordSetsEveryField keeps fullRecord complete: a field added
// to Record must be set there, and then the differential test fails until
// appendRecord writes it.
func TestFullRecordSetsEveryField(t *testing.T) {
	v := reflect.ValueOf(*fullRecord())
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Errorf("fullRecord leaves %s unset", v.Type().Field(i).Name)
		}
	}
}

func TestAppendRecordMatchesEncodingJSON(t *testing.T) {
	empty := rules.Labels{}
	tests := []struct {
		name string
		rec  *Record
	}{
		{"zero", &Record{}},
		{"full", fullRecord()},
		{"decode failure", &Record{ID: "x", RiskClass: "unknown", Decision: "deny", PolicyRule: "error-decode", Error: "claude: malformed"}},
		{"unlabelled verdict", &Record{ID: "x", Verdict: &rules.Verdict{Evidence: []rules.Evidence{}}}},
		{"nil evidence", &Record{Verdict: &rules.Verdict{Ceiling: &empty}}},
		{"negative duration", &Record{DurationUS: -5}},
		{"every ascii byte", &Record{Reason: func() string {
			var b []byte
			for c := range 128 {
				b = append(b, byte(c))
			}
			return string(b)
		}()}},
		{"invalid utf-8 and separators", &Record{Summary: "a\xc3(b\xe2\x80\xa8c\xed\xa0\x80d\U0001F600"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkRecordEncoding(t, tt.rec)
		})
	}
}

// checkRecordEncoding compares appendRecord with encoding/json.
func checkRecordEncoding(t *testing.T, r *Record) {
	t.Helper()
	want, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	got := appendRecord(nil, r)
	if !bytes.Equal(got, want) {
		t.Fatalf("appendRecord differs from encoding/json\n got: %s\nwant: %s", got, want)
	}
}

func FuzzAppendRecord(f *testing.F) {
	f.Add("id", "Bash", "ls -la <x> & y", "\u2028", "\xff", "kind", uint8(0), uint8(2), true, int64(7))
	f.Add("", "", "", "", "", "", uint8(9), uint8(200), false, int64(-1))
	f.Fuzz(func(t *testing.T, id, tool, reason, summary, subject, kind string, strength, outcome uint8, verdict bool, dur int64) {
		r := &Record{ID: id, ToolName: tool, Reason: reason, Summary: summary, Cwd: subject,
			Decision: kind, PromptAvoided: verdict, DurationUS: dur}
		if verdict {
			l := rules.MaxLabels()
			r.Approver = &subject
			r.Verdict = &rules.Verdict{
				Agent: id, Tool: tool, Key: summary, Ceiling: &l,
				Evidence:       []rules.Evidence{{Kind: rules.EvidenceKind(kind), Strength: rules.Strength(strength), Subject: subject, Detail: reason, Effect: rules.Effect(summary)}},
				Decision:       rules.Decision{Outcome: rules.Outcome(outcome), Rule: kind, Reason: reason},
				CeilingOutcome: rules.Outcome(strength),
				RiskClass:      subject,
			}
		}
		checkRecordEncoding(t, r)
	})
}

func BenchmarkAppendRecord(b *testing.B) {
	r := fullRecord()
	b.Run("encoding/json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			json.Marshal(r)
		}
	})
	b.Run("appendRecord", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf = appendRecord(buf[:0], r)
		}
	})
}
