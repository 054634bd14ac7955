package parse

import (
	"path"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// maxLoopValues bounds how many words a for loop may run its body over
// for narrowd to analyze the body once per word; a longer list leaves
// the variable unbound.
const maxLoopValues = 16

// maxLoopWalks bounds the extra body walks all for loops of one text may
// cost together, so that nested loops cannot multiply the work: past
// it, a loop's body is analyzed once with its variable unknown.
const maxLoopWalks = 64

// loopValues returns the words a for loop binds its variable to, when
// the body may be analyzed once per word: the list is given ("in"), each
// of its words is literal or a safe pattern (one expansion of it is a
// path under the pattern's literal directory), the name is bindable and
// the body never names the variable except as a plain expansion, so
// nothing in it can assign it. Otherwise nil: the body is analyzed once
// with the variable unknown.
func (w *walker) loopValues(l *syntax.WordIter, body []*syntax.Stmt) []Word {
	if !l.InPos.IsValid() || len(l.Items) == 0 || l.Name == nil || !bindable(l.Name.Value) ||
		w.loopWalks >= maxLoopWalks {
		return nil
	}
	var values []Word
	for _, x := range l.Items {
		for _, v := range resolveArgsBound(w.src, x, w.bound) {
			if !v.Literal && !v.Glob {
				return nil
			}
			values = append(values, v)
		}
	}
	if len(values) == 0 || len(values) > maxLoopValues || w.loopWalks+len(values) > maxLoopWalks {
		return nil
	}
	used := false
	for _, s := range body {
		if mentions(w.src, s, l.Name.Value) {
			return nil
		}
		used = used || expands(s, l.Name.Value)
	}
	if !used {
		// Nothing to substitute: one analysis of the body says it
		// all.
		return nil
	}
	if slices.ContainsFunc(values, func(v Word) bool { return v.Glob }) && !onlyArgUses(body, l.Name.Value) {
		// A pattern's expansion must reach a program as a word of
		// its own, where the proofs check that the pattern stays in
		// the workspace: "$f" inside other text (echo "x $f"), a
		// test or an assignment would show or use names from
		// anywhere unchecked.
		return nil
	}
	w.loopWalks += len(values)
	return values
}

// onlyArgUses reports whether every expansion of name in body is a whole
// "$name" argument of a simple command or redirect target, the places
// the walker substitutes a bound value.
func onlyArgUses(body []*syntax.Stmt, name string) bool {
	whole := map[*syntax.ParamExp]bool{}
	mark := func(w *syntax.Word) {
		if w == nil || len(w.Parts) != 1 {
			return
		}
		dq, ok := w.Parts[0].(*syntax.DblQuoted)
		if !ok || dq.Dollar || len(dq.Parts) != 1 {
			return
		}
		if pe, ok := dq.Parts[0].(*syntax.ParamExp); ok && plainParam(pe) && pe.Param.Value == name {
			whole[pe] = true
		}
	}
	ok := true
	for _, s := range body {
		syntax.Walk(s, func(n syntax.Node) bool {
			switch n := n.(type) {
			case *syntax.CallExpr:
				for _, a := range n.Args {
					mark(a)
				}
			case *syntax.Redirect:
				if n.Op != syntax.Hdoc && n.Op != syntax.DashHdoc && n.Op != syntax.WordHdoc {
					mark(n.Word)
				}
			}
			return true
		})
		syntax.Walk(s, func(n syntax.Node) bool {
			if pe, isPE := n.(*syntax.ParamExp); isPE && pe.Param != nil && pe.Param.Value == name && !whole[pe] {
				ok = false
			}
			return ok
		})
	}
	return ok
}

// readNames returns the names a while loop's condition reads, when the
// condition is only `read [-r] NAME…` (no assignment, redirect or other
// option) and the body never names them except as plain expansions:
// in the body each holds text read from the loop's input, nothing from
// the environment. Otherwise nil.
func (w *walker) readNames(c *syntax.WhileClause) []string {
	if c.Until || len(c.Cond) != 1 {
		return nil
	}
	s := c.Cond[0]
	if s.Negated || s.Background || s.Coprocess || s.Disown || len(s.Redirs) != 0 {
		return nil
	}
	call, ok := s.Cmd.(*syntax.CallExpr)
	if !ok || len(call.Assigns) != 0 || len(call.Args) < 2 || call.Args[0].Lit() != "read" {
		return nil
	}
	var names []string
	for _, a := range call.Args[1:] {
		v := a.Lit()
		switch {
		case v == "-r":
		case bindable(v):
			for _, b := range c.Do {
				if mentions(w.src, b, v) {
					return nil
				}
			}
			names = append(names, v)
		default:
			return nil
		}
	}
	return names
}

// mentions reports whether name occurs in n anywhere but as a plain
// expansion ($name, ${name}): in any literal text, single-quoted string,
// word (after quote removal and brace expansion) or source text of one.
// Every way bash assigns a variable names it so (NAME=, read NAME,
// printf -vNAME, mapfile, unset, declare, let, ((NAME++)), for NAME,
// ${NAME:=…}, {NAME}>file, eval 'NAME=…'), so it errs towards finding
// one; a command that would assign a name only given at run time keeps
// the ceiling by itself.
func mentions(src string, n syntax.Node, name string) bool {
	found := false
	syntax.Walk(n, func(n syntax.Node) bool {
		if found {
			return false
		}
		switch n := n.(type) {
		case *syntax.ParamExp:
			if plainParam(n) && n.Param.Value == name {
				return false
			}
		case *syntax.Lit:
			found = strings.Contains(n.Value, name)
		case *syntax.SglQuoted:
			var b wordBuf
			ansiC(&b, n.Value)
			found = strings.Contains(n.Value, name) || strings.Contains(string(b.val), name)
		case *syntax.Word:
			// A name made of several parts (li"ne", l{i,}ne) or
			// matched by a pattern (read l*): the word's values.
			// A word only known at run time keeps any command
			// that would assign through it unproven by itself.
			for _, v := range resolveArgs(src, n) {
				switch {
				case v.Literal:
					found = found || strings.Contains(v.Value, name)
				case v.Glob:
					m, err := path.Match(v.Value, name)
					found = found || m || err != nil || strings.Contains(v.Value, name)
				}
			}
		}
		return !found
	})
	return found
}

// expands reports whether n holds a double-quoted plain expansion of
// name, the only use a binding changes.
func expands(n syntax.Node, name string) bool {
	found := false
	syntax.Walk(n, func(n syntax.Node) bool {
		if dq, ok := n.(*syntax.DblQuoted); ok {
			for _, q := range dq.Parts {
				if p, ok := q.(*syntax.ParamExp); ok && plainParam(p) && p.Param.Value == name {
					found = true
				}
			}
		}
		return !found
	})
	return found
}

// lastOfPipe is the statement whose output a pipeline's left side sends
// on: its last part.
func lastOfPipe(s *syntax.Stmt) *syntax.Stmt {
	for {
		b, ok := s.Cmd.(*syntax.BinaryCmd)
		if !ok || b.Op != syntax.Pipe || s.Negated || len(s.Redirs) != 0 {
			return s
		}
		s = b.Y
	}
}

// firstOfPipe is the statement that reads what a pipeline's right side
// receives: its first part.
func firstOfPipe(s *syntax.Stmt) *syntax.Stmt {
	for {
		b, ok := s.Cmd.(*syntax.BinaryCmd)
		if !ok || b.Op != syntax.Pipe || s.Negated || len(s.Redirs) != 0 {
			return s
		}
		s = b.X
	}
}

// isCall reports a simple command with no redirect of its own, so that
// it reads the pipe.
func isCall(s *syntax.Stmt) bool {
	c, ok := s.Cmd.(*syntax.CallExpr)
	return ok && len(c.Args) > 0 && len(s.Redirs) == 0 && !s.Background && !s.Coprocess
}

// echoOutput returns the words an echo statement writes, when it is
// echo with literal words that xargs and read take back unchanged: no
// option (a word starting with '-'), no blank, quote or backslash (which
// xpg_echo, -e, xargs and read would treat specially), no empty word
// and no "_" (the end-of-file word of some xargs). Otherwise nil.
func (w *walker) echoOutput(s *syntax.Stmt) []Word {
	c, ok := s.Cmd.(*syntax.CallExpr)
	if !ok || !isCall(s) || s.Negated || len(c.Assigns) != 0 || c.Args[0].Lit() != "echo" || len(c.Args) < 2 {
		return nil
	}
	var out []Word
	for _, x := range c.Args[1:] {
		for _, v := range resolveArgs(w.src, x) {
			if !v.Literal || v.Value == "" || v.Value == "_" || v.Value[0] == '-' ||
				strings.ContainsAny(v.Value, " \t\n\r\v\f'\"\\") {
				return nil
			}
			out = append(out, v)
		}
	}
	return out
}
