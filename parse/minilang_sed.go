package parse

import (
	"path"
	"strings"
)

// sed checks sed's program: w and W and s///w write files, r and R read
// them, e and s///e run commands.
func (r *run) sed(p parsed) {
	// The file operands were read (or, with -i, overwritten) by their
	// slots; only the program is left to check.
	scripts := p.values("-e")
	if len(scripts) == 0 {
		if len(p.ops) == 0 {
			r.fail("sed without a program")
			return
		}
		scripts = p.ops[:1]
	}
	files := p.ops
	if len(p.values("-e")) == 0 {
		files = p.ops[1:]
	}
	if !r.sedBackups(p, files) {
		return
	}
	var texts []string
	for _, w := range scripts {
		texts = append(texts, w.Value)
	}
	prog := strings.Join(texts, "\n")
	reads, writes, why := sedProgram(prog)
	if why != "" {
		r.fail(why)
		return
	}
	pos := scripts[0].Pos
	for _, f := range reads {
		if f != "/dev/stdin" {
			r.addPath(Word{Value: f, Literal: true, Pos: pos}, Read, false)
		}
	}
	for _, f := range writes {
		r.rule = append(r.rule, "w")
		r.addPath(Word{Value: f, Literal: true, Pos: pos}, Overwrite, false)
	}
}

// sedBackups adds the backup files that -iSUFFIX makes beside each edited
// file. GNU sed names a backup FILE+SUFFIX, or, when SUFFIX holds a *,
// SUFFIX with each * replaced by FILE's base name; a SUFFIX holding a /
// puts the backup in another directory (sed -i'/root/.ssh/*' writes
// /root/.ssh/FILE), so such a suffix, or one not known from the text,
// makes the call unprovable. It reports whether the call is still
// provable.
func (r *run) sedBackups(p parsed, files []Word) bool {
	for _, suffix := range p.values("-i") {
		if suffix.Value == "" && suffix.Literal {
			continue
		}
		switch {
		case !suffix.Literal:
			r.fail("sed -i with a backup suffix not known from the text")
			return false
		case strings.Contains(suffix.Value, "/"):
			r.fail("sed -i with a backup suffix holding / writes the backup into another directory")
			return false
		}
		for _, f := range files {
			if !f.Literal {
				// The file's own slot already makes the call unprovable.
				continue
			}
			backup := f.Value + suffix.Value
			if strings.Contains(suffix.Value, "*") {
				backup = path.Join(path.Dir(f.Value), strings.ReplaceAll(suffix.Value, "*", path.Base(f.Value)))
			}
			r.addPath(Word{Value: backup, Literal: true, Pos: suffix.Pos}, Overwrite, false)
		}
	}
	return true
}

// sedProgram parses a GNU sed program far enough to find every command.
func sedProgram(src string) (reads, writes []string, why string) {
	i := 0
	n := len(src)
	// toEOL reads a file name or text: the rest of the line.
	toEOL := func() string {
		start := i
		for i < n && src[i] != '\n' {
			i++
		}
		return src[start:i]
	}
	skipBlank := func() {
		for i < n && (src[i] == ' ' || src[i] == '\t') {
			i++
		}
	}
	// delimited reads up to an unescaped delimiter.
	delimited := func(d byte) bool {
		for i < n {
			c := src[i]
			switch {
			case c == '\\':
				i += 2
				continue
			case c == d:
				i++
				return true
			case c == '\n' && d != '\n':
				return false
			}
			i++
		}
		return false
	}
	address := func() bool {
		switch {
		case i < n && src[i] >= '0' && src[i] <= '9':
			for i < n && (src[i] >= '0' && src[i] <= '9' || src[i] == '~') {
				i++
			}
		case i < n && src[i] == '$':
			i++
		case i < n && src[i] == '/':
			i++
			if !delimited('/') {
				return false
			}
			for i < n && (src[i] == 'I' || src[i] == 'M') {
				i++
			}
		case i+1 < n && src[i] == '\\':
			d := src[i+1]
			i += 2
			if d == '\n' || d == '\\' || !delimited(d) {
				return false
			}
			for i < n && (src[i] == 'I' || src[i] == 'M') {
				i++
			}
		}
		return true
	}
	endCmd := func() bool {
		skipBlank()
		if i >= n || src[i] == ';' || src[i] == '\n' || src[i] == '}' || src[i] == '#' {
			return true
		}
		return false
	}
	for i < n {
		for i < n && strings.IndexByte(" \t\n;", src[i]) >= 0 {
			i++
		}
		if i >= n {
			break
		}
		switch src[i] {
		case '#':
			toEOL()
			continue
		case '}':
			i++
			continue
		}
		if !address() {
			return nil, nil, "sed address not understood"
		}
		skipBlank()
		if i < n && src[i] == ',' {
			i++
			skipBlank()
			if i < n && (src[i] == '+' || src[i] == '~') {
				i++
			}
			if !address() {
				return nil, nil, "sed address not understood"
			}
		}
		skipBlank()
		for i < n && (src[i] == '!' || src[i] == ' ') {
			i++
		}
		if i >= n {
			return nil, nil, "sed program ends after an address"
		}
		c := src[i]
		i++
		switch c {
		case '{':
		case '=', 'd', 'D', 'g', 'G', 'h', 'H', 'n', 'N', 'p', 'P', 'x', 'z', 'F':
			if !endCmd() {
				return nil, nil, "sed command " + string(c) + " not understood"
			}
		case 'l', 'L', 'q', 'Q':
			skipBlank()
			for i < n && src[i] >= '0' && src[i] <= '9' {
				i++
			}
			if !endCmd() {
				return nil, nil, "sed command " + string(c) + " not understood"
			}
		case ':', 'b', 't', 'T', 'v':
			skipBlank()
			for i < n && src[i] != ';' && src[i] != '\n' {
				i++
			}
		case 'a', 'i', 'c':
			// Text to the end of the line; a backslash-newline continues
			// it onto the next line.
			for i < n && src[i] != '\n' {
				if src[i] == '\\' {
					i++
				}
				i++
			}
		case 'r', 'R':
			skipBlank()
			reads = append(reads, toEOL())
		case 'w', 'W':
			skipBlank()
			writes = append(writes, toEOL())
		case 'e':
			return nil, nil, "sed e runs a command"
		case 's':
			if i >= n || src[i] == '\\' || src[i] == '\n' {
				return nil, nil, "sed s delimiter not understood"
			}
			d := src[i]
			i++
			// Two delimited parts: the regexp, then the replacement.
			pattern := delimited(d)
			if !pattern || !delimited(d) {
				return nil, nil, "sed s command not terminated"
			}
		flags:
			for i < n {
				switch f := src[i]; {
				case f == 'g' || f == 'p' || f == 'i' || f == 'I' || f == 'm' || f == 'M' || f >= '0' && f <= '9':
					i++
				case f == 'e':
					return nil, nil, "sed s///e runs a command"
				case f == 'w':
					i++
					skipBlank()
					writes = append(writes, toEOL())
					break flags
				default:
					break flags
				}
			}
			if !endCmd() {
				return nil, nil, "sed s flags not understood"
			}
		case 'y':
			if i >= n || src[i] == '\\' || src[i] == '\n' {
				return nil, nil, "sed y delimiter not understood"
			}
			d := src[i]
			i++
			source := delimited(d)
			if !source || !delimited(d) || !endCmd() {
				return nil, nil, "sed y command not understood"
			}
		default:
			return nil, nil, "unknown sed command " + string(c)
		}
	}
	for _, w := range writes {
		if w == "" {
			return nil, nil, "sed w without a file"
		}
	}
	return reads, writes, ""
}
