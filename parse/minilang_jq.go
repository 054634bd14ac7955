package parse

import "strings"

// jqModuleWords are the jq directives that load other files: import and
// include read NAME.jq code or NAME.json data from the search path (-L,
// ~/.jq, $ORIGIN/../lib) or from a relative path, and modulemeta reads a
// module's file. They are matched anywhere in the text, strings too, so
// no lexer disagreement can hide one.
var jqModuleWords = [...]string{"import", "include", "modulemeta"}

// jq reports a program that reads the environment (env, $ENV) and
// refuses one that loads modules. A program read from a file (-f,
// --from-file, or a /dev/fd pipe from a process substitution) is one
// narrowd cannot see, so the table makes it unknown; yq's load() reads
// other files.
func (r *run) jq(p parsed) {
	prog := ""
	switch {
	case p.hasHit("-f", "--from-file"):
		r.fail(r.prog.Name + " --from-file runs a program narrowd cannot read")
		return
	case len(p.ops) > 0:
		prog = p.ops[0].Value
	}
	if r.prog.Name == "yq" && strings.Contains(prog, "load") {
		r.fail("yq load reads other files")
		return
	}
	for _, w := range jqModuleWords {
		if strings.Contains(prog, w) {
			r.fail(r.prog.Name + " " + w + " loads a module or data file")
			return
		}
	}
	if strings.Contains(prog, "env") || strings.Contains(prog, "ENV") {
		r.readsEnv()
	}
}
