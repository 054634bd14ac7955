package parse

import (
	"strings"
)

// jq reports a program that reads the environment (env, $ENV). A
// program read from a file (-f, --from-file, or a /dev/fd pipe from a
// process substitution) is one narrowd cannot see: it may read the
// environment, and yq's may load() other files.
func (r *run) jq(p parsed) {
	prog := ""
	switch {
	case p.hasHit("-f", "--from-file"):
		if r.prog.Name == "yq" {
			r.fail("yq --from-file runs a program narrowd cannot read")
			return
		}
		r.readsEnv()
		return
	case len(p.ops) > 0:
		prog = p.ops[0].Value
	}
	if r.prog.Name == "yq" && strings.Contains(prog, "load") {
		r.fail("yq load reads other files")
		return
	}
	if strings.Contains(prog, "env") || strings.Contains(prog, "ENV") {
		r.readsEnv()
	}
}
