package parse

import (
	"slices"
	"testing"
)

// wordTests are single words, each given to `printf '%s\0'` in
// TestBashValues: a literal word must be exactly what bash passes.
var wordTests = []struct {
	name    string
	src     string
	value   string // when literal
	literal bool
	why     string // when dynamic
}{
	{name: "plain", src: `abc`, value: "abc", literal: true},
	{name: "single-quotes", src: `'a b $x \n "q"'`, value: `a b $x \n "q"`, literal: true},
	{name: "double-quotes", src: `"a b"`, value: "a b", literal: true},
	{name: "double-quote-escapes", src: `"\" \\ \$ \` + "`" + ` \a \n \'"`, value: `" \ $ ` + "`" + ` \a \n \'`, literal: true},
	{name: "double-quote-line-continuation", src: "\"a\\\nb\"", value: "ab", literal: true},
	{name: "double-quote-newline", src: "\"a\nb\"", value: "a\nb", literal: true},
	{name: "double-quote-single-inside", src: `"it's"`, value: "it's", literal: true},
	{name: "backslash-space", src: `a\ b`, value: "a b", literal: true},
	{name: "backslash-any", src: `\a\b\$\'\"\\`, value: `ab$'"\`, literal: true},
	{name: "line-continuation", src: "ab\\\ncd", value: "abcd", literal: true},
	{name: "concatenation", src: `a'b'"c"\d`, value: "abcd", literal: true},
	{name: "empty-single", src: `''`, value: "", literal: true},
	{name: "empty-double", src: `""`, value: "", literal: true},
	{name: "ansi-c-simple", src: `$'a\tb\nc'`, value: "a\tb\nc", literal: true},
	{name: "ansi-c-quotes", src: `$'it\'s \"x\" \\ \?'`, value: `it's "x" \ ?`, literal: true},
	{name: "ansi-c-controls", src: `$'\a\b\e\E\f\r\v'`, value: "\a\b\x1b\x1b\f\r\v", literal: true},
	{name: "ansi-c-hex", src: `$'\x41\x4g\x'`, value: "A\x04g\\x", literal: true},
	{name: "ansi-c-hex-high", src: `$'\xff\xe9'`, value: "\xff\xe9", literal: true},
	{name: "ansi-c-octal", src: `$'\101\1234\7\0101'`, value: "AS4\a\b1", literal: true},
	{name: "ansi-c-octal-overflow", src: `$'\777'`, value: "\xff", literal: true},
	{name: "ansi-c-nul-ends", src: `$'a\0b'c`, value: "ac", literal: true},
	{name: "ansi-c-hex-nul-ends", src: `$'a\x00b'`, value: "a", literal: true},
	{name: "ansi-c-unicode-ascii", src: `$'\u41\U00000042'`, value: "AB", literal: true},
	{name: "ansi-c-unicode-high", src: `$'\u00e9'`, why: "locale-dependent escape"},
	{name: "ansi-c-unicode-empty", src: `$'\u'`, value: `\u`, literal: true},
	{name: "ansi-c-control-x", src: `$'\cA\cz\c[\c?\c1'`, value: "\x01\x1a\x1b\x7f\x11", literal: true},
	{name: "ansi-c-control-nul-ends", src: `$'x\c@y'`, value: "x", literal: true},
	{name: "ansi-c-unknown", src: `$'\z\q'`, value: `\z\q`, literal: true},
	{name: "ansi-c-in-double-is-literal", src: `"$'x'"`, value: "$'x'", literal: true},
	{name: "dollar-alone", src: `a$`, value: "a$", literal: true},
	{name: "param", src: `$HOME`, why: "parameter expansion"},
	{name: "param-in-double", src: `"x${y}z"`, why: "parameter expansion"},
	{name: "param-escaped", src: `\$HOME '$HOME'`, value: "$HOME", literal: true},
	{name: "cmdsubst", src: `$(id)`, why: "command substitution"},
	{name: "backticks", src: "`id`", why: "command substitution"},
	{name: "arith-const", src: `$((2 + 3))`, value: "5", literal: true},
	{name: "arith-division", src: `$((7/2))x$((-7/2))x$((-7%3))`, value: "3x-3x-1", literal: true},
	{name: "arith-power-shift", src: `$((2**10))_$((1<<4))_$((-16>>2))`, value: "1024_16_-4", literal: true},
	{name: "arith-bases", src: `$((0x1f))_$((010))_$((0))`, value: "31_8_0", literal: true},
	{name: "arith-logic", src: `$((5>3))$((1?2:3))$((!5))$((~0))$((2&&0))$((0||3))`, value: "120-101", literal: true},
	{name: "arith-parens-comma", src: `"$(( (1+2)*3, 4 ))"`, value: "4", literal: true},
	{name: "arith-wraps", src: `$((9223372036854775807+1))`, value: "-9223372036854775808", literal: true},
	{name: "arith-bracket", src: `$[6*7]`, value: "42", literal: true},
	{name: "arith-div-zero", src: `$((1/0))`, why: "arithmetic expansion"},
	{name: "arith-var", src: `$((x+1))`, why: "arithmetic expansion"},
	{name: "arith-base-hash", src: `$((2#101))`, why: "arithmetic expansion"},
	{name: "arith-bad-octal", src: `$((09))`, why: "arithmetic expansion"},
	{name: "glob-star", src: `*.go`, why: "glob"},
	{name: "glob-quoted", src: `'*.go'"*"\*`, value: "*.go**", literal: true},
	{name: "glob-bracket", src: `x[ab]`, why: "glob"},
	{name: "glob-bracket-open", src: `x[`, value: "x[", literal: true},
	{name: "glob-bracket-quoted", src: `'x[ab]'`, value: "x[ab]", literal: true},
	{name: "glob-half-quoted", src: `"x"*`, why: "glob"},
	{name: "brace-empty", src: `{}`, value: "{}", literal: true},
	{name: "brace-single", src: `{a}`, value: "{a}", literal: true},
	{name: "brace-quoted-comma", src: `{a","b}`, value: "{a,b}", literal: true},
	{name: "tilde", src: `~`, why: "tilde expansion"},
	{name: "tilde-user", src: `~root/x`, why: "tilde expansion"},
	{name: "tilde-quoted", src: `"~"/x`, value: "~/x", literal: true},
	{name: "tilde-not-first", src: `x~`, value: "x~", literal: true},
	{name: "tilde-after-assign", src: `a=~`, why: "tilde expansion"},
	{name: "tilde-after-colon", src: `PATH=x:~/bin`, why: "tilde expansion"},
	{name: "tilde-in-option", src: `--dir=~/x`, value: "--dir=~/x", literal: true},
	{name: "locale", src: `$"x"`, why: "locale string"},
	{name: "extglob", src: `@(a|b)`, why: "glob"},
	{name: "equals", src: `a=b`, value: "a=b", literal: true},
	{name: "utf8", src: `'héllo'`, value: "héllo", literal: true},
	{name: "cat-heredoc", src: "\"$(cat <<'EOF'\nline1\n\nline2 $x\n\n\nEOF\n)\"", value: "line1\n\nline2 $x", literal: true},
	{name: "cat-heredoc-unquoted", src: "\"$(cat <<EOF\nplain \\$x\nEOF\n)\"", value: "plain $x", literal: true},
	{name: "cat-heredoc-dash", src: "\"$(cat <<-EOF\n\t\ta\n\tb\n\tEOF\n)\"", value: "a\nb", literal: true},
	{name: "cat-heredoc-prefix", src: "\"msg: $(cat <<'EOF'\nx\nEOF\n) end\"", value: "msg: x end", literal: true},
	{name: "cat-heredoc-expands", src: "\"$(cat <<EOF\n$HOME\nEOF\n)\"", why: "command substitution"},
	{name: "cat-heredoc-unquoted-word", src: "$(cat <<'EOF'\nx\nEOF\n)", why: "command substitution"},
}

// braceTests are single source words and the words bash makes of them
// by brace expansion (nil: dynamic), checked against bash in
// TestBashBraces.
var braceTests = []struct {
	name  string
	src   string
	words []string
	why   string
}{
	{name: "list", src: `a{b,c}`, words: []string{"ab", "ac"}},
	{name: "list-suffix", src: `src/{main,util}.go`, words: []string{"src/main.go", "src/util.go"}},
	{name: "empty-element", src: `x{,.bak}`, words: []string{"x", "x.bak"}},
	{name: "nested", src: `{a,b{c,d}}e`, words: []string{"ae", "bce", "bde"}},
	{name: "two", src: `{a,b}{1,2}`, words: []string{"a1", "a2", "b1", "b2"}},
	{name: "quoted-element", src: `{a,'b c'}`, words: []string{"a", "b c"}},
	{name: "escaped-comma", src: `{a\,b}`, words: []string{"{a,b}"}},
	{name: "single", src: `{a}`, words: []string{"{a}"}},
	{name: "seq", src: `{1..3}`, words: []string{"1", "2", "3"}},
	{name: "seq-down", src: `{3..1}`, words: []string{"3", "2", "1"}},
	{name: "seq-negative", src: `{-1..1}`, words: []string{"-1", "0", "1"}},
	{name: "seq-step", src: `{1..10..4}`, words: []string{"1", "5", "9"}},
	{name: "seq-step-negative", src: `{1..10..-4}`, words: []string{"1", "5", "9"}},
	{name: "seq-letters", src: `{a..e..2}`, words: []string{"a", "c", "e"}},
	{name: "seq-letters-down", src: `x{C..A}`, words: []string{"xC", "xB", "xA"}},
	{name: "seq-broken", src: `{1..b}`, why: "brace expansion"}, // bash keeps it; erring dynamic
	{name: "seq-in-list", src: `{1..2,3}`, words: []string{"1..2", "3"}},
	{name: "seq-padded", src: `{01..03}`, why: "brace expansion"},
	{name: "seq-mixed-case", src: `{Z..a}`, why: "brace expansion"},
	{name: "too-many", src: `{1..1000}`, why: "brace expansion"},
	{name: "with-glob", src: `{a,*}`, why: "glob"},
	{name: "with-tilde", src: `{~,x}`, why: "tilde expansion"},
	{name: "with-param", src: `{a,$x}`, why: "parameter expansion"},
	{name: "unclosed", src: `{a,b`, words: []string{"{a,b"}},
	{name: "empty-removed", src: `{a,}`, words: []string{"a"}},
	{name: "empty-quoted-kept", src: `{,}''`, words: []string{"", ""}},
	{name: "empty-sequence-word", src: `{.0..0,}`, words: []string{".0..0"}},
	{name: "dollar-brace-quoted", src: `\${a,b}`, words: []string{"$a", "$b"}},
}

func TestBraces(t *testing.T) {
	t.Parallel()
	for _, tc := range braceTests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := Parse("printf '%s\\0' " + tc.src)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			words := s.Commands[0].Argv[2:]
			if tc.words == nil {
				if !slices.ContainsFunc(words, func(w Word) bool { return !w.Literal && w.Why == tc.why }) {
					t.Errorf("%s: words %+v, want one dynamic by %q", tc.src, words, tc.why)
				}
				return
			}
			var got []string
			for _, w := range words {
				if !w.Literal {
					t.Fatalf("%s: word %q dynamic (%s)", tc.src, w.Value, w.Why)
				}
				got = append(got, w.Value)
			}
			if !slices.Equal(got, tc.words) {
				t.Errorf("%s = %q, want %q", tc.src, got, tc.words)
			}
		})
	}
}

// heredocTests are here-documents; body is what cat prints, checked
// against bash in TestBashHeredocs.
var heredocTests = []struct {
	name    string
	src     string
	body    string
	literal bool
}{
	{name: "quoted", src: "cat <<'EOF'\na $x \\n `id`\nEOF", body: "a $x \\n `id`\n", literal: true},
	{name: "double-quoted-delimiter", src: "cat <<\"EOF\"\n$x\nEOF", body: "$x\n", literal: true},
	{name: "partly-quoted-delimiter", src: "cat <<E\"O\"F\n$x\nEOF", body: "$x\n", literal: true},
	{name: "quoted-prefix-delimiter", src: "cat <<\"E\"OF\n$(id)\nEOF", body: "$(id)\n", literal: true},
	{name: "dash-quoted-tabbed-delimiter", src: "cat <<-'EOF'\n\t$(id)\n\t\tEOF", body: "$(id)\n", literal: true},
	{name: "escaped-delimiter", src: "cat <<\\EOF\n$x\nEOF", body: "$x\n", literal: true},
	{name: "unquoted-plain", src: "cat <<EOF\nhello world\nEOF", body: "hello world\n", literal: true},
	{name: "unquoted-escapes", src: "cat <<EOF\ncost \\$5 \\`x\\` \\\\ \\n \\\"q\\\"\nEOF", body: "cost $5 `x` \\ \\n \\\"q\\\"\n", literal: true},
	{name: "unquoted-continuation", src: "cat <<EOF\nab\\\ncd\nEOF", body: "abcd\n", literal: true},
	{name: "unquoted-lone-dollar", src: "cat <<EOF\na $ b\nEOF", body: "a $ b\n", literal: true},
	{name: "unquoted-single-quotes", src: "cat <<EOF\nit's \"fine\"\nEOF", body: "it's \"fine\"\n", literal: true},
	{name: "dash-quoted", src: "cat <<-'EOF'\n\t\tx\n\t y\n\tEOF", body: "x\n y\n", literal: true},
	{name: "dash-unquoted", src: "cat <<-EOF\n\tx\n\t\ty\n\tEOF", body: "x\ny\n", literal: true},
	{name: "empty", src: "cat <<EOF\nEOF", body: "", literal: true},
	{name: "param", src: "cat <<EOF\n$HOME\nEOF"},
	{name: "cmdsubst", src: "cat <<EOF\n$(echo hi)\nEOF"},
	{name: "arith", src: "cat <<EOF\n$((x+2))\nEOF"},
	{name: "arith-const", src: "cat <<EOF\n$((1+2))\nEOF", body: "3\n", literal: true},
	{name: "backticks", src: "cat <<EOF\n`echo hi`\nEOF"},
}

func TestHeredocBodies(t *testing.T) {
	t.Parallel()
	for _, tc := range heredocTests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := Parse(tc.src)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			r := s.Commands[0].Redirs[0]
			if r.Target.Literal != tc.literal {
				t.Fatalf("body Literal = %v (why %q), want %v", r.Target.Literal, r.Target.Why, tc.literal)
			}
			if tc.literal && r.Target.Value != tc.body {
				t.Errorf("body = %q, want %q", r.Target.Value, tc.body)
			}
		})
	}
}

func TestWordValues(t *testing.T) {
	t.Parallel()
	for _, tc := range wordTests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := Parse("printf '%s\\0' " + tc.src)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if len(s.Commands) == 0 || len(s.Commands[0].Argv) < 3 {
				t.Fatalf("Parse(%q): no word", tc.src)
			}
			words := s.Commands[0].Argv[2:]
			for _, w := range words {
				if w.Literal != tc.literal {
					t.Errorf("word %q: Literal = %v (why %q), want %v", tc.src, w.Literal, w.Why, tc.literal)
					continue
				}
				if tc.literal && w.Value != tc.value {
					t.Errorf("word %q = %q, want %q", tc.src, w.Value, tc.value)
				}
				if !tc.literal && w.Why != tc.why {
					t.Errorf("word %q: Why = %q, want %q", tc.src, w.Why, tc.why)
				}
				if tc.literal && w.Why != "" {
					t.Errorf("word %q: literal with Why %q", tc.src, w.Why)
				}
			}
		})
	}
}
