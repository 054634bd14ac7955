package parse

import "testing"

// TestClassifyAwkOptions covers the awk options that name program files,
// includes and extensions, in gawk's and mawk's spellings.
func TestClassifyAwkOptions(t *testing.T) {
	t.Parallel()
	runCases(t, []classifyCase{
		{name: "awk-W-exec", cmd: "awk -W exec p.awk", known: false, why: "awk -W"},
		{name: "awk-W-ex-attached", cmd: "awk -Wex p.awk", known: false, why: "awk -W"},
		{name: "awk-W-e", cmd: "mawk -W e p.awk", known: false, why: "awk -W"},
		{name: "awk-W-source", cmd: "gawk -W source='BEGIN{system(\"id\")}'", known: false, why: "awk -W"},
		{name: "awk-W-load", cmd: "gawk -W load=./x.so '{print}' f", known: false, why: "awk -W"},
		{name: "awk-W-version", cmd: "awk -W version", known: false, why: "awk -W"},
		{name: "awk-exec-long", cmd: "gawk --exec p.awk", known: false, why: "awk -E"},
		{name: "awk-exec-abbrev", cmd: "gawk --ex=p.awk", known: false, why: "awk -E"},
		{name: "awk-E", cmd: "gawk -E p.awk", known: false, why: "awk -E"},
		{name: "awk-f", cmd: "awk -f p.awk f", known: false, why: "awk -f"},
		{name: "awk-f-clustered", cmd: "awk -vx=1 -fp.awk f", known: false, why: "awk -f"},
		{name: "awk-include-short", cmd: "gawk -i x '{print}' f", known: false, why: "AWKPATH"},
		{name: "awk-include-long", cmd: "gawk --include=inplace '{print}' f", known: false, why: "AWKPATH"},
		{name: "awk-include-abbrev", cmd: "gawk --incl inplace '{print}' f", known: false, why: "AWKPATH"},
		{name: "awk-load", cmd: "gawk -l ./x '{print}' f", known: false, why: "awk -l"},
		{name: "awk-load-abbrev", cmd: "gawk --lo ./x '{print}' f", known: false, why: "awk -l"},
		{name: "awk-dump-vars", cmd: "gawk -d/tmp/x '{print}' f", known: false, why: "awk -d"},
		{name: "awk-source-long", cmd: "gawk --source '{print $1}' f", known: true, paths: "read f"},
		{name: "awk-source-abbrev-system", cmd: "gawk --so 'BEGIN{system(\"id\")}'", known: false, why: "system"},
		{name: "awk-sandbox", cmd: "gawk --sandbox '{print $1}' f", known: true, paths: "read f"},
		{name: "awk-trace-is-not-an-abbrev-of-traditional", cmd: "gawk --tra '{print}' f", known: false, why: "ambiguous"},
		{name: "awk-csv", cmd: "gawk -k '{print $2}' f.csv", known: true, paths: "read f.csv"},
		{name: "awk-environ", cmd: "awk 'BEGIN{print ENVIRON[\"HOME\"]}'", known: true, paths: "read /proc/self/environ"},
	})
}

// TestClassifyAwkProgram covers the awk program text: redirections that a
// statement-by-statement reading misses, and gawk's name tables.
func TestClassifyAwkProgram(t *testing.T) {
	t.Parallel()
	runCases(t, []classifyCase{
		{name: "awk-ternary-over-lines", cmd: "gawk 'BEGIN{print 1 ?\n 2 :\n 3 > \"/tmp/x\"}'", known: false, why: "print to a file"},
		{name: "awk-paren-over-lines", cmd: "awk 'BEGIN{print (1,\n2) > \"/tmp/x\"}'", known: false, why: "print to a file"},
		{name: "awk-redirect-later-statement", cmd: "awk '{print $1} END {x = 1; print x > \"out\"}' f", known: false, why: "print to a file"},
		{name: "awk-compare-after-print", cmd: "awk '{print $1} END {if (n > 3) exit 1}' f", known: false, why: "print to a file"},
		{name: "awk-compare-before-print-ok", cmd: "awk 'length > 120 {print FILENAME\":\"FNR}' f", known: true, paths: "read f"},
		{name: "awk-symtab-environ", cmd: "gawk 'BEGIN{print SYMTAB[\"ENVI\" \"RON\"][\"HOME\"]}'", known: false, why: "SYMTAB"},
		{name: "awk-functab", cmd: "gawk 'BEGIN{print FUNCTAB[\"system\"]}'", known: false},
		{name: "awk-split-environ", cmd: "awk 'BEGIN{print ENVI\\\nRON[\"HOME\"]}'", known: true, paths: "read /proc/self/environ"},
		{name: "awk-split-pipe", cmd: "awk 'BEGIN{print 1 |\\\n| 2}'", known: false, why: "pipe"},
		{name: "awk-regex-with-gt", cmd: "awk '/->/ {n++} END {print n}' f", known: true, paths: "read f"},
		{name: "awk-indirect-call", cmd: "gawk 'BEGIN{f=\"sys\" \"tem\"; @f(\"id\")}'", known: false, why: "@"},
	})
}

// TestClassifyAwk covers ordinary awk programs and the constructs that
// run commands, read other files or write files.
func TestClassifyAwk(t *testing.T) {
	t.Parallel()
	runCases(t, []classifyCase{
		{name: "awk-print", cmd: "awk '{print $1}' f", known: true, mut: "read", paths: "read f"},
		{name: "awk-field-sep", cmd: "awk -F: '{print $1}' /etc/passwd", known: true, paths: "read /etc/passwd"},
		{name: "awk-compare-no-print", cmd: "awk '$3 > 100' f", known: true, paths: "read f"},
		{name: "awk-assignment-operand", cmd: "awk '{print x}' x=1 f", known: true, paths: "read f"},
		{name: "awk-system", cmd: "awk 'BEGIN{system(\"x\")}'", known: false, why: "system"},
		{name: "awk-pipe", cmd: "awk '{print | \"sh\"}'", known: false, why: "pipe"},
		{name: "awk-print-redirect", cmd: "awk '{print > \"/etc/x\"}' f", known: false, why: "print to a file"},
		{name: "awk-getline", cmd: "awk 'BEGIN{while((getline l < \"/etc/shadow\")>0) n++}'", known: false, why: "getline"},
		{name: "awk-regex-hides-string", cmd: "awk 'BEGIN { if (1) /\"/; system(\"x\"); x = \"/\" }'", known: false, why: "system"},
		{name: "awk-compare-before-print", cmd: "awk -F, 'NR>1 {sum+=$3} END {print sum}' d.csv", known: true, paths: "read d.csv"},
		{name: "awk-print-redirect-next-line", cmd: "awk '{print $1,\n $2 > \"/etc/x\"}'", known: false, why: "print to a file"},
		{name: "awk-print-comment-next-line", cmd: "awk '{print $1 # c\n > \"/etc/x\"}'", known: false, why: "print to a file"},
		{name: "awk-string-semicolon", cmd: "awk '{print \"a;b\" > \"/etc/x\"}'", known: false, why: "print to a file"},
		{name: "awk-or-is-fine", cmd: "awk '$1 == \"a\" || $1 == \"b\"' f", known: true},
		{name: "awk-argv", cmd: "awk 'BEGIN{ARGV[1]=\"/etc/shadow\"} {print}' f", known: false, why: "ARGV"},
		{name: "awk-include", cmd: "awk '@include \"x\"'", known: false, why: "@"},
		{name: "awk-program-file", cmd: "awk -f prog.awk f", known: false, why: "awk -f"},
		{name: "gawk-source", cmd: "gawk --source '{print}' f", known: true, paths: "read f"},
		{name: "awk-backslash-newline", cmd: "awk 'BEGIN{sys\\\ntem(\"x\")}'", known: false, why: "system"},
	})
}
