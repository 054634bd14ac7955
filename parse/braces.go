package parse

import (
	"slices"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// maxBraceWords bounds brace expansion; a word that expands to more stays
// dynamic.
const maxBraceWords = 256

// resolveArgs resolves one command argument into the words bash passes:
// brace expansion (a{b,c} and {1..3}) is purely lexical, so it is done
// here exactly, and each resulting word is then resolved as any other.
func resolveArgs(src string, w *syntax.Word) []Word {
	return resolveArgsBound(src, w, nil)
}

// resolveArgsBound is resolveArgs where the text binds the variables in
// bound (see resolveBound).
func resolveArgsBound(src string, w *syntax.Word, bound bindings) []Word {
	return appendArgs(nil, src, w, bound)
}

// appendArgs appends the words of resolveArgsBound to out: a command's
// arguments go into its Argv without a slice per argument.
func appendArgs(out []Word, src string, w *syntax.Word, bound bindings) []Word {
	if !slices.ContainsFunc(w.Parts, func(p syntax.WordPart) bool {
		l, ok := p.(*syntax.Lit)
		return ok && strings.IndexByte(l.Value, '{') >= 0
	}) {
		return append(out, resolveBound(src, w, modeArg, bound))
	}
	cp := &syntax.Word{Parts: slices.Clone(w.Parts)}
	if !syntax.SplitBraces(cp) {
		return append(out, resolveWord(src, w, modeArg))
	}
	alts, ok := expandBraces(cp.Parts)
	if !ok {
		return append(out, Word{Value: sourceText(src, w), Why: whyBrace, Pos: toPos(w.Pos())})
	}
	out = slices.Grow(out, len(alts))
	for _, parts := range alts {
		var b wordBuf
		for _, p := range parts {
			resolvePart(&b, src, p, false)
		}
		if b.why == "" {
			b.why = expansionIn(b.val, b.bare, modeArg)
		}
		if b.why != "" {
			out = append(out, Word{Value: sourceText(src, w), Why: b.why, Pos: toPos(w.Pos())})
			continue
		}
		if len(b.val) == 0 && !slices.ContainsFunc(parts, quotedPart) {
			// An unquoted empty word is removed: x{,} is one word.
			continue
		}
		out = append(out, Word{Value: string(b.val), Literal: true, Pos: toPos(w.Pos())})
	}
	return out
}

// expandBraces expands the brace expressions SplitBraces found, left to
// right, as bash does. It fails on forms it does not model exactly.
func expandBraces(parts []syntax.WordPart) ([][]syntax.WordPart, bool) {
	out := [][]syntax.WordPart{nil}
	for _, p := range parts {
		be, ok := p.(*syntax.BraceExp)
		if !ok {
			for i := range out {
				out[i] = append(out[i], p)
			}
			continue
		}
		var alts [][]syntax.WordPart
		if be.Sequence {
			vals, ok := braceSequence(be)
			if !ok {
				return nil, false
			}
			for _, v := range vals {
				alts = append(alts, []syntax.WordPart{&syntax.Lit{Value: v}})
			}
		} else {
			for _, e := range be.Elems {
				sub, ok := expandBraces(e.Parts)
				if !ok {
					return nil, false
				}
				alts = append(alts, sub...)
			}
		}
		if len(out)*len(alts) > maxBraceWords {
			return nil, false
		}
		next := make([][]syntax.WordPart, 0, len(out)*len(alts))
		for _, prefix := range out {
			for _, a := range alts {
				next = append(next, append(slices.Clip(prefix), a...))
			}
		}
		out = next
	}
	return out, true
}

// braceSequence expands {x..y[..incr]} over integers without leading
// zeros or over letters of one case.
func braceSequence(be *syntax.BraceExp) ([]string, bool) {
	if len(be.Elems) < 2 || len(be.Elems) > 3 {
		return nil, false
	}
	from, to := be.Elems[0].Lit(), be.Elems[1].Lit()
	step := int64(1)
	if len(be.Elems) == 3 {
		n, err := strconv.ParseInt(be.Elems[2].Lit(), 10, 64)
		if err != nil || n == 0 {
			return nil, false
		}
		step = max(n, -n)
	}
	if a, b, ok := seqLetters(from, to); ok {
		return seqValues(int64(a), int64(b), step, func(n int64) string { return string(rune(n)) })
	}
	a, errA := strconv.ParseInt(from, 10, 32)
	b, errB := strconv.ParseInt(to, 10, 32)
	if errA != nil || errB != nil || paddedInt(from) || paddedInt(to) {
		return nil, false
	}
	return seqValues(a, b, step, func(n int64) string { return strconv.FormatInt(n, 10) })
}

func seqValues(a, b, step int64, format func(int64) string) ([]string, bool) {
	if a > b {
		step = -step
	}
	var out []string
	for n := a; (step > 0 && n <= b) || (step < 0 && n >= b); n += step {
		if len(out) == maxBraceWords {
			return nil, false
		}
		out = append(out, format(n))
	}
	return out, true
}

// seqLetters accepts two letters of the same case.
func seqLetters(from, to string) (byte, byte, bool) {
	if len(from) != 1 || len(to) != 1 {
		return 0, 0, false
	}
	a, b := from[0], to[0]
	lower := func(c byte) bool { return c >= 'a' && c <= 'z' }
	upper := func(c byte) bool { return c >= 'A' && c <= 'Z' }
	return a, b, lower(a) && lower(b) || upper(a) && upper(b)
}

// paddedInt reports an integer written with a leading zero or sign that
// bash may pad or keep.
func paddedInt(s string) bool {
	if s == "" || s[0] == '+' {
		return true
	}
	s = stripMinus(s)
	return len(s) > 1 && s[0] == '0'
}

func stripMinus(s string) string {
	if s != "" && s[0] == '-' {
		return s[1:]
	}
	return s
}

func quotedPart(p syntax.WordPart) bool {
	switch p.(type) {
	case *syntax.SglQuoted, *syntax.DblQuoted:
		return true
	}
	return false
}
