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
		// sed compiles each -e as it meets it: --sandbox after it does
		// not apply (sed -n -e 'w x' --sandbox writes x), so narrowd
		// checks every program whatever --sandbox says.
		{name: "sed-sandbox-after-e", cmd: "sed -n -e 'w x' --sandbox f", known: true, paths: "read f; overwrite x"},
	})
}

// TestClassifySed covers sed's options and program commands: in-place
// edits and their backups, and the commands that read, write or run.
func TestClassifySed(t *testing.T) {
	t.Parallel()
	runCases(t, []classifyCase{
		{name: "sed-print", cmd: "sed -n 1,5p f", known: true, mut: "read", paths: "read f"},
		{name: "sed-substitute", cmd: "sed 's/a/b/g' f", known: true, paths: "read f"},
		{name: "sed-in-place", cmd: "sed -i 's/a/b/' f g", known: true, mut: "delete", paths: "overwrite f; overwrite g", rule: "sed -i"},
		// GNU sed writes a backup beside each file: FILE+SUFFIX, or SUFFIX
		// with * replaced by the base name; a / in SUFFIX moves it into
		// another directory, which the text does not bound.
		{name: "sed-in-place-suffix", cmd: "sed -i.bak -e 's/a/b/' f", known: true, paths: "overwrite f; overwrite f.bak"},
		{name: "sed-in-place-long", cmd: "sed --in-place=.orig 's/a/b/' f", known: true, paths: "overwrite f; overwrite f.orig"},
		{name: "sed-in-place-star", cmd: "sed -i'old_*' 's/a/b/' src/f", known: true, paths: "overwrite src/f; overwrite src/old_f"},
		{name: "sed-in-place-star-only", cmd: "sed -i'*' 's/a/b/' f", known: true, paths: "overwrite f; overwrite f"},
		{name: "sed-in-place-slash", cmd: "sed -i'/root/.ssh/*' 's/^//' authorized_keys", known: false, why: "backup into another directory"},
		{name: "sed-in-place-long-slash", cmd: "sed --in-place='bak/*' 's/a/b/' f", known: false, why: "backup into another directory"},
		{name: "sed-w-command", cmd: "sed 'w /etc/x' f", known: true, mut: "delete", paths: "read f; overwrite /etc/x"},
		{name: "sed-s-w-flag", cmd: "sed 's/a/b/w out' f", known: true, paths: "read f; overwrite out"},
		{name: "sed-e-command", cmd: "sed 'e date' f", known: false, why: "sed e runs a command"},
		{name: "sed-s-e-flag", cmd: "sed 's/a/b/e' f", known: false, why: "s///e"},
		{name: "sed-s-e-after-g", cmd: "sed 's/a/b/ge' f", known: false, why: "s///e"},
		{name: "sed-r-reads", cmd: "sed '/x/r inc.txt' f", known: true, paths: "read f; read inc.txt"},
		{name: "sed-f-file", cmd: "sed -f prog.sed f", known: false, why: "sed -f"},
		{name: "sed-append-text-is-text", cmd: "sed '/x/a w not a file' f", known: true, paths: "read f"},
		{name: "sed-multiple-commands", cmd: "sed -e 's/a/b/;s/c/d/' -e '/x/d' f", known: true, paths: "read f"},
		{name: "sed-braces-and-labels", cmd: "sed ':a;N;$!ba;s/\\n/ /g' f", known: true},
		{name: "sed-y-command", cmd: "sed 'y/abc/xyz/' f", known: true},
		{name: "sed-custom-delimiter", cmd: "sed 's|/usr|/opt|g' f", known: true},
		{name: "sed-unknown-command", cmd: "sed 'k' f", known: false, why: "unknown sed command"},
		{name: "sed-e-hidden-after-semicolon", cmd: "sed 'p;e rm -rf ~' f", known: false, why: "sed e"},
		{name: "sed-w-after-address", cmd: "sed '/re/w out.txt' f", known: true, paths: "read f; overwrite out.txt"},
	})
}
