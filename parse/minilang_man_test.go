package parse

import "testing"

// TestClassifyMan covers the man options and operands that pick the
// programs man runs or the roff it formats.
func TestClassifyMan(t *testing.T) {
	t.Parallel()
	runCases(t, []classifyCase{
		{name: "man-page", cmd: "man ls", known: true, mut: "read", paths: "-"},
		{name: "man-section", cmd: "man 5 crontab", known: true},
		{name: "man-apropos", cmd: "man -k socket", known: true},
		{name: "man-config-file", cmd: "man -C /tmp/x ls", known: false, why: "man -C"},
		{name: "man-config-long", cmd: "man --config-file=/tmp/x ls", known: false, why: "man -C"},
		{name: "man-config-abbrev", cmd: "man --conf=/tmp/x ls", known: false, why: "man -C"},
		{name: "man-local-file", cmd: "man -l ./page.1", known: false, why: "man -l"},
		{name: "man-local-abbrev", cmd: "man --local-f ./page.1", known: false, why: "man -l"},
		{name: "man-local-ambiguous", cmd: "man --local ./page.1", known: false, why: "ambiguous"},
		{name: "man-slash-operand", cmd: "man ./page.1", known: false, why: "local file"},
		{name: "man-manpath", cmd: "man -M ./man ls", known: false, why: "man -M"},
		{name: "man-pager", cmd: "man -P 'sh -c id' ls", known: false, why: "pager"},
		{name: "man-html", cmd: "man -Hfirefox ls", known: false, why: "browser"},
		{name: "man-update", cmd: "man -u ls", known: false, why: "man -u"},
		{name: "man-catman", cmd: "man -c ls", known: false, why: "man -c"},
		{name: "man-global-apropos", cmd: "man -K passwd", known: false, why: "man -K"},
	})
}
