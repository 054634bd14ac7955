package parse

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("u", false, "update golden files")

// goldenCase is the stable, reviewable form of what this package's shell
// half finds in one text: the commands Parse sees and, after Analyze, the
// programs with their wrappers and positions and the reasons that keep
// the ceiling, classified by the small test table (testdata/table.toml).
type goldenCase struct {
	Name     string          `json:"name"`
	Src      string          `json:"src"`
	Err      string          `json:"err,omitempty"`
	Commands []goldenCommand `json:"commands,omitempty"`
	Programs []goldenProgram `json:"programs,omitempty"`
	Unproven []string        `json:"unproven,omitempty"`
}

type goldenCommand struct {
	Pos        string   `json:"pos"`
	Text       string   `json:"text"`
	Dirs       []string `json:"dirs,omitempty"`
	DirUnknown bool     `json:"dir_unknown,omitempty"`
}

type goldenProgram struct {
	Pos        string   `json:"pos"`
	Name       string   `json:"name"`
	Wrappers   []string `json:"wrappers,omitempty"`
	Privileged bool     `json:"privileged,omitempty"`
	Known      bool     `json:"known"`
	Why        string   `json:"why,omitempty"`
	Mutation   string   `json:"mutation"`
	Paths      []string `json:"paths,omitempty"`
}

func goldenOf(name, src string, k *Knowledge) goldenCase {
	g := goldenCase{Name: name, Src: src}
	s, err := Parse(src)
	if err != nil {
		g.Err = err.Error()
		return g
	}
	for _, c := range s.Commands {
		g.Commands = append(g.Commands, goldenCommand{Pos: c.Pos.String(), Text: renderCommand(c), Dirs: c.Dirs, DirUnknown: c.DirUnknown})
	}
	a := Analyze(src, k)
	for _, p := range a.Programs {
		gp := goldenProgram{Pos: p.Pos.String(), Name: p.Name, Wrappers: p.Wrappers, Privileged: p.Privileged, Known: p.Known, Why: p.Why, Mutation: p.Mutation}
		for _, pa := range p.Paths {
			s := pa.Access.String() + ":" + renderWord(pa.Word)
			if pa.Recursive {
				s += "/**"
			}
			gp.Paths = append(gp.Paths, s)
		}
		g.Programs = append(g.Programs, gp)
	}
	for _, u := range a.Unproven {
		g.Unproven = append(g.Unproven, u.Pos.String()+" "+u.Why)
	}
	return g
}

func TestGolden(t *testing.T) {
	t.Parallel()
	k := syntaxKnowledge(t)
	var cases []goldenCase
	for _, tc := range parseTests {
		cases = append(cases, goldenOf("parse/"+tc.name, tc.src, k))
	}
	for _, tc := range analyzeTests {
		cases = append(cases, goldenOf("analyze/"+tc.name, tc.src, k))
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(cases); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "analyze.golden.json")
	if *update {
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./parse -run TestGolden -u)", err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		var old []goldenCase
		if err := json.Unmarshal(want, &old); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		byName := map[string]goldenCase{}
		for _, c := range old {
			byName[c.Name] = c
		}
		for _, c := range cases {
			got, _ := json.MarshalIndent(c, "", "  ")
			prev, _ := json.MarshalIndent(byName[c.Name], "", "  ")
			if !bytes.Equal(got, prev) {
				t.Errorf("%s differs from %s:\n got %s\nwant %s", c.Name, path, got, prev)
			}
		}
		if len(old) != len(cases) {
			t.Errorf("%s has %d cases, want %d", path, len(old), len(cases))
		}
	}
}
