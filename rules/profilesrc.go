package rules

import "strings"

// The TOML decoder reports no key positions, so the lines of keys are
// found here by scanning the source: the nth [[rule]] header is the nth
// rule, and a key belongs to the table whose header precedes it. The scan
// only places messages; it never decides what the profile says, so a
// construct it does not follow costs a line number, not a wrong rule.

type srcIndex struct {
	top    map[string]int // keys before the first header, and other table headers
	rules  []ruleBlock
	inRule bool
}

type ruleBlock struct {
	line int
	keys map[string]int
	// whenMulti reports that `when` is a multi-line string, whose lines
	// are the file's; whenNextLine that its opening quotes end the line,
	// so the expression starts on the next.
	whenMulti, whenNextLine bool
}

// topLine returns the line of a top-level key or table, 0 when unknown.
func (s *srcIndex) topLine(key string) int { return s.top[key] }

// rule returns the block of the ith rule, empty when it was not found.
func (s *srcIndex) rule(i int) ruleBlock {
	if i < len(s.rules) {
		return s.rules[i]
	}
	return ruleBlock{}
}

// keyLine returns the line of key in the rule, or the header's line.
func (b ruleBlock) keyLine(key string) int {
	if l, ok := b.keys[key]; ok {
		return l
	}
	return b.line
}

func indexSource(src string) *srcIndex {
	idx := &srcIndex{top: make(map[string]int)}
	var (
		closeStr string // the delimiter that ends the multi-line string we are in
		depth    int    // open brackets of a multi-line array or inline table
	)
	setKey := func(key string, line int) {
		if idx.inRule {
			b := &idx.rules[len(idx.rules)-1]
			if _, dup := b.keys[key]; !dup {
				b.keys[key] = line
			}
			return
		}
		if _, dup := idx.top[key]; !dup {
			idx.top[key] = line
		}
	}
	for n, text := range strings.Split(src, "\n") {
		line := n + 1
		text = strings.TrimSuffix(text, "\r")
		if closeStr != "" {
			if strings.Contains(text, closeStr) {
				closeStr = ""
			}
			continue
		}
		if depth > 0 {
			depth += bracketDelta(text)
			continue
		}
		t := strings.TrimSpace(text)
		switch {
		case t == "" || t[0] == '#':
			continue
		case strings.HasPrefix(t, "[["):
			name, _, _ := strings.Cut(t[2:], "]]")
			name = strings.TrimSpace(name)
			if name == "rule" {
				idx.rules = append(idx.rules, ruleBlock{line: line, keys: make(map[string]int)})
				idx.inRule = true
				continue
			}
			idx.inRule = false
			setKey(firstKeyPart(name), line)
			continue
		case t[0] == '[':
			name, _, _ := strings.Cut(t[1:], "]")
			name = strings.TrimSpace(name)
			if sub, ok := strings.CutPrefix(name, "rule."); ok && len(idx.rules) > 0 {
				idx.inRule = true
				setKey(firstKeyPart(sub), line)
				continue
			}
			idx.inRule = false
			setKey(firstKeyPart(name), line)
			continue
		}
		key, value, ok := splitKey(t)
		if !ok {
			continue
		}
		setKey(key, line)
		for _, q := range [...]string{`"""`, `'''`} {
			if rest, ok := strings.CutPrefix(value, q); ok {
				if !strings.Contains(rest, q) {
					closeStr = q
					if key == "when" && idx.inRule {
						b := &idx.rules[len(idx.rules)-1]
						// TOML drops a newline right after the
						// opening quotes, not one after spaces.
						b.whenMulti, b.whenNextLine = true, rest == "" && strings.HasSuffix(text, q)
					}
				}
				break
			}
		}
		if closeStr == "" && value != "" && (value[0] == '[' || value[0] == '{') {
			depth = bracketDelta(value)
		}
	}
	return idx
}

// splitKey splits `key = value` into the first part of the key and the
// value, trimmed. It reports false for lines that are not key/value pairs.
func splitKey(t string) (key, value string, ok bool) {
	i := 0
	first := ""
	for part := 0; ; part++ {
		for i < len(t) && (t[i] == ' ' || t[i] == '\t') {
			i++
		}
		if i >= len(t) {
			return "", "", false
		}
		start := i
		var name string
		switch t[i] {
		case '"', '\'':
			q := t[i]
			i++
			for i < len(t) && t[i] != q {
				if q == '"' && t[i] == '\\' {
					i++
				}
				i++
			}
			if i >= len(t) {
				return "", "", false
			}
			name = t[start+1 : i]
			i++
		default:
			for i < len(t) && isBareKeyChar(t[i]) {
				i++
			}
			if i == start {
				return "", "", false
			}
			name = t[start:i]
		}
		if part == 0 {
			first = name
		}
		for i < len(t) && (t[i] == ' ' || t[i] == '\t') {
			i++
		}
		if i < len(t) && t[i] == '.' {
			i++
			continue
		}
		if i < len(t) && t[i] == '=' {
			return first, strings.TrimSpace(t[i+1:]), true
		}
		return "", "", false
	}
}

func isBareKeyChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

func firstKeyPart(name string) string {
	if k, _, ok := splitKey(name + "="); ok {
		return k
	}
	return name
}

// bracketDelta counts [ and { minus ] and } outside simple strings and
// comments.
func bracketDelta(s string) int {
	d := 0
	var q byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case q != 0:
			if c == '\\' && q == '"' {
				i++
			} else if c == q {
				q = 0
			}
		case c == '"' || c == '\'':
			q = c
		case c == '#':
			return d
		case c == '[' || c == '{':
			d++
		case c == ']' || c == '}':
			d--
		}
	}
	return d
}
