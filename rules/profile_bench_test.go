package rules

import "testing"

// BenchmarkDecide measures the standard profile on three calls: a
// labelled read proven inside the workspace (allowed by the last rule
// group, so every rule is evaluated), a labelled delete (a Write proven to
// one file), and an unlabelled MCP tool (one rule evaluated).
func BenchmarkDecide(b *testing.B) {
	p, err := BuiltinProfile("standard")
	if err != nil {
		b.Fatal(err)
	}
	inside := profEv("path-inside", Proven)
	cases := []struct {
		name string
		in   Input
		want string
	}{
		{"labelled-read", profInput("Read", profRead, inside), "read-workspace"},
		{"labelled-delete", profInput("Write", profWriteFile, inside), "write-workspace-file"},
		{"unlabelled", profInput("mcp__tracker__update", ""), "unlabelled-ask"},
	}
	for _, c := range cases {
		c.in.Call.Input = map[string]any{"file_path": "/work/repo/main.go", "content": "package main\n"}
		if d := p.Decide(c.in); d.Rule != c.want {
			b.Fatalf("%s: got %+v, want %s", c.name, d, c.want)
		}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p.Decide(c.in)
			}
		})
	}
}

// BenchmarkCheckProfile measures loading a user profile as large as the
// standard one, tighten-only enumeration included.
func BenchmarkCheckProfile(b *testing.B) {
	data, err := builtinFS.ReadFile("profiles/standard.toml")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if problems := CheckProfile("standard.toml", data); len(problems) > 0 {
			b.Fatal(problems)
		}
	}
}

// BenchmarkLookupDecide is the part of one decision that rules owns: the
// catalog lookup of a built-in tool, then the standard profile on its
// ceiling narrowed to a single workspace file (the target is 20 µs).
func BenchmarkLookupDecide(b *testing.B) {
	cat, err := DefaultCatalog()
	if err != nil {
		b.Fatal(err)
	}
	p, err := BuiltinProfile("standard")
	if err != nil {
		b.Fatal(err)
	}
	call := &Call{Agent: "claude", Tool: "Write", Cwd: "/work/repo",
		Input: map[string]any{"file_path": "/work/repo/main.go", "content": "package main\n"}}
	ev := []Evidence{profEv("path-inside", Proven)}
	narrowed := *profLabels(profWriteFile)
	b.ReportAllocs()
	for b.Loop() {
		e, ok := cat.Lookup(call.Agent, call.Tool)
		if !ok {
			b.Fatal("no entry")
		}
		ceiling := e.Labels
		d := p.Decide(Input{Call: call, Key: e.Key, Ceiling: &ceiling, Narrowed: &narrowed, Evidence: ev, Session: Session{Known: true}})
		if d.Outcome != Allow {
			b.Fatalf("got %+v", d)
		}
	}
}
