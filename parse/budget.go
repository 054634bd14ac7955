package parse

import (
	"errors"
	"fmt"

	"mvdan.cc/sh/v3/syntax"
)

// The analysis budget. A payload may be 4 MiB, and the parser's and the
// analysis's costs grow faster than the text where it nests or
// repeats: a nest of 8,192 "$(" costs the parser 40 ms alone, and the
// analysis more with every level. Text beyond a budget is not analysed:
// the call keeps its ceiling and the reason says so. The limits sit far
// above anything an agent writes by hand (a here-document of a few
// hundred lines of code uses a few thousand operators).
const (
	// MaxScriptBytes bounds the text of one script.
	MaxScriptBytes = 1 << 20
	// MaxNesters bounds the characters that can open a nested node in
	// the parser's tree: ( { [ ` $ " | &. Their count bounds the depth
	// of the tree the parser builds (each level needs one), and with it
	// the parser's time: it is checked before parsing, quoting ignored.
	MaxNesters = 8192
	// MaxStatements bounds the statement separators (; and newlines)
	// before parsing, and the simple commands after it.
	MaxStatements = 16384
	// MaxCommands bounds the simple commands of one parsed script.
	MaxCommands = 2048
	// MaxWords bounds the words of one parsed script: each costs the
	// path and name proofs about 10 µs.
	MaxWords = 4096
	// MaxDepth bounds the depth of the syntax tree narrowd walks; the
	// walks recurse, and MaxNesters already bounds the depth, so this is
	// a second bound, for deep trees built from few nesters (a pipeline
	// of n stages is n levels deep).
	MaxDepth = 2048
)

// ErrBudget marks an [*Error] for text narrowd does not analyse because
// it exceeds the analysis budget; errors.Is finds it.
var ErrBudget = errors.New("over narrowd's analysis budget")

// budgetError is the text's position and what exceeded the budget.
func budgetError(pos Pos, what string) *Error {
	return &Error{Pos: pos, Text: what + ": too large for narrowd to analyse", Budget: true}
}

// Is makes errors.Is(err, ErrBudget) hold for budget errors.
func (e *Error) Is(target error) bool { return target == ErrBudget && e.Budget }

// preScan bounds the text before the parser sees it. It counts bytes,
// not tokens, so quoting cannot hide anything from it: every count is
// an upper bound of what the parser will build.
func preScan(src string) error {
	if len(src) > MaxScriptBytes {
		return budgetError(Pos{Line: 1, Col: 1}, fmt.Sprintf("%d bytes of shell text (the limit is %d)", len(src), MaxScriptBytes))
	}
	nesters, stmts := 0, 0
	for i := 0; i < len(src); i++ {
		switch src[i] {
		case '(', '{', '[', '`', '$', '"', '|', '&':
			nesters++
		case ';', '\n':
			stmts++
		}
	}
	if nesters > MaxNesters {
		return budgetError(Pos{Line: 1, Col: 1}, fmt.Sprintf("%d nesting operators (the limit is %d)", nesters, MaxNesters))
	}
	if stmts > MaxStatements {
		return budgetError(Pos{Line: 1, Col: 1}, fmt.Sprintf("%d statements (the limit is %d)", stmts, MaxStatements))
	}
	return nil
}

// checkTree bounds the parsed tree: its depth, so that every walk of it
// is bounded, and its simple commands. The walk itself is bounded by
// the pre-scan: the tree has at most MaxNesters levels.
func checkTree(f *syntax.File) error {
	depth, calls, words := 0, 0, 0
	var err error
	syntax.Walk(f, func(n syntax.Node) bool {
		if err != nil {
			return false
		}
		if n == nil {
			depth--
			return true
		}
		depth++
		if depth > MaxDepth {
			err = budgetError(toPos(n.Pos()), fmt.Sprintf("syntax nested deeper than %d levels", MaxDepth))
			return false
		}
		switch n.(type) {
		case *syntax.CallExpr:
			calls++
			if calls > MaxCommands {
				err = budgetError(toPos(n.Pos()), fmt.Sprintf("more than %d commands", MaxCommands))
				return false
			}
		case *syntax.Word:
			words++
			if words > MaxWords {
				err = budgetError(toPos(n.Pos()), fmt.Sprintf("more than %d words", MaxWords))
				return false
			}
		}
		return true
	})
	return err
}
