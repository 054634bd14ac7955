package parse

// OptionsClosed reports that the command named argv0 only reads and that
// no option of it can change that beyond a recursive walk or a listing
// format: its table entry has no subcommands, no handler, read or text
// operands, and only harmless option effects. For such a command a pathname pattern whose expansion may
// start with '-' (ls *.go, a file named -R) can only turn into one of
// those harmless options, so narrowd may still prove the call.
func (k *Knowledge) OptionsClosed(argv0 string) bool {
	name, ok := k.commandName(argv0)
	if !ok {
		return false
	}
	s := k.cmds[name]
	if s == nil || len(s.Sub) > 0 || s.Handler != "" || s.Unknown != "" || s.Empty != "" ||
		s.RunsCode || s.EnvAssign || s.ResponseFiles || s.ReadsEnv || s.Mutation != lvlRead || s.Net != netUnset ||
		s.Cwd.set && s.Cwd.a != Read || s.Global || s.Irreversible || s.Privileged {
		return false
	}
	// Only readers: an expansion that lands in an operand slot is read
	// or is text, never written, run or sent.
	for _, sl := range s.Args {
		if !(sl.kind == slotText || sl.kind == slotPath && sl.access == Read) {
			return false
		}
	}
	for _, e := range s.Flag {
		if !harmlessEffect(e) {
			return false
		}
	}
	return true
}

// harmlessEffect reports a flag that only changes recursion, output
// format or stops option parsing: it reads nothing new, writes nothing,
// reaches nothing and runs nothing.
func harmlessEffect(e *effect) bool {
	return e.Mutation <= lvlRead && e.Net == netUnset && !e.RunsCode && !e.Global &&
		e.Financial == finUnset && !e.Irreversible && !e.Privileged &&
		!e.Path.set && !e.AtPath.set && !e.Dir && !e.Into && e.Args == nil && !e.hasArgs &&
		!e.Retarget.set && !e.Cwd.set && e.Unknown == "" && e.Check == ""
}
