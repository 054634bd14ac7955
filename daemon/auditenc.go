package daemon

import (
	"strconv"
	"unicode/utf8"

	"github.com/narrowd/narrowd/rules"
)

// appendRecord appends r as one JSON object, byte for byte what
// encoding/json's Marshal gives for it (field order, omitempty, HTML
// escaping, U+FFFD for invalid UTF-8): every decision writes one, and
// reflection-driven encoding was a large share of a decision's CPU and
// garbage. TestAppendRecordMatchesEncodingJSON and FuzzAppendRecord hold
// it to encoding/json; a field added to Record must be added here too
// (the differential test fails until it is).
func appendRecord(b []byte, r *Record) []byte {
	b = appendField(b, `{"id":`, r.ID)
	b = appendField(b, `,"tool_name":`, r.ToolName)
	b = appendField(b, `,"risk_class":`, r.RiskClass)
	b = appendField(b, `,"side_effect_class":`, r.SideEffectClass)
	b = appendField(b, `,"resource_scope":`, r.ResourceScope)
	b = appendField(b, `,"decision":`, r.Decision)
	b = appendField(b, `,"policy_rule":`, r.PolicyRule)
	b = appendField(b, `,"reason":`, r.Reason)
	b = append(b, `,"approver":`...)
	if r.Approver == nil {
		b = append(b, "null"...)
	} else {
		b = appendJSONString(b, *r.Approver)
	}
	b = appendField(b, `,"timestamp":`, r.Timestamp)
	b = appendField(b, `,"agent":`, r.Agent)
	b = appendOmitEmpty(b, `,"event":`, r.Event)
	b = appendOmitEmpty(b, `,"phase":`, r.Phase)
	b = appendOmitEmpty(b, `,"session":`, r.Session)
	b = appendOmitEmpty(b, `,"cwd":`, r.Cwd)
	b = appendOmitEmpty(b, `,"tool_use_id":`, r.ToolUseID)
	b = appendOmitEmpty(b, `,"summary":`, r.Summary)
	b = appendField(b, `,"via":`, r.Via)
	b = appendField(b, `,"answer":`, r.Answer)
	b = appendOmitEmpty(b, `,"outcome":`, r.Outcome)
	b = appendOmitEmpty(b, `,"ceiling_outcome":`, r.CeilingOutcome)
	b = append(b, `,"prompt_avoided":`...)
	b = strconv.AppendBool(b, r.PromptAvoided)
	b = append(b, `,"prompt_avoided_estimate":`...)
	b = strconv.AppendBool(b, r.PromptAvoidedEstimate)
	b = append(b, `,"session_known":`...)
	b = strconv.AppendBool(b, r.SessionKnown)
	if r.Verdict != nil {
		b = append(b, `,"verdict":`...)
		b = appendVerdict(b, r.Verdict)
	}
	b = appendOmitEmpty(b, `,"error":`, r.Error)
	if r.Corrects {
		b = append(b, `,"corrects":true`...)
	}
	b = append(b, `,"duration_us":`...)
	b = strconv.AppendInt(b, r.DurationUS, 10)
	return append(b, '}')
}

// appendVerdict appends v as encoding/json encodes a rules.Verdict.
func appendVerdict(b []byte, v *rules.Verdict) []byte {
	b = appendField(b, `{"agent":`, v.Agent)
	b = appendField(b, `,"tool":`, v.Tool)
	b = appendField(b, `,"key":`, v.Key)
	b = append(b, `,"ceiling":`...)
	b = appendLabels(b, v.Ceiling)
	b = append(b, `,"narrowed":`...)
	b = appendLabels(b, v.Narrowed)
	b = append(b, `,"evidence":`...)
	if v.Evidence == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range v.Evidence {
			if i > 0 {
				b = append(b, ',')
			}
			e := &v.Evidence[i]
			b = appendField(b, `{"kind":`, string(e.Kind))
			b = appendField(b, `,"strength":`, e.Strength.String())
			b = appendField(b, `,"subject":`, e.Subject)
			b = appendField(b, `,"detail":`, e.Detail)
			b = appendField(b, `,"effect":`, string(e.Effect))
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = appendField(b, `,"decision":{"outcome":`, v.Decision.Outcome.String())
	b = appendField(b, `,"rule":`, v.Decision.Rule)
	b = appendField(b, `,"reason":`, v.Decision.Reason)
	b = appendField(b, `},"ceiling_outcome":`, v.CeilingOutcome.String())
	b = appendField(b, `,"risk_class":`, v.RiskClass)
	return append(b, '}')
}

// appendLabels appends l as rules.Labels.MarshalJSON writes it (labels
// in spec order, then facts), or null.
func appendLabels(b []byte, l *rules.Labels) []byte {
	if l == nil {
		return append(b, "null"...)
	}
	b = append(b, '{')
	for d := range rules.Dim(rules.NumDims) {
		if d > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, d.String())
		b = append(b, ':')
		b = appendJSONString(b, l.Value(d))
	}
	for f := range rules.Fact(rules.NumFacts) {
		b = append(b, ',')
		b = appendJSONString(b, f.String())
		b = append(b, ':')
		b = strconv.AppendBool(b, l.Facts[f])
	}
	return append(b, '}')
}

// appendField appends a key (with its separator) and a string value.
func appendField(b []byte, key, v string) []byte {
	return appendJSONString(append(b, key...), v)
}

// appendOmitEmpty appends key and s unless s is empty (omitempty).
func appendOmitEmpty(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	return appendField(b, key, s)
}

const hexDigits = "0123456789abcdef"

// jsonSafe holds the bytes encoding/json writes as they are with HTML
// escaping on (its htmlSafeSet): printable ASCII, not '"', '\\', '<',
// '>' or '&'. Bytes from 0x80 up are false: they take the UTF-8 path.
var jsonSafe = func() (t [256]bool) {
	for c := ' '; c < utf8.RuneSelf; c++ {
		t[c] = true
	}
	for _, c := range `"\<>&` {
		t[c] = false
	}
	return t
}()

// appendJSONString appends s quoted exactly as encoding/json does
// (encode.go appendString with escapeHTML): short escapes for \b \f \n
// \r \t, \u00XX for other control bytes and <, >, &, \ufffd for each
// byte of invalid UTF-8, and \u2028, \u2029 escaped.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		// Most of a record is plain text: skip runs of it in one
		// tight loop.
		for i < len(s) && jsonSafe[s[i]] {
			i++
		}
		if i == len(s) {
			break
		}
		if c := s[i]; c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
