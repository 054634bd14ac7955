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

// sedProgram parses a GNU sed program the way GNU sed 4.9 compiles it
// (compile.c: compile_program, match_slash, snarf_char_class,
// mark_subst_opts, read_label, read_filename) and returns the files the
// r, R, w, W commands and the s///w flag name. A program that runs a
// command (e, s///e) or that sed would reject is unprovable. The model
// mirrors sed's reader character by character, because every place the
// two disagree (a / inside a bracket expression, a label that ends at a
// blank) can hide a w command behind what narrowd reads as a regex,
// replacement or comment.
func sedProgram(src string) (reads, writes []string, why string) {
	for i := 0; i < len(src); i++ {
		if src[i] >= 0x80 || src[i] == 0 {
			// In a multibyte locale sed reads such bytes as parts of
			// characters that never delimit; in C they are bytes.
			return nil, nil, "sed program with non-ASCII or NUL bytes"
		}
	}
	l := &sedReader{src: src}
	for {
		ch := l.inchar()
		for ch == ';' || isSedSpace(ch) {
			ch = l.inchar()
		}
		if ch == sedEOF {
			break
		}
		addressed := false
		if l.address(ch) {
			addressed = true
			ch = l.inNonblank()
			if ch == ',' {
				if !l.address(l.inNonblank()) {
					return nil, nil, "sed address not understood"
				}
				ch = l.inNonblank()
			}
		}
		if l.bad {
			return nil, nil, "sed address not understood"
		}
		if ch == '!' {
			ch = l.inNonblank()
			if ch == '!' {
				return nil, nil, "sed address with two !"
			}
		}
		switch ch {
		case '#':
			if addressed {
				return nil, nil, "sed comment after an address"
			}
			for ch != sedEOF && ch != '\n' {
				ch = l.inchar()
			}
			continue
		case 'v':
			l.label()
			continue
		case '{':
		case '}':
			if addressed {
				return nil, nil, "sed } with an address"
			}
			l.endOfCmd()
		case 'e':
			return nil, nil, "sed e runs a command"
		case 'a', 'i', 'c':
			ch = l.inNonblank()
			if ch == sedEOF {
				return nil, nil, "sed " + string(rune(ch)) + " without text"
			}
			if ch == '\\' {
				ch = l.inchar()
			} else {
				l.savchar(ch)
				ch = '\n'
			}
			l.text(ch)
		case ':':
			if addressed {
				return nil, nil, "sed label with an address"
			}
			if l.label() == "" {
				return nil, nil, "sed : without a label"
			}
		case 'T', 'b', 't':
			l.label()
		case 'Q', 'q', 'L', 'l':
			ch = l.inNonblank()
			if isSedDigit(ch) {
				l.integer(ch)
			} else {
				l.savchar(ch)
			}
			l.endOfCmd()
		case '=', 'd', 'D', 'F', 'g', 'G', 'h', 'H', 'n', 'N', 'p', 'P', 'z', 'x':
			l.endOfCmd()
		case 'r', 'R':
			f := l.filename()
			if f == "" {
				return nil, nil, "sed " + string(rune(ch)) + " without a file"
			}
			reads = append(reads, f)
		case 'w', 'W':
			f := l.filename()
			if f == "" {
				return nil, nil, "sed w without a file"
			}
			writes = append(writes, f)
		case 's':
			slash := l.inchar()
			if !l.slash(slash, true) || !l.slash(slash, false) {
				return nil, nil, "sed s command not terminated"
			}
			f, eval, ok := l.substFlags()
			switch {
			case eval:
				return nil, nil, "sed s///e runs a command"
			case !ok:
				return nil, nil, "sed s flags not understood"
			case f != "":
				writes = append(writes, f)
			}
		case 'y':
			slash := l.inchar()
			// The source and the destination, each up to a slash.
			src := l.slash(slash, false)
			if !src || !l.slash(slash, false) {
				return nil, nil, "sed y command not understood"
			}
			l.endOfCmd()
		case sedEOF:
			return nil, nil, "sed program ends after an address"
		default:
			return nil, nil, "unknown sed command " + string(rune(ch))
		}
		if l.bad {
			return nil, nil, "sed command " + string(rune(ch)) + " not understood"
		}
	}
	for _, w := range writes {
		if w == "" {
			return nil, nil, "sed w without a file"
		}
	}
	return reads, writes, ""
}

const sedEOF = -1

// sedReader is GNU sed's program reader: inchar, savchar and the helpers
// built on them. bad records an error sed would report (bad_prog).
type sedReader struct {
	src string
	i   int
	bad bool
}

func (l *sedReader) inchar() int {
	if l.i >= len(l.src) {
		return sedEOF
	}
	c := l.src[l.i]
	l.i++
	return int(c)
}

func (l *sedReader) savchar(ch int) {
	if ch != sedEOF {
		l.i--
	}
}

func isSedBlank(ch int) bool { return ch == ' ' || ch == '\t' }

func isSedSpace(ch int) bool {
	return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\v' || ch == '\f' || ch == '\r'
}

func isSedDigit(ch int) bool { return ch >= '0' && ch <= '9' }

func (l *sedReader) inNonblank() int {
	ch := l.inchar()
	for isSedBlank(ch) {
		ch = l.inchar()
	}
	return ch
}

// integer reads the digits from ch on (in_integer).
func (l *sedReader) integer(ch int) {
	for isSedDigit(ch) {
		ch = l.inchar()
	}
	l.savchar(ch)
}

// endOfCmd is read_end_of_cmd: blanks, then ; or a newline or the end; a
// } or # is left for the next command.
func (l *sedReader) endOfCmd() {
	ch := l.inNonblank()
	switch {
	case ch == '}' || ch == '#':
		l.savchar(ch)
	case ch != sedEOF && ch != '\n' && ch != ';':
		l.bad = true
	}
}

// label is read_label: a label ends at a blank, ;, }, # or newline, and
// what follows it is the next command (b x w FILE writes FILE).
func (l *sedReader) label() string {
	ch := l.inNonblank()
	start := l.i - 1
	if ch == sedEOF {
		start = l.i
	}
	for ch != sedEOF && ch != '\n' && !isSedBlank(ch) && ch != ';' && ch != '}' && ch != '#' {
		ch = l.inchar()
	}
	l.savchar(ch)
	return l.src[start:l.i]
}

// filename is read_filename: after blanks, the rest of the line.
func (l *sedReader) filename() string {
	ch := l.inNonblank()
	start := l.i - 1
	if ch == sedEOF {
		return ""
	}
	for ch != sedEOF && ch != '\n' {
		ch = l.inchar()
	}
	end := l.i
	if ch == '\n' {
		end--
	}
	return l.src[start:end]
}

// text is read_text for a, i and c: up to an unescaped newline, a
// backslash keeping the next character.
func (l *sedReader) text(leadin int) {
	if leadin == sedEOF {
		return
	}
	ch := l.inchar()
	for ch != sedEOF && ch != '\n' {
		if ch == '\\' {
			ch = l.inchar()
			if ch == sedEOF {
				return
			}
		}
		ch = l.inchar()
	}
}

// slash is match_slash: up to an unescaped delimiter on the same line;
// in a regex a bracket expression is skipped whole, so [/] does not end
// it.
func (l *sedReader) slash(slash int, regex bool) bool {
	for {
		ch := l.inchar()
		if ch == sedEOF || ch == '\n' {
			l.savchar(ch)
			return false
		}
		switch {
		case ch == slash:
			return true
		case ch == '\\':
			if l.inchar() == sedEOF {
				return false
			}
		case ch == '[' && regex:
			if l.charClass() != ']' {
				return false
			}
		}
	}
}

// charClass is snarf_char_class: the rest of a bracket expression, with
// [:class:], [=equiv=] and [.coll.] inside it; it returns the character
// it stopped at (] when the expression closed).
func (l *sedReader) charClass() int {
	ch := l.inchar()
	if ch == '^' {
		ch = l.inchar()
	}
	if ch == ']' {
		ch = l.inchar()
	}
	state, delim := 0, 0
	for ; ; ch = l.inchar() {
		switch ch {
		case sedEOF, '\n':
			return ch
		case '.', ':', '=':
			if state == 1 {
				delim, state = ch, 2
				continue
			} else if state == 2 && ch == delim {
				state = 3
				continue
			}
		case '[':
			if state == 0 {
				state = 1
			}
			continue
		case ']':
			if state == 0 || state == 1 {
				return ch
			} else if state == 3 {
				state = 0
			}
		}
		state &^= 1
	}
}

// address is compile_address: it reports whether ch began an address.
func (l *sedReader) address(ch int) bool {
	switch {
	case ch == '/' || ch == '\\':
		if ch == '\\' {
			ch = l.inchar()
		}
		if !l.slash(ch, true) {
			l.bad = true
			return true
		}
		for {
			ch = l.inNonblank()
			if ch != 'I' && ch != 'M' {
				l.savchar(ch)
				return true
			}
		}
	case isSedDigit(ch):
		l.integer(ch)
		ch = l.inNonblank()
		if ch != '~' {
			l.savchar(ch)
		} else {
			l.integer(l.inNonblank())
		}
		return true
	case ch == '+' || ch == '~':
		l.integer(l.inNonblank())
		return true
	case ch == '$':
		return true
	}
	return false
}

// substFlags is mark_subst_opts: the flags after s///, blanks allowed
// between them, a w flag taking the rest of the line as its file.
func (l *sedReader) substFlags() (file string, eval, ok bool) {
	for {
		ch := l.inNonblank()
		switch {
		case ch == 'i' || ch == 'I' || ch == 'm' || ch == 'M' || ch == 'p' || ch == 'g':
		case ch == 'e':
			eval = true
		case ch == 'w':
			f := l.filename()
			return f, eval, f != ""
		case isSedDigit(ch):
			l.integer(ch)
		case ch == '}' || ch == '#':
			l.savchar(ch)
			return "", eval, true
		case ch == sedEOF || ch == '\n' || ch == ';':
			return "", eval, true
		case ch == '\r':
			if l.inchar() == '\n' {
				return "", eval, true
			}
			return "", eval, false
		default:
			return "", eval, false
		}
	}
}
