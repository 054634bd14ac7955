package parse

import (
	"strings"
)

// awkForbidden are words whose presence anywhere in an awk program, even
// inside a string, makes it unprovable: they run commands, read other
// files, or change which files are read. Searching the raw text instead of
// tokens means no lexer disagreement (regex or division?) can hide one.
// SYMTAB and FUNCTAB are gawk's tables of every variable and function by
// name: SYMTAB["ENVI" "RON"] reads the environment with no ENVIRON in
// the text.
var awkForbidden = [...]string{"system", "getline", "close", "fflush", "ARGV", "ARGC", "@", "PROCINFO", "SYMTAB", "FUNCTAB"}

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
		if strings.Contains(w.Value, "ENVIRON") || strings.Contains(strings.ReplaceAll(w.Value, "\\\n", ""), "ENVIRON") {
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

// awkProgram reports why an awk program is unprovable, or "". It reads
// the raw text, strings, regexes and comments included, so that no
// disagreement with an awk's lexer (is / a division or a regex? where
// does a string end?) can hide a construct.
func awkProgram(src string) string {
	for i := 0; i < len(src); i++ {
		c := src[i]
		if c != '\n' && c != '\t' && (c < ' ' || c > '~') {
			return "awk program with control or non-ASCII bytes"
		}
	}
	// A backslash-newline could split a word; awk rejoins it.
	flat := strings.ReplaceAll(src, "\\\n", "")
	for _, text := range []string{src, flat} {
		for _, w := range awkForbidden {
			if strings.Contains(text, w) {
				return "awk program uses " + w
			}
		}
		// | outside || is a pipe to or from a command.
		for i := 0; i < len(text); i++ {
			if text[i] != '|' {
				continue
			}
			if i+1 < len(text) && text[i+1] == '|' {
				i++
				continue
			}
			return "awk program uses a pipe"
		}
	}
	// Output redirection (print > f, printf >> f) always follows a
	// print keyword in the text, but where a print statement ends
	// depends on a grammar that differs between awks (gawk continues a
	// statement after ? and : on the next line, all of them after , &&
	// || { do else and a backslash): any > after the first print is
	// taken as one. A > before every print is a comparison.
	if i := strings.Index(flat, "print"); i >= 0 && strings.Contains(flat[i:], ">") {
		return "awk program may print to a file"
	}
	return ""
}
