package parse

import (
	"errors"
	"slices"
	"testing"
)

// parseTests cover every construct that runs or shapes a simple command.
// cmds renders each command with renderCommand; unproven lists the
// reasons Parse itself finds, in order.
var parseTests = []struct {
	name     string
	src      string
	cmds     []string
	unproven []string
	funcs    []string
	err      bool
}{
	// Empty and trivial texts.
	{name: "empty", src: ""},
	{name: "blank", src: " \n\t\n"},
	{name: "comment-only", src: "# just a comment\n  # another"},
	{name: "simple", src: "ls -la", cmds: []string{"ls -la"}},
	{name: "trailing-comment", src: "ls # list", cmds: []string{"ls"}},

	// Lists and pipelines.
	{name: "semicolons", src: "a; b;c", cmds: []string{"a", "b", "c"}},
	{name: "newlines", src: "a\nb\n\nc\n", cmds: []string{"a", "b", "c"}},
	{name: "and-or", src: "a && b || c", cmds: []string{"a", "b", "c"}},
	{name: "pipeline", src: "a | b |& c", cmds: []string{"a", "b", "c"}},
	{name: "negated", src: "! grep x f", cmds: []string{"grep x f"}},
	{name: "background", src: "sleep 1 & wait", cmds: []string{"sleep 1", "wait"}},
	{name: "subshell", src: "(cd d && make)", cmds: []string{"cd d", "make"}},
	{name: "brace-group", src: "{ a; b; }", cmds: []string{"a", "b"}},
	{name: "time-keyword", src: "time ls", cmds: []string{"ls"}},

	// Compound commands.
	{name: "if-elif-else", src: "if a; then b; elif c; then d; else e; fi", cmds: []string{"a", "b", "c", "d", "e"}},
	{name: "while", src: "while read l; do echo x; done", cmds: []string{"read l", "echo x"}},
	{name: "until", src: "until a; do b; done", cmds: []string{"a", "b"}},
	{name: "for-in", src: "for f in a b; do wc $f; done", cmds: []string{"set:f={loop variable}", "wc {parameter expansion}"}},
	{name: "for-glob-list", src: "for f in *.go; do echo hi; done", cmds: []string{"set:f={loop variable}", "echo hi"}},
	{name: "for-cmdsubst-list", src: "for f in $(ls); do :; done", cmds: []string{"ls", "set:f={loop variable}", ":"}},
	{name: "for-c-style", src: "for ((i=0; i<3; i++)); do echo hi; done", cmds: []string{"echo hi"},
		unproven: []string{"arithmetic", "arithmetic", "arithmetic"}},
	{name: "select", src: "select x in a b; do echo $x; done", cmds: []string{"set:x={loop variable}", "echo {parameter expansion}"}},
	{name: "case", src: "case $x in a|b*) echo ab;; *) echo other;; esac", cmds: []string{"echo ab", "echo other"}},
	{name: "case-cmdsubst-subject", src: "case $(uname) in Linux) :;; esac", cmds: []string{"uname", ":"}},
	{name: "case-fallthrough", src: "case x in x) a;& y) b;;& *) c;; esac", cmds: []string{"a", "b", "c"}},

	// Functions.
	{name: "function-def", src: "f() { rm -rf x; }; f", cmds: []string{"rm -rf x", "f"}, funcs: []string{"f"}},
	{name: "function-keyword", src: "function g { echo g; }", cmds: []string{"echo g"}, funcs: []string{"g"}},
	{name: "function-subshell-body", src: "h() ( ls )", cmds: []string{"ls"}, funcs: []string{"h"}},
	{name: "function-redirected", src: "k() { ls; } > out", cmds: []string{">out[overwrite]", "ls"}, funcs: []string{"k"}},

	// Substitutions.
	{name: "cmdsubst", src: "echo $(date)", cmds: []string{"echo {command substitution}", "date"}},
	{name: "cmdsubst-nested", src: "echo $(echo $(id -u))", cmds: []string{"echo {command substitution}", "echo {command substitution}", "id -u"}},
	{name: "backticks", src: "echo `whoami`", cmds: []string{"echo {command substitution}", "whoami"}},
	{name: "cmdsubst-in-dquote", src: `echo "now: $(date +%s)"`, cmds: []string{"echo {command substitution}", "date +%s"}},
	{name: "procsubst-in", src: "diff <(sort a) <(sort b)", cmds: []string{"diff /dev/fd/63 /dev/fd/63", "sort a", "sort b"}},
	{name: "procsubst-out", src: "tee >(gzip > f.gz)", cmds: []string{"tee /dev/fd/63", "gzip >f.gz[overwrite]"}},
	{name: "cmdsubst-as-name", src: "$(echo rm) -rf x", cmds: []string{"{command substitution} -rf x", "echo rm"}},
	{name: "cat-heredoc-commit", src: "git commit -m \"$(cat <<'EOF'\nfix: thing\n\nbody $x\nEOF\n)\"",
		cmds: []string{`git commit -m "fix: thing\n\nbody $x"`, `cat <<"fix: thing\n\nbody $x\n"`}},
	{name: "cat-heredoc-unquoted-plain", src: "git commit -m \"$(cat <<EOF\nplain text\nEOF\n)\"",
		cmds: []string{"git commit -m \"plain text\"", `cat <<"plain text\n"`}},
	{name: "cat-heredoc-unquoted-expands", src: "git commit -m \"$(cat <<EOF\nuser $USER\nEOF\n)\"",
		cmds: []string{"git commit -m {command substitution}", "cat <<{parameter expansion}"}},
	{name: "cat-heredoc-unquoted-word", src: "echo $(cat <<'EOF'\na b\nEOF\n)",
		cmds: []string{"echo {command substitution}", `cat <<"a b\n"`}},
	{name: "cat-heredoc-dash", src: "echo \"$(cat <<-'EOF'\n\t\tindented\n\tEOF\n)\"",
		cmds: []string{"echo indented", `cat <<-"indented\n"`}},
	{name: "cat-heredoc-extra-arg", src: "echo \"$(cat f <<'EOF'\nx\nEOF\n)\"",
		cmds: []string{"echo {command substitution}", `cat f <<"x\n"`}},

	// Assignments.
	{name: "prefix-assign", src: "FOO=bar BAZ='q x' make", cmds: []string{`FOO=bar BAZ="q x" make`}},
	{name: "bare-assign", src: "FOO=bar", cmds: []string{"set:FOO=bar"}},
	{name: "bare-assign-dynamic", src: "FOO=$HOME/x", cmds: []string{"set:FOO={parameter expansion}"}},
	{name: "assign-cmdsubst", src: "v=$(git rev-parse HEAD)", cmds: []string{"set:v={command substitution}", "git rev-parse HEAD"}},
	{name: "assign-no-glob", src: "A=*.go B={a,b}", cmds: []string{"set:A=*.go set:B={a,b}"}},
	{name: "assign-tilde", src: "P=~/bin:/usr/bin Q=/x:~/y R=a~b", cmds: []string{"set:P={tilde expansion} set:Q={tilde expansion} set:R=a~b"}},
	{name: "assign-array", src: "arr=(a b c)", cmds: []string{"set:arr={array assignment}"}},
	{name: "assign-subscript-cmdsubst", src: "a[$(id)]=1", cmds: []string{"set:a={array or append assignment}", "id"}, unproven: []string{"arithmetic"}},
	{name: "assign-subscript-const", src: "a[2]=1", cmds: []string{"set:a={array or append assignment}"}},
	{name: "assign-append", src: "PATH+=:/x", cmds: []string{"set:PATH={array or append assignment}"}},
	{name: "assign-empty", src: "X= ls", cmds: []string{`X="" ls`}},

	// Declaration builtins.
	{name: "export", src: "export PAGER=cat", cmds: []string{"decl: export PAGER=cat"}},
	{name: "export-naked", src: "export A B=1", cmds: []string{"decl: export A B=1"}},
	{name: "declare-options", src: "declare -r X=1", cmds: []string{"decl: declare -r X=1"}},
	{name: "local-dynamic", src: "f() { local v=$1; }", cmds: []string{"decl: local {parameter expansion}"}, funcs: []string{"f"}},
	{name: "declare-nameref", src: "declare -n r=PATH", cmds: []string{"decl: declare -n r=PATH"}, unproven: []string{"nameref"}},
	{name: "local-nameref", src: "local -rn r=PATH", cmds: []string{"decl: local -rn r=PATH"}, unproven: []string{"nameref"}},
	{name: "export-n-is-not-nameref", src: "export -n X", cmds: []string{"decl: export -n X"}},
	{name: "declare-integer", src: "declare -i n=x", cmds: []string{"decl: declare -i n=x"}, unproven: []string{"integer variable"}},
	{name: "declare-dynamic-arg", src: "declare $opt", cmds: []string{"decl: declare {parameter expansion}"}},
	{name: "readonly", src: "readonly A=1", cmds: []string{"decl: readonly A=1"}},
	{name: "typeset-array", src: "typeset -a xs=(1 2)", cmds: []string{"decl: typeset -a {array assignment}"}},

	// Arithmetic.
	{name: "arith-cmd-const", src: "(( 1 + 2 ))"},
	{name: "arith-cmd-var", src: "(( n > 3 ))", unproven: []string{"arithmetic"}},
	{name: "arith-exp-const", src: "echo $((1+2))", cmds: []string{"echo 3"}},
	{name: "arith-exp-var", src: "echo $((x*2))", cmds: []string{"echo {arithmetic expansion}"}, unproven: []string{"arithmetic"}},
	{name: "arith-subscript-cmdsubst", src: "echo $(( a[$(id)] ))", cmds: []string{"echo {arithmetic expansion}", "id"}, unproven: []string{"arithmetic", "arithmetic"}},
	{name: "let", src: "let x=1+2", unproven: []string{"arithmetic"}},
	{name: "let-const", src: "let 1+2"},
	{name: "arith-hex-base", src: "(( 0x1f + 2#101 + 017 ))"},

	// Test clauses.
	{name: "test-clause", src: "[[ -f go.mod && $x == *.go ]] && echo y", cmds: []string{"echo y"}},
	{name: "test-clause-cmdsubst", src: "[[ $(whoami) == root ]]", cmds: []string{"whoami"}},
	{name: "test-clause-arith", src: "[[ $x -eq 1 ]]", unproven: []string{"arithmetic"}},
	{name: "test-clause-arith-const", src: "[[ 2 -gt 1 ]]"},
	{name: "test-clause-var-set", src: "[[ -v 'a[$(id)]' ]]", unproven: []string{"arithmetic"}},
	{name: "test-clause-var-set-plain", src: "[[ -v HOME ]]"},
	{name: "test-clause-regex", src: "[[ $x =~ ^a(b|c)$ ]]"},
	{name: "test-builtin", src: "[ -f x ] && test -d y", cmds: []string{"[ -f x ]", "test -d y"}},

	// Parameter expansions with side effects.
	{name: "param-plain", src: "echo ${x} ${#x} ${x:-d} ${x%.go} ${x//a/b} ${@} $1 $? $$", cmds: []string{"echo {parameter expansion} {parameter expansion} {parameter expansion} {parameter expansion} {parameter expansion} {parameter expansion} {parameter expansion} {parameter expansion} {parameter expansion}"}},
	{name: "param-assign", src: ": ${x:=y}", cmds: []string{": {parameter expansion}"}, unproven: []string{"parameter assignment"}},
	{name: "param-indirect", src: "echo ${!x}", cmds: []string{"echo {parameter expansion}"}, unproven: []string{"indirect expansion"}},
	{name: "param-keys", src: "echo ${!a[@]} ${!pre*}", cmds: []string{"echo {parameter expansion} {parameter expansion}"}},
	{name: "param-prompt", src: "echo ${x@P}", cmds: []string{"echo {parameter expansion}"}, unproven: []string{"prompt expansion"}},
	{name: "param-quote-op", src: "echo ${x@Q}", cmds: []string{"echo {parameter expansion}"}},
	{name: "param-subscript-var", src: "echo ${a[i]}", cmds: []string{"echo {parameter expansion}"}, unproven: []string{"arithmetic"}},
	{name: "param-subscript-const", src: "echo ${a[0]} ${a[@]}", cmds: []string{"echo {parameter expansion} {parameter expansion}"}},
	{name: "param-slice", src: "echo ${x:1:2} ${x:n}", cmds: []string{"echo {parameter expansion} {parameter expansion}"}, unproven: []string{"arithmetic"}},
	{name: "param-default-cmdsubst", src: "echo ${x:-$(id)}", cmds: []string{"echo {parameter expansion}", "id"}},

	// Redirects.
	{name: "redirect-out", src: "ls > out", cmds: []string{"ls >out[overwrite]"}},
	{name: "redirect-append", src: "ls >> log", cmds: []string{"ls >>log[update]"}},
	{name: "redirect-clobber", src: "ls >| out", cmds: []string{"ls >|out[overwrite]"}},
	{name: "redirect-all", src: "make &> log", cmds: []string{"make &>log[overwrite]"}},
	{name: "redirect-all-append", src: "make &>> log", cmds: []string{"make &>>log[update]"}},
	{name: "redirect-in", src: "wc -l < f", cmds: []string{"wc -l <f[read]"}},
	{name: "redirect-inout", src: "exec 3<> f", cmds: []string{"exec 3<>f[overwrite]"}},
	{name: "redirect-dup", src: "cmd 2>&1 >&2 <&0 3>&- 4>&1-", cmds: []string{"cmd 2>&1 >&2 <&0 3>&- 4>&1-"}},
	{name: "redirect-dup-file", src: "cmd >& out", cmds: []string{"cmd >&out[overwrite]"}},
	{name: "redirect-fd-out", src: "cmd 2> err.log", cmds: []string{"cmd 2>err.log[overwrite]"}},
	{name: "redirect-named-fd", src: "exec {fd}> f", cmds: []string{"exec {fd}>f[overwrite]"}},
	{name: "redirect-dynamic", src: "ls > $out", cmds: []string{"ls >{parameter expansion}[overwrite]"}},
	{name: "redirect-glob", src: "ls > *.txt", cmds: []string{"ls >{glob}[overwrite]"}},
	{name: "redirect-tilde", src: "ls > ~/x", cmds: []string{"ls >{tilde expansion}[overwrite]"}},
	{name: "redirect-cmdsubst-target", src: "ls > $(mktemp)", cmds: []string{"ls >{command substitution}[overwrite]", "mktemp"}},
	{name: "redirect-only", src: "> out", cmds: []string{">out[overwrite]"}},
	{name: "redirect-compound", src: "{ ls; pwd; } > out 2>&1", cmds: []string{">out[overwrite] 2>&1", "ls", "pwd"}},
	{name: "redirect-subshell", src: "(ls) < in", cmds: []string{"<in[read]", "ls"}},
	{name: "redirect-loop", src: "while read l; do :; done < list", cmds: []string{"<list[read]", "read l", ":"}},
	{name: "redirect-before-cmd", src: "> out ls", cmds: []string{"ls >out[overwrite]"}},
	{name: "heredoc-quoted", src: "cat <<'EOF'\n$(rm -rf /)\nEOF", cmds: []string{`cat <<"$(rm -rf /)\n"`}},
	{name: "heredoc-unquoted", src: "cat <<EOF\n$(rm -rf /) $HOME\nEOF", cmds: []string{"cat <<{command substitution}", "rm -rf /"}},
	{name: "heredoc-dash", src: "cat <<-EOF\n\t`id`\n\tEOF", cmds: []string{"cat <<-{command substitution}", "id"}},
	{name: "heredoc-partly-quoted-runs-nothing", src: "cat <<E\"O\"F\n$(id)\nEOF", cmds: []string{`cat <<"$(id)\n"`}},
	{name: "heredoc-two", src: "cat <<A <<'B'\n$(x)\nA\n$(y)\nB", cmds: []string{`cat <<{command substitution} <<"$(y)\n"`, "x"}},
	{name: "herestring", src: "grep x <<< \"$(cat f)\"", cmds: []string{"grep x <<<{command substitution}", "cat f"}},
	{name: "herestring-literal", src: "bc <<< '1+2'", cmds: []string{"bc <<<1+2"}},

	// Coproc.
	{name: "coproc", src: "coproc ls", cmds: []string{"ls"}},
	{name: "coproc-named", src: "coproc W { cat; }", cmds: []string{"cat"}},

	// Dynamic words.
	{name: "glob-star", src: "rm *.o", cmds: []string{"rm {glob}"}},
	{name: "glob-question", src: "ls a?c", cmds: []string{"ls {glob}"}},
	{name: "glob-bracket", src: "ls [ab].txt", cmds: []string{"ls {glob}"}},
	{name: "bracket-alone", src: "[ a ]", cmds: []string{"[ a ]"}},
	{name: "extglob", src: "ls +(a|b)", cmds: []string{"ls {glob}"}},
	{name: "brace-list", src: "touch {a,b}.txt", cmds: []string{"touch a.txt b.txt"}},
	{name: "brace-seq", src: "echo {1..3}", cmds: []string{"echo 1 2 3"}},
	{name: "brace-empty-find", src: "find . -exec grep -l x {} +", cmds: []string{"find . -exec grep -l x {} +"}},
	{name: "brace-quoted", src: "echo '{a,b}' \\{a,b\\} {a','b}", cmds: []string{"echo {a,b} {a,b} {a,b}"}},
	{name: "brace-quoted-inner-still-expands", src: "echo {a,'b'}", cmds: []string{"echo a b"}},
	{name: "brace-too-many", src: "echo {1..9}{1..9}{1..9}", cmds: []string{"echo {brace expansion}"}},
	{name: "tilde-start", src: "cat ~/.ssh/id_rsa ~root ~+", cmds: []string{"cat {tilde expansion} {tilde expansion} {tilde expansion}"}},
	{name: "tilde-quoted", src: `ls "~" '~/x' \~`, cmds: []string{"ls ~ ~/x ~"}},
	{name: "tilde-middle", src: "echo a~b --prefix=~/x", cmds: []string{"echo a~b --prefix=~/x"}},
	{name: "tilde-assignment-arg", src: "echo a=~/x b=1:~/y", cmds: []string{"echo {tilde expansion} {tilde expansion}"}},
	{name: "locale-string", src: `echo $"hello"`, cmds: []string{"echo {locale string}"}},

	// Errors.
	{name: "error-unclosed-quote", src: "echo 'abc", err: true},
	{name: "error-unclosed-if", src: "if true; then echo", err: true},
	{name: "error-bad-redirect", src: "ls >", err: true},
	{name: "error-stray-paren", src: "echo )", err: true},
	{name: "error-unclosed-cmdsubst", src: "echo $(ls", err: true},
	{name: "error-if-empty-then", src: "if true; then fi", err: true},
	{name: "error-empty-group", src: "{ }", err: true},
	{name: "error-double-semicolon", src: "echo ;;", err: true},
	{name: "error-carriage-return", src: "cat README.md\r; rm -rf ~", err: true},
	{name: "error-nul", src: "cat \"a\x00b\"", err: true},

	// Stricter than bash -n, which checks these only when it runs them
	// (see stricterThanBash).
	{name: "stricter-arith-incomplete", src: "echo $((1+))", err: true},
	{name: "stricter-arith-empty", src: "echo $(( ))", err: true},
	{name: "stricter-test-empty", src: "[[ ]]", err: true},
	{name: "stricter-test-two-words", src: "[[ a b ]]", err: true},
	{name: "stricter-heredoc-unclosed", src: "cat <<EOF", err: true},
	{name: "stricter-double-negation", src: "! ! true", err: true},
	{name: "stricter-subscript-unclosed", src: "echo ${a[1}", err: true},

	// Accepted forms that look odd.
	{name: "file-read-subst", src: "x=$(</etc/passwd)", cmds: []string{"set:x={command substitution}", "</etc/passwd[read]"}},
	{name: "keywords-as-args", src: "echo then fi do done", cmds: []string{"echo then fi do done"}},
	{name: "case-leading-paren", src: "case x in (a) b;; esac", cmds: []string{"b"}},
	{name: "deprecated-arith", src: "echo $[1+2]", cmds: []string{"echo 3"}},
	{name: "for-positional", src: "for x; do :; done", cmds: []string{"set:x={loop variable}", ":"}},
	{name: "redirect-only-dup", src: "2>&1", cmds: []string{"2>&1"}},
	{name: "nested-quotes-in-subst", src: `echo "$(echo "in "q"")"`, cmds: []string{"echo {command substitution}", `echo "in q"`}},
	{name: "backticks-nested", src: "echo `echo \\`id\\``", cmds: []string{"echo {command substitution}", "echo {command substitution}", "id"}},
	{name: "assoc-array", src: "declare -A m=([k]=v)", cmds: []string{"decl: declare -A {array assignment}"}, unproven: []string{"arithmetic"}},
	{name: "exec-close-named", src: "exec {fd}>&-", cmds: []string{"exec {fd}>&-"}},
}

func TestParse(t *testing.T) {
	t.Parallel()
	for _, tc := range parseTests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := Parse(tc.src)
			if tc.err {
				var pe *Error
				if !errors.As(err, &pe) {
					t.Fatalf("Parse(%q) error = %v, want *Error", tc.src, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.src, err)
			}
			var got []string
			for _, c := range s.Commands {
				got = append(got, renderCommand(c))
			}
			if !slices.Equal(got, tc.cmds) {
				t.Errorf("Parse(%q) commands:\n got %q\nwant %q", tc.src, got, tc.cmds)
			}
			if gotU := renderUnproven(s.Unproven); !slices.Equal(gotU, tc.unproven) && !(len(gotU) == 0 && len(tc.unproven) == 0) {
				t.Errorf("Parse(%q) unproven = %q, want %q", tc.src, gotU, tc.unproven)
			}
			if !slices.Equal(s.Functions, tc.funcs) {
				t.Errorf("Parse(%q) functions = %q, want %q", tc.src, s.Functions, tc.funcs)
			}
		})
	}
}

func TestParseErrorPos(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		src  string
		want Pos
	}{
		{name: "unclosed-quote", src: "echo 'abc", want: Pos{Line: 1, Col: 6}},
		{name: "second-line", src: "ls\necho )", want: Pos{Line: 2, Col: 6}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse(tc.src)
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("Parse(%q) error = %v, want *Error", tc.src, err)
			}
			if pe.Pos != tc.want {
				t.Errorf("Parse(%q) error at %v, want %v (%v)", tc.src, pe.Pos, tc.want, pe)
			}
		})
	}
}
