package parse

import "testing"

// TestClassifySedBrackets covers the places where a reader that does not
// read sed's program as GNU sed does would miss a command: a / inside a
// bracket expression, labels that end at a blank, blanks between s
// flags, custom delimiters and text commands.
func TestClassifySedBrackets(t *testing.T) {
	t.Parallel()
	runCases(t, []classifyCase{
		{name: "sed-bracket-slash-w-flag", cmd: "sed 's/[/]/x/w /tmp/f' f", known: true, paths: "read f; overwrite /tmp/f"},
		{name: "sed-bracket-hides-comment", cmd: "sed -n 's/[/]/g;#/w /tmp/evil' f", known: true, paths: "read f; overwrite /tmp/evil"},
		{name: "sed-bracket-class-slash", cmd: "sed 's/[[:alpha:]/]/x/w out' f", known: true, paths: "read f; overwrite out"},
		{name: "sed-bracket-close-first", cmd: "sed 's/[]/]/x/w out' f", known: true, paths: "read f; overwrite out"},
		{name: "sed-bracket-negated-close", cmd: "sed 's/[^]/]/x/w out' f", known: true, paths: "read f; overwrite out"},
		{name: "sed-bracket-backslash-literal", cmd: "sed 's/[\\]/x/w out' f", known: true, paths: "read f; overwrite out"},
		{name: "sed-bracket-in-address", cmd: "sed -n '/a[/]b/w out' f", known: true, paths: "read f; overwrite out"},
		{name: "sed-bracket-zero-address", cmd: "sed '0,/[/]/{s/a/b/e}' f", known: false, why: "s///e"},
		{name: "sed-replacement-has-no-brackets", cmd: "sed 's/a/[/;w out' f", known: true, paths: "read f; overwrite out"},
		{name: "sed-y-has-no-brackets", cmd: "sed 'y/[/]/;w out' f", known: true, paths: "read f; overwrite out"},
		{name: "sed-label-ends-at-blank", cmd: "sed -n ':x;b x w /tmp/evil2' f", known: true, paths: "read f; overwrite /tmp/evil2"},
		{name: "sed-label-ends-at-brace", cmd: "sed -n '/a/{b x};:x' f", known: true, paths: "read f"},
		{name: "sed-flags-with-blanks", cmd: "sed 's/a/b/ g w out' f", known: true, paths: "read f; overwrite out"},
		{name: "sed-flags-blank-e", cmd: "sed 's/a/b/g e' f", known: false, why: "s///e"},
		{name: "sed-custom-address-delim", cmd: "sed -n '\\cxcw out' f", known: true, paths: "read f; overwrite out"},
		{name: "sed-custom-delim-bracket", cmd: "sed -n '\\%[%]%w out' f", known: true, paths: "read f; overwrite out"},
		{name: "sed-append-continues", cmd: "sed 'a\\\nw not-a-file' f", known: true, paths: "read f"},
		{name: "sed-W", cmd: "sed -n 'W out' f", known: true, paths: "read f; overwrite out"},
		{name: "sed-R", cmd: "sed 'R other' f", known: true, paths: "read f; read other"},
		{name: "sed-e-bare", cmd: "sed '1e' f", known: false, why: "sed e"},
		{name: "sed-brace-then-w", cmd: "sed -n '1{p};w out' f", known: true, paths: "read f; overwrite out"},
		{name: "sed-comment-after-address", cmd: "sed '1#x' f", known: false},
		{name: "sed-newline-separates", cmd: "sed -n 'p\nw out' f", known: true, paths: "read f; overwrite out"},
		{name: "sed-print-lines", cmd: "sed -n 1,10p f", known: true, mut: "read", paths: "read f"},
		{name: "sed-non-ascii", cmd: "sed 's/\u00e9/e/' f", known: false, why: "non-ASCII"},
	})
}
