package proofs

import (
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// sensitivePattern is one sensitive-path pattern, with the shape of the
// common ones (**/NAME, **/*.ext, **/name*, **/dir/**) read once, so that
// matching a path against some sixty patterns on every call does not run
// the general matcher for each. Any other pattern keeps doublestar.
type sensitivePattern struct {
	pat  string
	kind patternKind
	// lit is the literal part: the segments of **/a/b and **/a/b/**, the
	// suffix of **/*x, the prefix of **/x*.
	lit  string
	segs []string
}

type patternKind uint8

const (
	patternGeneral patternKind = iota
	patternTail                // **/a/b: the path ends in these segments
	patternDir                 // **/a/b/**: the path holds these segments in a row
	patternSuffix              // **/*x: the last segment ends in x
	patternPrefix              // **/x*: the last segment begins with x
)

func compileSensitive(pats []string) []sensitivePattern {
	out := make([]sensitivePattern, len(pats))
	for i, p := range pats {
		out[i] = compilePattern(p)
	}
	return out
}

func compilePattern(p string) sensitivePattern {
	sp := sensitivePattern{pat: p}
	rest, ok := strings.CutPrefix(p, "**/")
	if !ok || rest == "" {
		return sp
	}
	literal := func(s string) bool {
		return s != "" && !strings.ContainsAny(s, `*?[]{}\`) && !strings.Contains(s, "//") &&
			!strings.HasPrefix(s, "/") && !strings.HasSuffix(s, "/")
	}
	switch {
	case literal(rest):
		sp.kind, sp.segs = patternTail, strings.Split(rest, "/")
	case strings.HasSuffix(rest, "/**") && literal(strings.TrimSuffix(rest, "/**")):
		sp.kind, sp.segs = patternDir, strings.Split(strings.TrimSuffix(rest, "/**"), "/")
	case strings.HasPrefix(rest, "*") && literal(rest[1:]) && !strings.Contains(rest, "/"):
		sp.kind, sp.lit = patternSuffix, rest[1:]
	case strings.HasSuffix(rest, "*") && literal(rest[:len(rest)-1]) && !strings.Contains(rest, "/"):
		sp.kind, sp.lit = patternPrefix, rest[:len(rest)-1]
	}
	return sp
}

// match reports whether rel (a cleaned path without a leading /, split
// into segs) matches, exactly as doublestar.Match(pat, rel) would.
func (sp sensitivePattern) match(rel string, segs []string) bool {
	last := segs[len(segs)-1]
	switch sp.kind {
	case patternTail:
		return len(segs) >= len(sp.segs) && equalSegs(segs[len(segs)-len(sp.segs):], sp.segs)
	case patternDir:
		for i := 0; i+len(sp.segs) <= len(segs); i++ {
			if equalSegs(segs[i:i+len(sp.segs)], sp.segs) {
				return true
			}
		}
		return false
	case patternSuffix:
		return strings.HasSuffix(last, sp.lit)
	case patternPrefix:
		return strings.HasPrefix(last, sp.lit)
	}
	ok, _ := doublestar.Match(sp.pat, rel)
	return ok
}

func equalSegs(a, b []string) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
