package oracle

import (
	"slices"
	"strings"
	"testing"

	"github.com/narrowd/narrowd/proofs"
	"github.com/narrowd/narrowd/rules"
)

// The trace reader is the oracle's eyes: these lines are what strace 6
// prints with -f -qq -y, including calls split across processes.
func TestParseTrace(t *testing.T) {
	trace := strings.Join([]string{
		`10 execve("/usr/bin/bash", ["bash", "-c", "x"], 0x7ffc /* 9 vars */) = 0`,
		`10 openat(AT_FDCWD</ws>, "a, b.txt", O_RDONLY) = 3</ws/a, b.txt>`,
		`10 openat(AT_FDCWD</ws>, "out", O_WRONLY|O_CREAT|O_TRUNC, 0666 <unfinished ...>`,
		`11 mkdir("made", 0777)            = 0`,
		`10 <... openat resumed>)           = 4</ws/out>`,
		`10 clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|SIGCHLD, child_tidptr=0x7f) = 12`,
		`12 chdir("sub")                    = 0`,
		`12 mkdir("deeper", 0777)           = 0`,
		`12 unlinkat(AT_FDCWD</ws/sub>, "gone", 0) = -1 ENOENT (No such file or directory)`,
		`12 renameat2(AT_FDCWD</ws/sub>, "t.tmp", 3</ws>, "final", RENAME_NOREPLACE) = 0`,
		`12 connect(5<socket:[77]>, {sa_family=AF_INET, sin_port=htons(8080), sin_addr=inet_addr("127.0.0.1")}, 16) = 0`,
		`12 connect(6<socket:[78]>, {sa_family=AF_UNIX, sun_path="/var/run/nscd/socket"}, 110) = -1 ENOENT (No such file or directory)`,
		`12 openat(AT_FDCWD</ws/sub>, "q\"\x41\n", O_RDONLY) = -1 ENOENT (No such file or directory)`,
		`12 +++ exited with 0 +++`,
	}, "\n")
	evs := parseTrace(trace)
	var names []string
	for _, ev := range evs {
		names = append(names, ev.name)
	}
	wantNames := []string{"execve", "openat", "mkdir", "openat", "clone", "chdir", "mkdir", "unlinkat", "renameat2", "connect", "connect", "openat"}
	if !slices.Equal(names, wantNames) {
		t.Fatalf("syscalls %v, want %v", names, wantNames)
	}
	if evs[1].args[1] != `"a, b.txt"` || evs[1].retPath() != "/ws/a, b.txt" {
		t.Errorf("a comma inside a string split the arguments: %q → %q", evs[1].args, evs[1].retPath())
	}
	if evs[3].retPath() != "/ws/out" || !writeFlags(evs[3].args[2]) {
		t.Errorf("resumed openat: args %q ret %q", evs[3].args, evs[3].ret)
	}
	if got := unquote(evs[11].args[1]); got != "q\"A\n" {
		t.Errorf("unquote = %q", got)
	}
	type want struct {
		path  string
		write bool
	}
	var got []want
	for _, a := range accesses(evs, "/ws") {
		got = append(got, want{a.path, a.write})
	}
	wantAcc := []want{
		{"/usr/bin/bash", false}, {"/ws/a, b.txt", false}, {"/ws/made", true}, {"/ws/out", true},
		{"/ws/sub/deeper", true}, {"/ws/sub/gone", true}, {"/ws/sub/t.tmp", true}, {"/ws/final", true},
		{"/ws/sub/q\"A\n", false},
	}
	if !slices.Equal(got, wantAcc) {
		t.Errorf("accesses\n got %v\nwant %v", got, wantAcc)
	}
	var conns []string
	for _, ev := range evs {
		if c := connectTarget(ev); c != "" {
			conns = append(conns, c)
		}
	}
	if len(conns) != 1 || !strings.Contains(conns[0], "127.0.0.1") {
		t.Errorf("connections %q, want only the one to 127.0.0.1 (the nscd lookup is a name service query)", conns)
	}
}

// The generator must produce what the brief lists from the table alone:
// bare forms, every flag, values, abbreviations, clusters.
func TestGenerator(t *testing.T) {
	specs, err := loadSpecs(knowledgeDir)
	if err != nil {
		t.Fatal(err)
	}
	p, err := loadPayloads("testdata/payloads.toml")
	if err != nil {
		t.Fatal(err)
	}
	substitute(p, "/W")
	var sed, gitLog *cmdSpec
	for _, s := range specs {
		switch s.rule() {
		case "sed":
			sed = s
		case "git log":
			gitLog = s
		}
	}
	if sed == nil || gitLog == nil {
		t.Fatalf("the table has no sed or git log spec (%d specs)", len(specs))
	}
	g := &generator{p: p}
	rng := newRNG(1)
	texts := func(s *cmdSpec) []string {
		var out []string
		for _, c := range g.generate(s, rng) {
			out = append(out, c.text)
		}
		return out
	}
	sedCalls, logCalls := texts(sed), texts(gitLog)
	cases := []struct {
		name  string
		calls []string
		want  func(string) bool
	}{
		{"bare sed", sedCalls, func(s string) bool { return s == "sed" }},
		{"a sed mini-language payload", sedCalls, func(s string) bool { return strings.Contains(s, "e id") }},
		{"sed -i with an attached value", sedCalls, func(s string) bool { return strings.HasPrefix(s, "sed -i") && !strings.HasPrefix(s, "sed -i ") }},
		{"an abbreviated sed long option", sedCalls, func(s string) bool {
			return strings.HasPrefix(s, "sed --in") && !strings.HasPrefix(s, "sed --in-place")
		}},
		{"a cluster of sed short flags", sedCalls, func(s string) bool {
			f := strings.Fields(s)
			return len(f) > 1 && len(f[1]) >= 3 && f[1][0] == '-' && f[1][1] != '-'
		}},
		{"git log --no- form", logCalls, func(s string) bool { return strings.HasPrefix(s, "git log --no-") }},
		{"git log with a hostile value", logCalls, func(s string) bool { return strings.Contains(s, "/W/home/.ssh/id_rsa") || strings.Contains(s, "$(id)") }},
	}
	for _, c := range cases {
		if !slices.ContainsFunc(c.calls, c.want) {
			t.Errorf("%s: not generated", c.name)
		}
	}
}

// The checker, on traces written by hand: what each class catches, and
// what a verdict's claims let through.
func TestCheckClaims(t *testing.T) {
	w := &world{root: "/W", home: "/W/home", secretRoots: []string{"/W/canary", "/W/home/.ssh"}}
	read := claims{programs: map[string]bool{"/usr/bin/bash": true, "/usr/bin/sed": true}, names: map[string]bool{"bash": true, "sed": true}, readOnly: true}
	write := read
	write.readOnly = false
	write.targets = []proofs.Target{{Abs: "/W/ws/a.txt"}}
	bash := `1 execve("/usr/bin/bash", ["bash", "-c", "x"], 0x1 /* 1 vars */) = 0`
	cases := []struct {
		name  string
		cl    claims
		trace []string
		out   string
		want  []string
	}{
		{"a named program", read, []string{bash, `2 execve("/usr/bin/sed", ["sed"], 0x1 /* 1 vars */) = 0`}, "", nil},
		{"an unnamed program", read, []string{bash, `2 execve("/bin/sh", ["sh", "-c", "id"], 0x1 /* 1 vars */) = 0`}, "", []string{classExec}},
		{"a PATH search for a named program", read, []string{`2 execve("/usr/local/bin/sed", ["sed"], 0x1 /* 1 vars */) = -1 ENOENT (No such file or directory)`}, "", nil},
		{"a PATH search for another", read, []string{`2 execve("/usr/local/bin/groff", ["groff"], 0x1 /* 1 vars */) = -1 ENOENT (No such file or directory)`}, "", []string{classExec}},
		{"an unnamed temporary file", read, []string{`2 openat(AT_FDCWD</W/ws>, "/tmp", O_RDWR|O_EXCL|O_CLOEXEC|O_TMPFILE, 0600) = 4</tmp/#15 (deleted)>`}, "", nil},
		{"stdout and /dev/null", read, []string{`2 openat(AT_FDCWD</W/ws>, "/dev/null", O_WRONLY|O_CREAT|O_TRUNC, 0666) = 3</dev/null>`}, "", nil},
		{"a read verdict writes", read, []string{`2 openat(AT_FDCWD</W/ws>, "a.txt", O_WRONLY|O_TRUNC) = 3</W/ws/a.txt>`}, "", []string{classWrite}},
		{"a write verdict writes its target", write, []string{`2 openat(AT_FDCWD</W/ws>, "a.txt", O_WRONLY|O_TRUNC) = 3</W/ws/a.txt>`}, "", nil},
		{"sed -i's temporary", write, []string{
			`2 openat(AT_FDCWD</W/ws>, "./sedAb12", O_RDWR|O_CREAT|O_EXCL, 0600) = 4</W/ws/sedAb12>`,
			`2 fchmod(4</W/ws/sedAb12>, 0644) = 0`,
			`2 rename("./sedAb12", "a.txt") = 0`,
		}, "", nil},
		{"a write beside the target", write, []string{`2 openat(AT_FDCWD</W/ws>, "b.txt", O_WRONLY|O_CREAT, 0666) = 3</W/ws/b.txt>`}, "", []string{classWrite}},
		{"a rename onto another file", write, []string{
			`2 openat(AT_FDCWD</W/ws>, "t", O_RDWR|O_CREAT|O_EXCL, 0600) = 4</W/ws/t>`,
			`2 rename("t", "b.txt") = 0`,
		}, "", []string{classWrite}},
		{"an open through a link into the canary dir", read, []string{`2 openat(AT_FDCWD</W/ws>, "docs/s", O_RDONLY) = 3</W/canary/s>`}, "", []string{classCanary}},
		{"a missing file in HOME", read, []string{`2 openat(AT_FDCWD</W/ws>, "/W/home/.ssh/config", O_RDONLY) = -1 ENOENT (No such file or directory)`}, "", nil},
		{"a refused canary open", read, []string{`2 openat(AT_FDCWD</W/ws>, "/W/home/.ssh/id_rsa", O_RDONLY) = -1 EACCES (Permission denied)`}, "", []string{classCanary}},
		{"another process's environment", read, []string{`2 openat(AT_FDCWD</W/ws>, "/proc/1/environ", O_RDONLY) = -1 EACCES (Permission denied)`}, "", []string{classCanary}},
		{"a connection", read, []string{`2 connect(3<socket:[1]>, {sa_family=AF_INET6, sin6_port=htons(80)}, 28) = -1 ECONNREFUSED (Connection refused)`}, "", []string{classConnect}},
		{"a leak in the output", read, []string{bash}, "x " + canaryAWS + " y", []string{classLeak}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.cl.programs["/bin/bash"] = true
			vs := w.check(call{text: c.name, ws: "ws"}, rules.Verdict{}, c.cl, result{trace: strings.Join(c.trace, "\n"), out: c.out})
			var got []string
			for _, v := range vs {
				if !slices.Contains(got, v.class) {
					got = append(got, v.class)
				}
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("classes %v, want %v (%v)", got, c.want, vs)
			}
		})
	}
}
