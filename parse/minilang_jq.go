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
	if r.prog.Name == "yq" {
		r.yq(p)
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

// yqSubcommands are mikefarah yq's commands; without one, eval is meant.
var yqSubcommands = [...]string{"eval", "e", "eval-all", "ea"}

// yqRefused are yq operators that reach outside the documents: load*
// read files, and eval runs an expression taken from the data, which may
// be a load.
var yqRefused = [...]string{"load", "eval"}

// yq checks yq's expression, which is the first operand or, after a
// subcommand, the second; every operand is checked, so a subcommand
// narrowd does not know cannot move the expression out of sight.
func (r *run) yq(p parsed) {
	ops := p.ops
	if len(ops) > 0 && inList(yqSubcommands[:], ops[0].Value) {
		ops = ops[1:]
	}
	env := false
	for _, op := range ops {
		// The Python yq hands its program to jq: jq's modules too.
		for _, w := range append(yqRefused[:], jqModuleWords[:]...) {
			if strings.Contains(op.Value, w) {
				r.fail("yq " + w + " reads other files")
				return
			}
		}
		env = env || strings.Contains(op.Value, "env") || strings.Contains(op.Value, "ENV")
	}
	if env {
		r.readsEnv()
	}
}
