package parse

import (
	"strings"
)

// awkForbidden are words whose presence anywhere in an awk program, even
// inside a string, makes it unprovable: they run commands, read other
// files, or change which files are read. Searching the raw text instead of
// tokens means no lexer disagreement (regex or division?) can hide one.
var awkForbidden = [...]string{"system", "getline", "close", "fflush", "ARGV", "ARGC", "@", "PROCINFO"}

// awk checks an awk program and reads its file operands.
func (r *run) awk(p parsed) {
	progs := p.values("-e")
	files := p.ops
	if len(progs) == 0 {
		if len(p.ops) == 0 {
			r.fail("awk without a program")
			return
		}
		progs, files = p.ops[:1], p.ops[1:]
	}
	for _, w := range progs {
		if why := awkProgram(w.Value); why != "" {
			r.fail(why)
			return
		}
		if strings.Contains(w.Value, "ENVIRON") {
			r.readsEnv()
		}
	}
	access := Read
	if len(p.values("-i")) > 0 {
		// -i inplace (the only include the check lets through).
		access = Overwrite
		r.rule = append(r.rule, "-i inplace")
	}
	for _, f := range files {
		if isAssignment(f.Value) || f.Value == "-" {
			continue
		}
		r.addPath(f, access, false)
	}
}

// awkProgram reports why an awk program is unprovable, or "".
func awkProgram(src string) string {
	for i := 0; i < len(src); i++ {
		c := src[i]
		if c != '\n' && c != '\t' && (c < ' ' || c > '~') {
			return "awk program with control or non-ASCII bytes"
		}
	}
	// A backslash-newline could split a word; awk rejoins it.
	flat := strings.ReplaceAll(src, "\\\n", "")
	for _, w := range awkForbidden {
		if strings.Contains(flat, w) {
			return "awk program uses " + w
		}
	}
	// | outside || is a pipe to or from a command.
	for i := 0; i < len(flat); i++ {
		if flat[i] != '|' {
			continue
		}
		if i+1 < len(flat) && flat[i+1] == '|' {
			i++
			continue
		}
		return "awk program uses a pipe"
	}
	// A > after print (or printf) in the same statement is output to a
	// file. Statements run left to right, so a > before the first print
	// of a line is a comparison. A print statement continues onto the
	// next line after a comma, && or ||, or past a comment, so the search
	// does too.
	pending := false
	for _, line := range strings.Split(flat, "\n") {
		seg := line
		if !pending {
			i := strings.Index(line, "print")
			if i < 0 {
				continue
			}
			seg = line[i:]
		}
		if strings.Contains(seg, ">") {
			return "awk program may print to a file"
		}
		t := strings.TrimRight(seg, " \t")
		pending = strings.Contains(seg, "#") || strings.HasSuffix(t, ",") ||
			strings.HasSuffix(t, "&&") || strings.HasSuffix(t, "||") || strings.HasSuffix(t, "\\")
	}
	return ""
}
