package parse

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"
)

// Script is every simple command a shell text would run, found by reading
// it as bash does, without expanding or running anything.
type Script struct {
	// Commands lists the simple commands in source order, including
	// those inside pipelines, lists, subshells, groups, loops,
	// conditionals, function bodies and command or process
	// substitutions. A substitution's commands follow the command whose
	// word contains them.
	Commands []Command
	// Unproven lists constructs whose effect the text alone cannot
	// settle: arithmetic over variables (subscripts can run code),
	// indirect or assigning parameter expansions, namerefs.
	Unproven []Unproven
	// Functions names every function the text defines.
	Functions []string
}

// Command is one simple command: the words the shell would pass to a
// program or builtin, the variables it assigns and its redirects.
type Command struct {
	// Argv is the command name and its arguments, after exact brace
	// expansion (one source word may give several). It is empty for a
	// bare assignment (FOO=bar), a loop setting its variable (for f in
	// …) and redirects without a command (> file, or those of a
	// compound command: { …; } > file).
	Argv []Word
	// Env holds the assignments before the command (FOO=bar cmd), which
	// apply to it alone; with Argv empty or Decl set, the variables the
	// shell itself sets for the commands that follow.
	Env []Assign
	// Decl reports a declaration builtin (declare, export, local,
	// readonly, typeset): Argv renders it, Env holds what it assigns.
	Decl   bool
	Redirs []Redirect
	Pos    Pos
	// Dirs lists the working directories the command may run in when an
	// earlier cd or pushd changed it: relative to the directory the text
	// starts in ("." is that one), or absolute. Nil means only the start
	// directory. Relative paths of the command are relative to each.
	Dirs []string
	// DirUnknown reports that an earlier cd left the working directory
	// unknown (cd with no operand, cd -, popd, a dynamic operand, cd in a
	// loop).
	DirUnknown bool
	// Stdin, when not nil, is exactly the words the command reads from
	// its standard input, one per line or blank: the output of an echo
	// of plain literal words piped into it (echo a b | xargs cat). Nil
	// means unknown.
	Stdin []Word
}

// Assign is one variable assignment.
type Assign struct {
	Name string
	// Value is the assigned value; an array assignment, a subscripted
	// name or an append is never literal.
	Value Word
	Pos   Pos
}

// Redirect is one redirection of a command.
type Redirect struct {
	// Op is the operator as written: ">", ">>", ">|", "&>", "&>>",
	// "<", "<>", ">&", "<&", "<<", "<<-" or "<<<".
	Op string
	// Fd is the file descriptor written before the operator ("2" in
	// 2>file, "{fd}" for a named one), empty for the default.
	Fd string
	// Target is the word after the operator: a path, a descriptor
	// ("1" in 2>&1, "-" to close), a here-string, or for << and <<- the
	// here-document's body (its delimiter is not kept).
	Target Word
	// Path reports that Target names a file the redirect opens, with
	// Access. Descriptor duplications and here-documents open none.
	Path   bool
	Access Access
	Pos    Pos
}

// Parse reads src as a bash script and returns every simple command it
// would run. It never expands or runs anything. A syntax error is an
// [*Error].
func Parse(src string) (*Script, error) {
	if i := strings.IndexAny(src, "\x00\r"); i >= 0 {
		// bash -c ends the text at a NUL and bash refuses it in a
		// file; the parser reads a carriage return as a blank where
		// bash keeps it in the word. Either way what would run is not
		// what the parser sees.
		line := 1 + strings.Count(src[:i], "\n")
		col := i - strings.LastIndexByte(src[:i], '\n')
		what := "nul byte"
		if src[i] == '\r' {
			what = "carriage return"
		}
		return nil, &Error{Pos: Pos{Line: line, Col: col}, Text: what + " in script"}
	}
	if err := preScan(src); err != nil {
		return nil, err
	}
	p := parsers.Get().(*syntax.Parser)
	f, err := p.Parse(strings.NewReader(src), "")
	// Parse resets every piece of state it reads, and the tree it
	// returns holds none of the parser's buffers: the parser can serve
	// the next call (a panic above simply drops it).
	parsers.Put(p)
	if err != nil {
		return nil, toError(err)
	}
	if err := checkTree(f); err != nil {
		return nil, err
	}
	w := walker{src: src, s: &Script{}}
	if !mentions(src, f, "PWD") {
		// bash sets PWD itself to a name of the working directory;
		// the text never assigns it.
		w.bound = bindings{"PWD": nil}
	}
	w.stmts(f.Stmts)
	return w.s, nil
}

// parsers are reused bash parsers: a syntax.Parser carries a 1 KiB read
// buffer and was the largest allocation of a decision.
var parsers = sync.Pool{New: func() any { return syntax.NewParser(syntax.Variant(syntax.LangBash)) }}

func toError(err error) error {
	var pe syntax.ParseError
	if errors.As(err, &pe) {
		return &Error{Pos: toPos(pe.Pos), Text: pe.Text}
	}
	var le syntax.LangError
	if errors.As(err, &le) {
		return &Error{Pos: toPos(le.Pos), Text: fmt.Sprintf("%s is not supported by bash", le.Feature)}
	}
	return &Error{Pos: Pos{Line: 1, Col: 1}, Text: fmt.Sprintf("failed to parse: %v", err)}
}

// toPos converts a parser position. Unknown lines or columns (the parser
// drops those that overflow) become 1, so a position is always inside
// the text.
func toPos(p syntax.Pos) Pos {
	out := Pos{Line: int(p.Line()), Col: int(p.Col())}
	if out.Line == 0 {
		out.Line = 1
	}
	if out.Col == 0 {
		out.Col = 1
	}
	return out
}

// Reasons found while parsing.
const (
	whyArith      = "arithmetic"
	whyIndirect   = "indirect expansion"
	whyParamSet   = "parameter assignment"
	whyPrompt     = "prompt expansion"
	whyNameref    = "nameref"
	whyIntegerVar = "integer variable"
	whyRedirect   = "unknown redirect"
	whyCommand    = "unknown command form"
)

// walker collects a script's commands from its syntax tree.
type walker struct {
	src string
	s   *Script
	// dir is where the shell may be at the current point.
	dir dirState
	// bound are the variables the text binds at the current point.
	bound bindings
	// loopWalks counts the body walks for loops with bound variables
	// have cost so far (see maxLoopWalks).
	loopWalks int
}

func (w *walker) unproven(p syntax.Pos, why string) {
	w.s.Unproven = append(w.s.Unproven, Unproven{Pos: toPos(p), Why: why})
}

// stmts walks a list run in sequence and returns the directories the
// shell may be in if the last one succeeded.
func (w *walker) stmts(ss []*syntax.Stmt) dirState {
	succ := w.dir
	for _, s := range ss {
		succ = w.stmt(s)
	}
	return succ
}

// stmt walks one statement. w.dir is where the shell may be before it
// and is left where it may be after; the result is where it may be when
// the statement succeeded (cd x && …).
func (w *walker) stmt(s *syntax.Stmt) dirState {
	if s.Background || s.Coprocess || s.Disown {
		// An asynchronous command runs in a subshell.
		before := w.dir
		w.stmtSync(s)
		w.dir = before
		return before
	}
	succ := w.stmtSync(s)
	if s.Negated {
		return w.dir
	}
	return succ
}

func (w *walker) stmtSync(s *syntax.Stmt) dirState {
	if call, ok := s.Cmd.(*syntax.CallExpr); ok {
		return w.call(call, s.Redirs, s.Pos())
	}
	if len(s.Redirs) > 0 || s.Cmd == nil {
		// The shell itself opens these files, around the compound
		// command or with no command at all.
		w.call(nil, s.Redirs, s.Pos())
	}
	switch c := s.Cmd.(type) {
	case nil:
	case *syntax.IfClause:
		var outs []dirState
		for ; c != nil; c = c.Else {
			succ := w.stmts(c.Cond)
			fail := w.dir
			w.dir = succ
			w.stmts(c.Then)
			outs = append(outs, w.dir)
			w.dir = fail
		}
		w.dir = unionDirs(append(outs, w.dir)...)
	case *syntax.WhileClause:
		names := w.readNames(c)
		w.loop(func() {
			w.stmts(c.Cond)
			outer := w.bound
			for _, n := range names {
				// The body runs only after read succeeded, which
				// gave each name a value from its input.
				w.bound = w.bound.with(n, nil)
			}
			w.stmts(c.Do)
			w.bound = outer
		}, c.Cond, c.Do)
	case *syntax.ForClause:
		var values []Word
		switch l := c.Loop.(type) {
		case *syntax.WordIter:
			for _, x := range l.Items {
				w.word(x)
			}
			if !c.Select {
				// select sets its variable from what a person
				// types, empty when it is not a choice.
				values = w.loopValues(l, c.Do)
			}
			// The loop assigns its variable like NAME=value.
			loopVar := Assign{Name: l.Name.Value, Pos: toPos(l.Name.Pos()), Value: Word{Why: "loop variable", Pos: toPos(l.Name.Pos())}}
			w.s.Commands = append(w.s.Commands, Command{Env: []Assign{loopVar}, Pos: loopVar.Pos, Dirs: w.dir.dirs, DirUnknown: w.dir.unknown})
		case *syntax.CStyleLoop:
			w.arith(l.Init)
			w.arith(l.Cond)
			w.arith(l.Post)
		}
		if values == nil {
			w.loop(func() { w.stmts(c.Do) }, c.Do)
			break
		}
		name := c.Loop.(*syntax.WordIter).Name.Value
		w.loop(func() {
			// The body once per value, the variable bound to it.
			outer := w.bound
			for i := range values {
				w.bound = outer.with(name, &values[i])
				w.stmts(c.Do)
			}
			w.bound = outer
		}, c.Do)
	case *syntax.CaseClause:
		w.word(c.Word)
		before := w.dir
		outs := []dirState{before}
		for _, it := range c.Items {
			for _, p := range it.Patterns {
				w.word(p)
			}
			// ;& and ;;& run on into the next item, so any item
			// may start from where an earlier one left.
			w.dir = unionDirs(outs...)
			w.stmts(it.Stmts)
			outs = append(outs, w.dir)
		}
		w.dir = unionDirs(outs...)
	case *syntax.Block:
		return w.stmts(c.Stmts)
	case *syntax.Subshell:
		before := w.dir
		w.stmts(c.Stmts)
		w.dir = before
	case *syntax.BinaryCmd:
		return w.binary(c)
	case *syntax.FuncDecl:
		if c.Name != nil {
			w.s.Functions = append(w.s.Functions, c.Name.Value)
		}
		for _, n := range c.Names {
			w.s.Functions = append(w.s.Functions, n.Value)
		}
		// The body runs whenever the function is called; defining it
		// runs nothing.
		before := w.dir
		w.stmt(c.Body)
		w.dir = before
	case *syntax.ArithmCmd:
		w.arith(c.X)
	case *syntax.TestClause:
		w.test(c.X)
	case *syntax.DeclClause:
		w.decl(c, s.Pos())
	case *syntax.LetClause:
		for _, x := range c.Exprs {
			w.arith(x)
		}
	case *syntax.TimeClause:
		if c.Stmt != nil {
			return w.stmt(c.Stmt)
		}
	case *syntax.CoprocClause:
		if c.Name != nil {
			w.word(c.Name)
		}
		before := w.dir
		w.stmt(c.Stmt)
		w.dir = before
	default:
		w.unproven(s.Pos(), whyCommand)
	}
	return w.dir
}

// binary walks a pipeline, && or ||.
func (w *walker) binary(c *syntax.BinaryCmd) dirState {
	before := w.dir
	switch c.Op {
	case syntax.AndStmt:
		succ := w.stmt(c.X)
		out := w.dir
		w.dir = succ
		succ = w.stmt(c.Y)
		w.dir = unionDirs(out, w.dir)
		return succ
	case syntax.OrStmt:
		succX := w.stmt(c.X)
		out := w.dir
		succY := w.stmt(c.Y)
		w.dir = unionDirs(out, w.dir)
		return unionDirs(succX, succY)
	default:
		// Every part of a pipeline runs in its own subshell.
		w.stmt(c.X)
		w.dir = before
		next := len(w.s.Commands)
		w.stmt(c.Y)
		w.dir = before
		if out := w.echoOutput(lastOfPipe(c.X)); out != nil && isCall(firstOfPipe(c.Y)) && next < len(w.s.Commands) {
			// The first simple command of Y took the first slot.
			w.s.Commands[next].Stdin = out
		}
		return before
	}
}

// loop walks a loop body. A body that changes directory runs again from
// wherever it left, so the directory is unknown throughout.
func (w *walker) loop(walk func(), lists ...[]*syntax.Stmt) {
	for _, l := range lists {
		for _, s := range l {
			if changesDir(s) {
				w.dir = dirState{unknown: true}
			}
		}
	}
	before := w.dir
	walk()
	w.dir = unionDirs(before, w.dir)
}

// call records a simple command, or the redirects of a compound one when
// c is nil. Its slot is taken first so that commands inside its words
// follow it.
func (w *walker) call(c *syntax.CallExpr, redirs []*syntax.Redirect, pos syntax.Pos) dirState {
	i := len(w.s.Commands)
	w.s.Commands = append(w.s.Commands, Command{Pos: toPos(pos)})
	var cmd Command
	cmd.Pos = toPos(pos)
	cmd.Dirs, cmd.DirUnknown = w.dir.dirs, w.dir.unknown
	if c != nil {
		for _, a := range c.Assigns {
			cmd.Env = append(cmd.Env, w.assign(a))
		}
		if len(c.Args) > 0 {
			cmd.Argv = make([]Word, 0, len(c.Args))
			for _, x := range c.Args {
				cmd.Argv = appendArgs(cmd.Argv, w.src, x, w.bound)
				w.word(x)
			}
		}
	}
	for _, r := range redirs {
		cmd.Redirs = append(cmd.Redirs, w.redirect(r))
	}
	w.s.Commands[i] = cmd
	target, isCd, known := cdTarget(cmd.Argv)
	if !isCd {
		return w.dir
	}
	if !known {
		w.dir = dirState{unknown: true}
		return w.dir
	}
	succ := w.dir.cd(target)
	w.dir = unionDirs(w.dir, succ)
	return succ
}

// assign resolves an assignment and walks its parts.
func (w *walker) assign(a *syntax.Assign) Assign {
	out := Assign{Pos: toPos(a.Pos())}
	if a.Name != nil {
		out.Name = a.Name.Value
	}
	if a.Index != nil {
		w.arith(a.Index)
	}
	switch {
	case a.Array != nil:
		for _, e := range a.Array.Elems {
			if e.Index != nil {
				w.arith(e.Index)
			}
			if e.Value != nil {
				w.word(e.Value)
			}
		}
		out.Value = Word{Value: sourceText(w.src, a.Array), Why: "array assignment", Pos: toPos(a.Array.Pos())}
	case a.Value != nil:
		w.word(a.Value)
		out.Value = resolveWord(w.src, a.Value, modeAssign)
	default:
		out.Value = Word{Literal: true, Pos: out.Pos}
	}
	if out.Value.Literal && (a.Index != nil || a.Append) {
		out.Value.Literal = false
		out.Value.Why = "array or append assignment"
	}
	return out
}

// decl records a declaration builtin as a command whose Env holds what it
// assigns. Its arguments are rendered as the builtin receives them.
func (w *walker) decl(c *syntax.DeclClause, pos syntax.Pos) {
	i := len(w.s.Commands)
	w.s.Commands = append(w.s.Commands, Command{Pos: toPos(pos)})
	cmd := Command{Pos: toPos(pos), Decl: true, Dirs: w.dir.dirs, DirUnknown: w.dir.unknown}
	cmd.Argv = append(cmd.Argv, Word{Value: c.Variant.Value, Literal: true, Pos: toPos(c.Variant.Pos())})
	if c.Variant.Value == "nameref" {
		w.unproven(c.Variant.Pos(), whyNameref)
	}
	canRef := c.Variant.Value != "export" && c.Variant.Value != "readonly"
	for _, a := range c.Args {
		if a.Naked && a.Name == nil {
			// An option, or a word that is only known at run time.
			x := resolveWord(w.src, a.Value, modeArg)
			w.word(a.Value)
			if x.Literal && strings.HasPrefix(x.Value, "-") {
				if canRef && strings.ContainsRune(x.Value, 'n') {
					w.unproven(a.Value.Pos(), whyNameref)
				}
				if strings.ContainsRune(x.Value, 'i') {
					w.unproven(a.Value.Pos(), whyIntegerVar)
				}
			}
			if x.Literal && !strings.HasPrefix(x.Value, "-") && strings.ContainsRune(x.Value, '[') {
				// declare 'a[$(cmd)]=1': the subscript is evaluated.
				w.unproven(a.Value.Pos(), whyArith)
			}
			if eq := assignPrefix([]byte(x.Value)); x.Literal && eq > 0 {
				// A quoted assignment ("PATH=/x") is still one to
				// the builtin, which reads its arguments at run time.
				name := strings.TrimSuffix(x.Value[:eq], "+")
				cmd.Env = append(cmd.Env, Assign{Name: name, Value: Word{Value: x.Value[eq+1:], Literal: true, Pos: x.Pos}, Pos: x.Pos})
			}
			cmd.Argv = append(cmd.Argv, x)
			continue
		}
		as := w.assign(a)
		word := Word{Pos: as.Pos}
		switch {
		case a.Naked:
			word.Value, word.Literal = as.Name, a.Index == nil
			if a.Index != nil {
				word.Value, word.Why = sourceText(w.src, a), "array assignment"
			}
		default:
			op := "="
			if a.Append {
				op = "+="
			}
			word.Value = as.Name + op + as.Value.Value
			word.Literal, word.Why = as.Value.Literal, as.Value.Why
			if !word.Literal {
				word.Value = sourceText(w.src, a)
			}
			cmd.Env = append(cmd.Env, as)
		}
		cmd.Argv = append(cmd.Argv, word)
	}
	w.s.Commands[i] = cmd
}

// redirect resolves one redirect and walks its words.
func (w *walker) redirect(r *syntax.Redirect) Redirect {
	out := Redirect{Op: r.Op.String(), Pos: toPos(r.Pos())}
	if r.N != nil {
		out.Fd = r.N.Value
	}
	if r.Word != nil {
		out.Target = resolveBound(w.src, r.Word, modeArg, w.bound)
	}
	switch r.Op {
	case syntax.RdrOut, syntax.RdrClob, syntax.RdrAll, syntax.RdrInOut:
		out.Path, out.Access = true, Overwrite
	case syntax.AppOut, syntax.AppAll:
		out.Path, out.Access = true, Update
	case syntax.RdrIn:
		out.Path, out.Access = true, Read
	case syntax.DplIn, syntax.DplOut:
		// n>&m, n>&m- and n>&- only duplicate or close descriptors;
		// >&word with any other word opens a file like &>word.
		if !out.Target.Literal || !isFdWord(out.Target.Value) {
			out.Path, out.Access = true, Overwrite
			if r.Op == syntax.DplIn {
				out.Access = Read
			}
		}
	case syntax.Hdoc, syntax.DashHdoc:
		// The delimiter is not expanded; the body is, unless the
		// delimiter is quoted (then it is one literal part).
		out.Target = heredocWord(w.src, r)
		if r.Hdoc != nil && !heredocQuoted(r) {
			w.word(r.Hdoc)
		}
		return out
	case syntax.WordHdoc:
		// No pathname or brace expansion on a here-string.
		out.Target = resolveWord(w.src, r.Word, modeAssign)
	default:
		w.unproven(r.OpPos, whyRedirect)
	}
	if r.Word != nil {
		w.word(r.Word)
	}
	return out
}

// isFdWord reports a descriptor operand of >& or <&: digits, optionally
// followed by '-' (move), or '-' alone (close).
func isFdWord(s string) bool {
	s = strings.TrimSuffix(s, "-")
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// word walks a word for what its expansion runs or evaluates: command and
// process substitutions (their commands are recorded), arithmetic, and
// parameter expansions with side effects.
func (w *walker) word(x *syntax.Word) {
	if x == nil {
		return
	}
	for _, p := range x.Parts {
		w.part(p)
	}
}

func (w *walker) part(p syntax.WordPart) {
	switch p := p.(type) {
	case *syntax.DblQuoted:
		for _, q := range p.Parts {
			w.part(q)
		}
	case *syntax.CmdSubst:
		before := w.dir
		w.stmts(p.Stmts)
		w.dir = before
	case *syntax.ProcSubst:
		before := w.dir
		w.stmts(p.Stmts)
		w.dir = before
	case *syntax.ArithmExp:
		w.arith(p.X)
	case *syntax.ParamExp:
		w.param(p)
	case *syntax.BraceExp:
		for _, e := range p.Elems {
			w.word(e)
		}
	}
}

// param flags parameter expansions that can run code or change variables:
// ${!x} and subscripts evaluate a variable's value, ${x:=v} assigns, and
// ${x@P} expands the value as a prompt.
func (w *walker) param(p *syntax.ParamExp) {
	if p.Excl && p.Names == 0 && !allIndex(p.Index) {
		w.unproven(p.Pos(), whyIndirect)
	}
	if p.Index != nil && !allIndex(p.Index) {
		w.arith(p.Index)
	}
	if p.Slice != nil {
		w.arith(p.Slice.Offset)
		w.arith(p.Slice.Length)
	}
	if p.Repl != nil {
		w.word(p.Repl.Orig)
		w.word(p.Repl.With)
	}
	if p.NestedParam != nil {
		w.part(p.NestedParam)
	}
	if p.Exp != nil {
		switch p.Exp.Op {
		case syntax.AssignUnset, syntax.AssignUnsetOrNull:
			w.unproven(p.Pos(), whyParamSet)
		case syntax.OtherParamOps:
			if op := p.Exp.Word.Lit(); len(op) != 1 || !strings.Contains("QEULuaAKk", op) {
				w.unproven(p.Pos(), whyPrompt)
			}
		}
		w.word(p.Exp.Word)
	}
}

// allIndex reports the subscripts [@] and [*], which evaluate nothing.
func allIndex(x syntax.ArithmExpr) bool {
	wd, ok := x.(*syntax.Word)
	if !ok {
		return false
	}
	s := wd.Lit()
	return s == "@" || s == "*"
}

// arith walks an arithmetic expression. Only numeric constants are
// harmless: bash evaluates a variable's value as an expression in turn,
// and a subscript in it (a[$(cmd)]) runs code.
func (w *walker) arith(x syntax.ArithmExpr) {
	switch x := x.(type) {
	case nil:
	case *syntax.BinaryArithm:
		w.arith(x.X)
		w.arith(x.Y)
	case *syntax.UnaryArithm:
		w.arith(x.X)
	case *syntax.ParenArithm:
		w.arith(x.X)
	case *syntax.Word:
		if !isArithConst(x) {
			w.unproven(x.Pos(), whyArith)
		}
		w.word(x)
	default:
		w.unproven(x.Pos(), whyArith)
	}
}

// test walks a [[ ]] expression. Words are matched, not run; the
// arithmetic comparisons and -v evaluate their operands.
func (w *walker) test(x syntax.TestExpr) {
	switch x := x.(type) {
	case nil:
	case *syntax.BinaryTest:
		switch x.Op {
		case syntax.TsEql, syntax.TsNeq, syntax.TsLeq, syntax.TsGeq, syntax.TsLss, syntax.TsGtr:
			w.testArith(x.X)
			w.testArith(x.Y)
			return
		}
		w.test(x.X)
		w.test(x.Y)
	case *syntax.UnaryTest:
		if x.Op == syntax.TsVarSet || x.Op == syntax.TsRefVar {
			if wd, ok := x.X.(*syntax.Word); ok {
				if v := resolveWord(w.src, wd, modeAssign); !v.Literal || strings.ContainsRune(v.Value, '[') {
					w.unproven(wd.Pos(), whyArith)
				}
			}
		}
		w.test(x.X)
	case *syntax.ParenTest:
		w.test(x.X)
	case *syntax.Word:
		w.word(x)
	}
}

func (w *walker) testArith(x syntax.TestExpr) {
	wd, ok := x.(*syntax.Word)
	if !ok {
		w.unproven(x.Pos(), whyArith)
		w.test(x)
		return
	}
	if !isArithConst(wd) {
		w.unproven(wd.Pos(), whyArith)
	}
	w.word(wd)
}
