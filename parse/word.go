package parse

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"
)

// Reasons a word is dynamic. They are stable phrases: proofs and audit
// records show them.
const (
	whyParam     = "parameter expansion"
	whyCmdSubst  = "command substitution"
	whyProcSubst = "process substitution"
	whyArithExp  = "arithmetic expansion"
	whyGlob      = "glob"
	whyBrace     = "brace expansion"
	whyTilde     = "tilde expansion"
	whyLocale    = "locale string"
	whyLocaleEsc = "locale-dependent escape"
	whyNUL       = "nul byte"
)

// wordMode is the set of expansions bash applies to a word after quote
// removal, which depends on where the word stands.
type wordMode uint8

const (
	// modeArg is a command argument or redirect target: brace, tilde
	// (at the start, and after = or : in assignment-shaped words) and
	// pathname expansion.
	modeArg wordMode = iota
	// modeAssign is the value of a variable assignment: tilde expansion
	// at the start and after each ':', nothing else.
	modeAssign
)

// wordBuf accumulates one word's value after quote removal. bare marks
// the bytes that came from unquoted, unescaped source text: only those
// can start a glob, brace or tilde expansion.
type wordBuf struct {
	val  []byte
	bare []bool
	why  string
	// unquoted is set by a dynamic part that keeps the word from being
	// [Word.Quoted]: anything but a double-quoted command substitution
	// or plain expansion of a bound or shell-set name.
	unquoted bool
	// bound are the variables the text binds where the word stands.
	bound bindings
}

// bindings are the variables the text itself gives a value where a word
// stands, so that expanding them reads nothing from the environment: a
// for loop's variable over literal words or safe patterns (the value is
// that word) and a while-read loop's names (nil: text known only at run
// time). Only lower-case names qualify (see bindable).
type bindings map[string]*Word

// with returns a copy of b with name bound to v.
func (b bindings) with(name string, v *Word) bindings {
	out := make(bindings, len(b)+1)
	for k, x := range b {
		out[k] = x
	}
	out[name] = v
	return out
}

// bindable reports a variable name the text may bind for Quoted words
// and loop substitution: lower case letters, digits and '_', starting
// with a letter. Every variable bash assigns by itself ($_, REPLY,
// OPTARG, BASH_REMATCH, MAPFILE, PWD…) has an upper-case name or is _.
func bindable(name string) bool {
	if name == "" || name[0] < 'a' || name[0] > 'z' {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// shellSet reports the parameters bash sets itself whose values hold
// nothing from the environment: the status, count, process and option
// parameters ($? $# $$ $! $-). PWD, which bash resets at startup to a
// name of the working directory unless the inherited value already
// names it, is bound by Parse instead, and only when the text assigns
// it nowhere.
func shellSet(name string) bool {
	switch name {
	case "?", "#", "$", "!", "-":
		return true
	}
	return false
}

// plainParam reports $name or ${name}: no operator, subscript, length,
// indirection or other form that evaluates or changes anything.
func plainParam(p *syntax.ParamExp) bool {
	return p.Param != nil && p.Flags == nil && !p.Excl && !p.Length && !p.Width && !p.IsSet &&
		p.Split == syntax.OptUnset && p.GlobSubst == syntax.OptUnset && p.RcExpand == syntax.OptUnset &&
		p.NestedParam == nil && p.Index == nil && len(p.Modifiers) == 0 && p.Slice == nil &&
		p.Repl == nil && p.Names == 0 && p.Exp == nil
}

// boundParam is the binding a word that is exactly "$name" or
// "${name}" refers to, when the text bound name to a value.
func boundParam(w *syntax.Word, bound bindings) *Word {
	if len(bound) == 0 || len(w.Parts) != 1 {
		return nil
	}
	dq, ok := w.Parts[0].(*syntax.DblQuoted)
	if !ok || dq.Dollar || len(dq.Parts) != 1 {
		return nil
	}
	pe, ok := dq.Parts[0].(*syntax.ParamExp)
	if !ok || !plainParam(pe) {
		return nil
	}
	return bound[pe.Param.Value]
}

func (b *wordBuf) add(c byte, bare bool) {
	b.val = append(b.val, c)
	b.bare = append(b.bare, bare)
}

func (b *wordBuf) addString(s string, bare bool) {
	for i := 0; i < len(s); i++ {
		b.add(s[i], bare)
	}
}

func (b *wordBuf) dynamic(why string) {
	if b.why == "" {
		b.why = why
	}
}

// resolveWord returns the runtime value of w when bash would pass it on
// unchanged by any run-time expansion, and marks it dynamic otherwise.
// src is the text w was parsed from, used to render dynamic words.
func resolveWord(src string, w *syntax.Word, mode wordMode) Word {
	return resolveBound(src, w, mode, nil)
}

// resolveBound is resolveWord where the text binds the variables in
// bound: a word that is exactly "$name" for a name bound to a value is
// that value (a literal, or a safe pattern standing for one of its
// expansions), and a double-quoted expansion of a bound name may make
// a word Quoted. A word that is exactly one process substitution <(…)
// or >(…) is the descriptor path bash passes in its place.
func resolveBound(src string, w *syntax.Word, mode wordMode, bound bindings) Word {
	out := Word{Pos: toPos(w.Pos())}
	if v := boundParam(w, bound); v != nil && mode == modeArg {
		out = *v
		out.Pos = toPos(w.Pos())
		return out
	}
	if len(w.Parts) == 1 && mode == modeArg {
		if _, ok := w.Parts[0].(*syntax.ProcSubst); ok {
			// bash runs the commands (the walker lists them) and
			// passes /dev/fd/N, a pipe to or from them, in place of
			// the word; N is 63 for the first one, lower for more. A
			// program given it as a path touches only that pipe.
			out.Value, out.Literal = "/dev/fd/63", true
			return out
		}
	}
	if len(w.Parts) == 1 {
		// Fast paths: a plain unquoted word, or one in single quotes.
		switch p := w.Parts[0].(type) {
		case *syntax.Lit:
			if !strings.ContainsAny(p.Value, "\\*?[{~\x00") {
				out.Value, out.Literal = p.Value, true
				return out
			}
		case *syntax.SglQuoted:
			if !p.Dollar && strings.IndexByte(p.Value, 0) < 0 {
				out.Value, out.Literal = p.Value, true
				return out
			}
		}
	}
	b := wordBuf{bound: bound}
	for _, p := range w.Parts {
		resolvePart(&b, src, p, false)
	}
	if b.why != "" && !b.unquoted && expansionIn(b.val, b.bare, mode) == "" {
		out.Quoted = true
	}
	if b.why == "" {
		b.why = expansionIn(b.val, b.bare, mode)
		if b.why == whyGlob {
			if ok, option := globSafe(b.val, b.bare); ok {
				out.Value, out.Why, out.Glob, out.GlobOption = string(b.val), whyGlob, true, option
				return out
			}
		}
	}
	if b.why != "" {
		out.Why = b.why
		out.Value = sourceText(src, w)
		return out
	}
	out.Value = string(b.val)
	out.Literal = true
	return out
}

// sourceText is the source of a node, for rendering dynamic words.
func sourceText(src string, n syntax.Node) string {
	from, to := n.Pos().Offset(), n.End().Offset()
	if !n.Pos().IsValid() || !n.End().IsValid() || from > to || to > uint(len(src)) {
		return ""
	}
	return src[from:to]
}

func resolvePart(b *wordBuf, src string, p syntax.WordPart, quoted bool) {
	switch p := p.(type) {
	case *syntax.Lit:
		if quoted {
			unescapeDouble(b, p.Value)
		} else {
			unescapeBare(b, p.Value)
		}
	case *syntax.SglQuoted:
		if p.Dollar {
			ansiC(b, p.Value)
		} else {
			b.addString(p.Value, false)
		}
	case *syntax.DblQuoted:
		if p.Dollar {
			b.dynamic(whyLocale)
			b.unquoted = true
		}
		for _, q := range p.Parts {
			if cs, ok := q.(*syntax.CmdSubst); ok {
				if body, ok := catHeredoc(src, cs); ok {
					b.addString(body, false)
					continue
				}
			}
			resolvePart(b, src, q, true)
		}
	case *syntax.ParamExp:
		b.dynamic(whyParam)
		if !quoted || !plainParam(p) {
			b.unquoted = true
		} else if _, ok := b.bound[p.Param.Value]; !ok && !shellSet(p.Param.Value) {
			b.unquoted = true
		}
	case *syntax.CmdSubst:
		b.dynamic(whyCmdSubst)
		if !quoted {
			b.unquoted = true
		}
	case *syntax.ArithmExp:
		// Constants only: $((60*5)) is exactly 300.
		if v, ok := constArith(p.X); ok && !p.Unsigned {
			b.addString(strconv.FormatInt(v, 10), false)
			break
		}
		b.dynamic(whyArithExp)
		b.unquoted = true
	case *syntax.ProcSubst:
		b.dynamic(whyProcSubst)
		b.unquoted = true
	case *syntax.ExtGlob:
		b.dynamic(whyGlob)
		b.unquoted = true
	case *syntax.BraceExp:
		b.dynamic(whyBrace)
		b.unquoted = true
	default:
		b.dynamic("unknown word part")
		b.unquoted = true
	}
}

// unescapeBare removes quoting from unquoted text: a backslash quotes the
// next byte. Line continuations were already removed by the parser.
func unescapeBare(b *wordBuf, s string) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' {
			if i+1 < len(s) {
				i++
				if s[i] != '\n' {
					b.add(s[i], false)
				}
				continue
			}
			b.add(c, false)
			continue
		}
		b.add(c, true)
	}
}

// unescapeDouble removes quoting inside double quotes: a backslash quotes
// only $ ` " \ and newline, and is kept before anything else.
func unescapeDouble(b *wordBuf, s string) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' && i+1 < len(s) {
			switch s[i+1] {
			case '$', '`', '"', '\\':
				i++
				b.add(s[i], false)
				continue
			case '\n':
				i++
				continue
			}
		}
		b.add(c, false)
	}
}

// ansiC decodes the body of a $'…' string as bash does. A NUL ends the
// string; \u and \U beyond ASCII depend on the locale.
func ansiC(b *wordBuf, s string) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b.add(c, false)
			continue
		}
		i++
		var r rune // decoded value, or -1 to keep the escape as is
		switch e := s[i]; e {
		case 'a':
			r = 7
		case 'b':
			r = 8
		case 'e', 'E':
			r = 27
		case 'f':
			r = 12
		case 'n':
			r = '\n'
		case 'r':
			r = '\r'
		case 't':
			r = '\t'
		case 'v':
			r = 11
		case '\\', '\'', '"', '?':
			r = rune(e)
		case '0', '1', '2', '3', '4', '5', '6', '7':
			n, j := 0, i
			for ; j < len(s) && j < i+3 && s[j] >= '0' && s[j] <= '7'; j++ {
				n = n*8 + int(s[j]-'0')
			}
			i = j - 1
			r = rune(n & 0xff)
		case 'x', 'u', 'U':
			max := 2
			if e == 'u' {
				max = 4
			} else if e == 'U' {
				max = 8
			}
			n, j := 0, i+1
			for ; j < len(s) && j < i+1+max && isHex(s[j]); j++ {
				n = n*16 + hexVal(s[j])
			}
			if j == i+1 {
				r = -1
				break
			}
			i = j - 1
			if e == 'x' {
				r = rune(n)
				break
			}
			if n > 0x7f {
				b.dynamic(whyLocaleEsc)
				b.unquoted = true
				var enc [utf8.UTFMax]byte
				b.val = append(b.val, enc[:utf8.EncodeRune(enc[:], rune(n))]...)
				for range utf8.RuneLen(rune(n)) {
					b.bare = append(b.bare, false)
				}
				continue
			}
			r = rune(n)
		case 'c':
			if i+1 >= len(s) {
				r = -1
				break
			}
			i++
			x := s[i]
			if x == '\\' && i+1 < len(s) && s[i+1] == '\\' {
				i++
			}
			if x == '?' {
				r = 0x7f
			} else {
				if x >= 'a' && x <= 'z' {
					x -= 'a' - 'A'
				}
				r = rune(x & 0x1f)
			}
		default:
			r = -1
		}
		if r < 0 {
			b.add('\\', false)
			b.add(s[i], false)
			continue
		}
		if r == 0 {
			return // bash ends the $'…' string at a NUL
		}
		b.add(byte(r), false)
	}
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func hexVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	default:
		return int(c-'A') + 10
	}
}

// expansionIn reports which expansion bash would apply to a word made of
// val, where bare marks unquoted bytes, or "" if none.
func expansionIn(val []byte, bare []bool, mode wordMode) string {
	if mode == modeArg {
		if why := globOrBrace(val, bare); why != "" {
			return why
		}
	}
	if hasTilde(val, bare, mode) {
		return whyTilde
	}
	for _, c := range val {
		if c == 0 {
			return whyNUL
		}
	}
	return ""
}

// globSafe reports a pathname pattern whose every expansion bash could
// produce is known in shape: no segment is "..", so an expansion stays
// under the pattern's literal directory; nothing else expands (no tilde,
// brace or NUL, no quoted metacharacter whose meaning path.Match would
// change); and it begins with a literal "--name=" (every expansion is
// the same option) or with anything but '-'. option reports a pattern
// that starts with a metacharacter, whose expansions may start with '-'
// and turn into options: only commands whose every option is harmless
// may take it.
func globSafe(val []byte, bare []bool) (ok, option bool) {
	if len(val) == 0 {
		return false, false
	}
	option = bare[0] && strings.IndexByte("*?[", val[0]) >= 0
	firstMeta := -1
	for i, c := range val {
		switch {
		case c == 0:
			return false, false
		case bare[i] && strings.IndexByte("{}~", c) >= 0:
			return false, false
		case !bare[i] && strings.IndexByte("*?[]\\", c) >= 0:
			return false, false
		case bare[i] && firstMeta < 0 && strings.IndexByte("*?[", c) >= 0:
			firstMeta = i
		}
	}
	if val[0] == '-' {
		eq := strings.IndexByte(string(val), '=')
		if eq < 0 || firstMeta < 0 || eq > firstMeta {
			return false, false
		}
	}
	for _, seg := range strings.Split(string(val), "/") {
		if seg == ".." {
			return false, false
		}
	}
	return true, option
}

// globOrBrace finds pathname and brace expansion in one pass. It errs
// on the side of calling a word dynamic: a '[' counts as a glob when any
// ']' follows it, and braces count when an unquoted '{', then an
// unquoted ',' or "..", then an unquoted '}' appear in that order.
func globOrBrace(val []byte, bare []bool) string {
	bracket := false
	brace := 0 // 1: seen '{'; 2: seen '{' then a separator
	for i, c := range val {
		if c == ']' && bracket {
			return whyGlob
		}
		if !bare[i] {
			continue
		}
		switch c {
		case '*', '?':
			return whyGlob
		case '[':
			bracket = true
		case '{':
			brace = max(brace, 1)
		case ',':
			if brace == 1 {
				brace = 2
			}
		case '.':
			if brace == 1 && i+1 < len(val) && val[i+1] == '.' && bare[i+1] {
				brace = 2
			}
		case '}':
			if brace == 2 {
				return whyBrace
			}
		}
	}
	return ""
}

// hasTilde finds tilde expansion: an unquoted '~' at the start of the
// word, or after the first '=' or any ':' of an assignment.
func hasTilde(val []byte, bare []bool, mode wordMode) bool {
	if len(val) > 0 && val[0] == '~' && bare[0] {
		return true
	}
	from := 0
	if mode == modeArg {
		// bash expands tildes in assignment-shaped arguments too
		// (a=~/x), outside POSIX mode.
		eq := assignPrefix(val)
		if eq < 0 {
			return false
		}
		if eq+1 < len(val) && val[eq+1] == '~' && bare[eq+1] {
			return true
		}
		from = eq + 1
	}
	for i := from; i+1 < len(val); i++ {
		if val[i] == ':' && bare[i] && val[i+1] == '~' && bare[i+1] {
			return true
		}
	}
	return false
}

// assignPrefix returns the index of '=' when val starts with NAME= or
// NAME+=, and -1 otherwise. Quoting is ignored, which errs towards
// finding an assignment.
func assignPrefix(val []byte) int {
	for i, c := range val {
		switch {
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		case c >= '0' && c <= '9':
			if i == 0 {
				return -1
			}
		case c == '=' && i > 0:
			return i
		case c == '+' && i > 0 && i+1 < len(val) && val[i+1] == '=':
			return i + 1
		default:
			return -1
		}
	}
	return -1
}

// catHeredoc reports the exact output of a command substitution that is
// only `cat` reading a here-document whose body has no expansions, the
// form agents use for commit messages: "$(cat <<'EOF' … EOF)". The
// substitution strips trailing newlines. The cat program is still listed
// as a command that runs.
func catHeredoc(src string, cs *syntax.CmdSubst) (string, bool) {
	if cs.Backquotes || cs.TempFile || cs.ReplyVar || len(cs.Stmts) != 1 {
		return "", false
	}
	s := cs.Stmts[0]
	if s.Negated || s.Background || s.Coprocess || s.Disown || len(s.Redirs) != 1 {
		return "", false
	}
	call, ok := s.Cmd.(*syntax.CallExpr)
	if !ok || len(call.Assigns) != 0 || len(call.Args) != 1 || call.Args[0].Lit() != "cat" {
		return "", false
	}
	r := s.Redirs[0]
	if r.Op != syntax.Hdoc && r.Op != syntax.DashHdoc || r.N != nil {
		return "", false
	}
	body := heredocWord(src, r)
	if !body.Literal {
		return "", false
	}
	return strings.TrimRight(body.Value, "\n"), true
}

// heredocWord is the text a here-document feeds: exact when its
// delimiter is quoted or its body has no expansions. Unquoted, a
// backslash quotes only $ ` \ and newline, as bash reads it.
func heredocWord(src string, r *syntax.Redirect) Word {
	out := Word{Pos: toPos(r.Word.Pos())}
	if r.Hdoc == nil {
		out.Literal = true
		return out
	}
	out.Pos = toPos(r.Hdoc.Pos())
	if heredocQuoted(r) {
		// The body is the source text up to the delimiter line. It is
		// read from the source because the parser expands some bodies
		// bash keeps literal (<<E"O"F).
		body, ok := rawHeredoc(src, r)
		if !ok {
			out.Why = "here-document"
			return out
		}
		out.Value, out.Literal = stripTabs(r, body), true
		return out
	}
	var b wordBuf
	for _, p := range r.Hdoc.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			if r.Op == syntax.DashHdoc && strings.Contains(p.Value, "\\\n") {
				// Tabs are stripped before continuation lines join.
				b.dynamic("here-document line continuation")
			}
			for i := 0; i < len(p.Value); i++ {
				c := p.Value[i]
				if c == '\\' && i+1 < len(p.Value) {
					switch p.Value[i+1] {
					case '$', '`', '\\':
						i++
						b.add(p.Value[i], false)
						continue
					case '\n':
						i++
						continue
					}
				}
				b.add(c, false)
			}
		default:
			resolvePart(&b, src, p, true)
		}
	}
	if b.why != "" {
		out.Why = b.why
		out.Value = sourceText(src, r.Hdoc)
		return out
	}
	out.Value, out.Literal = stripTabs(r, string(b.val)), true
	return out
}

// heredocQuoted reports a delimiter with any quoting, which keeps the
// body from expansion.
func heredocQuoted(r *syntax.Redirect) bool {
	for _, p := range r.Word.Parts {
		if l, ok := p.(*syntax.Lit); !ok || strings.IndexByte(l.Value, '\\') >= 0 {
			return true
		}
	}
	return false
}

// rawHeredoc cuts a here-document's body from the source: everything
// before its last line, which must be the delimiter.
func rawHeredoc(src string, r *syntax.Redirect) (string, bool) {
	var delim wordBuf
	for _, p := range r.Word.Parts {
		resolvePart(&delim, src, p, false)
	}
	raw := sourceText(src, r.Hdoc)
	i := strings.LastIndexByte(raw, '\n')
	if delim.why != "" || raw == "" || i < 0 {
		return "", false
	}
	last := raw[i+1:]
	if r.Op == syntax.DashHdoc {
		last = strings.TrimLeft(last, "\t")
	}
	if last != string(delim.val) {
		return "", false
	}
	return raw[:i+1], true
}

// stripTabs removes the leading tabs <<- strips from each line.
func stripTabs(r *syntax.Redirect, body string) string {
	if r.Op != syntax.DashHdoc {
		return body
	}
	lines := strings.SplitAfter(body, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimLeft(l, "\t")
	}
	return strings.Join(lines, "")
}

// isArithConst reports whether w is a numeric constant in an arithmetic
// context: it starts with a digit, so bash never reads it as a variable
// whose value would be evaluated in turn.
func isArithConst(w *syntax.Word) bool {
	if len(w.Parts) != 1 {
		return false
	}
	l, ok := w.Parts[0].(*syntax.Lit)
	if !ok || l.Value == "" || l.Value[0] < '0' || l.Value[0] > '9' {
		return false
	}
	for i := 0; i < len(l.Value); i++ {
		c := l.Value[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '#' || c == '@' || c == '_') {
			return false
		}
	}
	return true
}
