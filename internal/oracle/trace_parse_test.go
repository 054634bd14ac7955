package oracle

import (
	"slices"
	"strings"
	"testing"
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
