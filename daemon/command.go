package daemon

import (
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/narrowd/narrowd/parse"
	"github.com/narrowd/narrowd/rules"
)

// singleCommand is the fact profiles match with command_is: src, whose
// analysis is a, runs exactly one program, so the program's words are
// the whole call. It is nil unless all of these hold:
//   - the text is one simple command, by bash's own grammar: no list (;
//     && || &), pipeline, negation, subshell, group, loop, conditional,
//     function, coprocess or background job, no assignment before the
//     command (FOO=1 git status sets what git reads);
//   - its only redirects are the ones that open nothing a program reads
//     or writes: to or from /dev/null and descriptor duplication (2>&1);
//   - narrowd's analysis of it is proven (no unproven construct, no
//     parse error) and finds exactly one program, known to the command
//     table with every flag given, reached through no wrapper (sudo,
//     env, command, xargs, sh -c…), so the program is the command's first
//     word and nothing else runs;
//   - every word is literal: argv is exactly what the program receives.
//
// Each condition is checked on its own, so a hole in one does not open
// the others.
func singleCommand(src string, a *parse.Analysis) *rules.ShellCommand {
	if a == nil || !a.Proven() || len(a.Programs) != 1 {
		return nil
	}
	p := &a.Programs[0]
	if !p.Known || p.Privileged || len(p.Wrappers) > 0 || len(p.Argv) == 0 {
		return nil
	}
	argv := make([]string, len(p.Argv))
	for i, w := range p.Argv {
		if !w.Literal || w.Glob || w.Quoted {
			return nil
		}
		argv[i] = w.Value
	}
	if argv[0] != p.Name || !oneSimpleCommand(src, len(argv)) {
		return nil
	}
	return &rules.ShellCommand{Argv: argv}
}

// oneSimpleCommand reports that src, read as bash reads it, is one
// simple command of nwords words with nothing around it but harmless
// redirects.
func oneSimpleCommand(src string, nwords int) bool {
	if strings.ContainsAny(src, "\x00\r") {
		return false
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
	if err != nil || len(f.Stmts) != 1 {
		return false
	}
	s := f.Stmts[0]
	if s.Negated || s.Background || s.Coprocess || s.Disown {
		return false
	}
	call, ok := s.Cmd.(*syntax.CallExpr)
	if !ok || len(call.Assigns) > 0 || len(call.Args) != nwords {
		return false
	}
	for _, r := range s.Redirs {
		if !harmlessRedirect(r) {
			return false
		}
	}
	return true
}

// harmlessRedirect reports a redirect that opens nothing a program reads
// or writes: output to /dev/null (>, >>, &>, 2>…), input from it, or a
// duplication of a standard descriptor (2>&1, >&2). Here-documents and
// here-strings feed text, files are files, and a named descriptor
// ({fd}>…) assigns a variable: none of them counts.
func harmlessRedirect(r *syntax.Redirect) bool {
	if r.N != nil && r.N.Value != "0" && r.N.Value != "1" && r.N.Value != "2" {
		return false
	}
	target, ok := plainWord(r.Word)
	if !ok {
		return false
	}
	switch r.Op {
	case syntax.RdrOut, syntax.AppOut, syntax.RdrAll, syntax.AppAll, syntax.RdrIn, syntax.RdrClob:
		return target == "/dev/null"
	case syntax.DplOut:
		return target == "1" || target == "2"
	}
	return false
}

// plainWord is the value of a word made of one unquoted literal.
func plainWord(w *syntax.Word) (string, bool) {
	if w == nil || len(w.Parts) != 1 {
		return "", false
	}
	lit, ok := w.Parts[0].(*syntax.Lit)
	if !ok {
		return "", false
	}
	return lit.Value, true
}

// shellCommand is the [rules.ShellCommand] of a call to a built-in shell
// tool, or nil: when the profile never reads it (computing it parses the
// text once more), when the call's directory is not proven inside a
// workspace, or when the text is not exactly one proven program (see
// singleCommand).
func (e *Engine) shellCommand(spec rules.InputSpec, call rules.Call, mcp bool) *rules.ShellCommand {
	if mcp || spec.Kind != rules.InputShell || !e.profile.UsesCommand() {
		return nil
	}
	ps := e.paths.WithRoots(append(slices.Clip(call.Workspaces), e.roots...))
	cwd, _, why := shellDir(spec, call, ps)
	if why != "" || !ps.Resolve(cwd, ".").Inside {
		return nil
	}
	src, ok := call.Input[spec.Field].(string)
	if !ok {
		return nil
	}
	return singleCommand(src, e.analyses.Analyze(src))
}
