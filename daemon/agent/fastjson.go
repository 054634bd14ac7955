package agent

import (
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// parseFast decodes b, which must be valid UTF-8, as one JSON object in a
// single pass, building the same values encoding/json builds into an any
// (map[string]any, []any, string, float64, bool, nil) and refusing what
// checkStrict refuses (duplicate keys, nesting past maxDepth, NUL and
// unpaired surrogate escapes). It reports ok=false for anything it does
// not take, valid or not; parseObject then runs the slow path, whose
// value or error stands. Every hook call decodes one payload: this path
// costs a fraction of encoding/json's reflection plus the strict walk.
func parseFast(b []byte) (obj fields, ok bool) {
	p := fastParser{b: b}
	if len(b) <= maxSharedPayload {
		p.s = string(b)
	}
	p.space()
	if p.i >= len(b) || b[p.i] != '{' {
		return nil, false
	}
	m, ok := p.object()
	if !ok {
		return nil, false
	}
	p.space()
	if p.i != len(b) {
		return nil, false
	}
	return m, true
}

// fastParser is the state of one parseFast: the input, the read offset,
// and how many objects and arrays are open.
type fastParser struct {
	b []byte
	// s, for a small payload, is one copy of b that strings without
	// escapes are cut from: one allocation instead of one per key and
	// value.
	s     string
	i     int
	depth int
}

// maxSharedPayload bounds the payloads whose strings share one copy: a
// string kept for long (a session id) pins at most this much.
const maxSharedPayload = 4 << 10

func (p *fastParser) space() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// value reads one JSON value after optional white space.
func (p *fastParser) value() (any, bool) {
	p.space()
	if p.i >= len(p.b) {
		return nil, false
	}
	switch c := p.b[p.i]; {
	case c == '{':
		m, ok := p.object()
		return m, ok
	case c == '[':
		return p.array()
	case c == '"':
		return p.str()
	case c == 't':
		return true, p.literal("true")
	case c == 'f':
		return false, p.literal("false")
	case c == 'n':
		return nil, p.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	}
	return nil, false
}

func (p *fastParser) literal(word string) bool {
	if len(p.b)-p.i < len(word) || string(p.b[p.i:p.i+len(word)]) != word {
		return false
	}
	p.i += len(word)
	return true
}

// open enters an object or array at p.b[p.i], within maxDepth.
func (p *fastParser) open() bool {
	if p.depth == maxDepth {
		return false
	}
	p.depth++
	p.i++
	return true
}

// object reads an object as a map[string]any, the type decoders switch
// on for nested objects (not fields).
func (p *fastParser) object() (map[string]any, bool) {
	if !p.open() {
		return nil, false
	}
	m := make(map[string]any)
	if p.closes('}') {
		return m, true
	}
	for {
		p.space()
		if p.i >= len(p.b) || p.b[p.i] != '"' {
			return nil, false
		}
		k, ok := p.str()
		if !ok {
			return nil, false
		}
		if _, dup := m[k]; dup {
			return nil, false
		}
		p.space()
		if p.i >= len(p.b) || p.b[p.i] != ':' {
			return nil, false
		}
		p.i++
		v, ok := p.value()
		if !ok {
			return nil, false
		}
		m[k] = v
		if more, ok := p.more('}'); !ok || !more {
			return m, ok
		}
	}
}

func (p *fastParser) array() (any, bool) {
	if !p.open() {
		return nil, false
	}
	a := make([]any, 0) // encoding/json's [] is empty, not nil
	if p.closes(']') {
		return a, true
	}
	for {
		v, ok := p.value()
		if !ok {
			return nil, false
		}
		a = append(a, v)
		if more, ok := p.more(']'); !ok || !more {
			return a, ok
		}
	}
}

// closes reports, after white space, that the object or array ends here
// with end, and leaves it.
func (p *fastParser) closes(end byte) bool {
	p.space()
	if p.i < len(p.b) && p.b[p.i] == end {
		p.i++
		p.depth--
		return true
	}
	return false
}

// more reads what follows an element: a comma (more) or end (the object
// or array is done); ok is false for anything else.
func (p *fastParser) more(end byte) (more, ok bool) {
	if p.closes(end) {
		return false, true
	}
	if p.i < len(p.b) && p.b[p.i] == ',' {
		p.i++
		return true, true
	}
	return false, false
}

// str reads the string whose opening quote is at p.b[p.i].
func (p *fastParser) str() (string, bool) {
	start := p.i + 1
	for i := start; i < len(p.b); i++ {
		switch c := p.b[i]; {
		case c == '"':
			p.i = i + 1
			if p.s != "" {
				return p.s[start:i], true
			}
			return string(p.b[start:i]), true
		case c == '\\':
			return p.unescape(start, i)
		case c < 0x20:
			return "", false
		}
	}
	return "", false
}

// unescape reads the rest of a string from its first escape at p.b[at].
func (p *fastParser) unescape(start, at int) (string, bool) {
	out := make([]byte, 0, at-start+16)
	out = append(out, p.b[start:at]...)
	for i := at; i < len(p.b); {
		c := p.b[i]
		switch {
		case c == '"':
			p.i = i + 1
			return string(out), true
		case c < 0x20:
			return "", false
		case c != '\\':
			out = append(out, c)
			i++
			continue
		}
		if i+1 >= len(p.b) {
			return "", false
		}
		switch p.b[i+1] {
		case '"', '\\', '/':
			out = append(out, p.b[i+1])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(p.b, i+2)
			if !ok || r == 0 || utf16.IsSurrogate(r) && r >= 0xDC00 {
				// A NUL or a low surrogate first: checkStrict refuses.
				return "", false
			}
			i += 6
			if utf16.IsSurrogate(r) {
				if i+1 >= len(p.b) || p.b[i] != '\\' || p.b[i+1] != 'u' {
					return "", false
				}
				lo, ok := hex4(p.b, i+2)
				if !ok || lo < 0xDC00 || lo > 0xDFFF {
					return "", false
				}
				r = utf16.DecodeRune(r, lo)
				i += 6
			}
			out = utf8.AppendRune(out, r)
			continue
		default:
			return "", false
		}
		i += 2
	}
	return "", false
}

// number reads a JSON number as encoding/json does into an any: a
// float64 from strconv.ParseFloat, refusing one out of its range.
func (p *fastParser) number() (any, bool) {
	b, i := p.b, p.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(b, i)
	default:
		return nil, false
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return nil, false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return nil, false
		}
		i = j
	}
	f, err := strconv.ParseFloat(string(b[p.i:i]), 64)
	if err != nil {
		return nil, false
	}
	p.i = i
	return f, true
}

// digits returns the index past the run of ASCII digits at b[i].
func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}
