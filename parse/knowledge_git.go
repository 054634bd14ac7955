package parse

// gitConfig tells reading git config from writing it, in both the
// --get style and the git 2.46 subcommand style.
func (r *run) gitConfig(p parsed) {
	write := false
	ops := p.ops
	if len(ops) > 0 {
		switch ops[0].Value {
		case "list", "get":
			ops = nil
		case "set", "unset":
			write = true
			ops = ops[1:]
		case "rename-section", "remove-section":
			r.fail("git config " + ops[0].Value + " is not modelled")
			return
		case "edit":
			r.fail("git config edit runs an editor")
			return
		}
	}
	switch {
	case p.hasHit("-e"):
		r.fail("git config --edit runs an editor")
		return
	case p.hasHit("--rename-section", "--remove-section"):
		r.fail("git config section edits are not modelled")
		return
	case p.hasHit("--unset", "--unset-all", "--replace-all", "--add"):
		write = true
	case p.hasHit("--get", "--get-all", "--get-regexp", "--get-urlmatch", "-l", "--get-color", "--get-colorbool"):
	case len(ops) >= 2:
		write = true
	}
	if !write {
		return
	}
	// The key written must be one git -c may set too: core.fsmonitor,
	// core.pager, alias.*, filters and hooks paths make later git
	// commands run what the value names.
	if len(ops) > 0 && !r.k.safeGitKey(ops[0].Value) {
		r.fail("git config " + ops[0].Value + " may make git run code")
		return
	}
	r.rule = append(r.rule, "set")
	r.mut = max(r.mut, lvlUpdate)
	files := p.values("-f")
	switch {
	case len(files) > 0:
		// The -f paths are already recorded; upgraded below.
	case p.hasHit("--global", "--system"):
		r.global = true
	default:
		// The repository's own config: later git commands read it, and
		// keys like core.fsmonitor make them run code. That is why every
		// git command that can honour such keys is RunsCode.
		dir := Word{Value: ".", Literal: true, Pos: r.prog.Pos}
		if r.dir != nil {
			dir = *r.dir
		}
		r.addPath(dir, Update, false)
	}
	// Flag paths of reads became reads; writes upgrade them above.
	for i := range r.paths {
		for _, f := range files {
			if r.paths[i].Word == f && r.paths[i].Access == Read {
				r.paths[i].Access = Update
			}
		}
	}
}
