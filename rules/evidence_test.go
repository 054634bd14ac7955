package rules

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestEvidenceKindsListed: every EvidenceKind constant is in
// evidenceKinds (which Known and the profile check read), once, sorted,
// with a one-line doc, and kebab-case.
func TestEvidenceKindsListed(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "evidence.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	var declared []EvidenceKind
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "EvidenceKind" {
				continue
			}
			for i, name := range vs.Names {
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok {
					t.Fatalf("%s: want a string literal", name.Name)
				}
				v, _ := strconv.Unquote(lit.Value)
				declared = append(declared, EvidenceKind(v))
				if vs.Doc == nil || !strings.HasPrefix(vs.Doc.Text(), name.Name+" ") {
					t.Errorf("%s has no doc comment starting with its name", name.Name)
				}
				if !isKebab(v) {
					t.Errorf("%s = %q is not kebab-case", name.Name, v)
				}
			}
		}
	}
	if len(declared) == 0 {
		t.Fatal("found no EvidenceKind constants")
	}
	slices.Sort(declared)
	for _, k := range declared {
		if !slices.Contains(evidenceKinds, k) {
			t.Errorf("the constant for %q is not in evidenceKinds (rules/evidence.go): add it there", k)
		}
	}
	if !slices.Equal(declared, evidenceKinds) {
		t.Errorf("evidenceKinds must list every EvidenceKind constant once, sorted by value:\n declared %v\n listed   %v", declared, evidenceKinds)
	}
	for _, k := range declared {
		if !k.Known() {
			t.Errorf("%q is declared but not Known", k)
		}
	}
	if EvidenceKind("sensitve-name").Known() || EvidenceKind("").Known() {
		t.Error("an undeclared kind is Known")
	}
}

// TestEmittersUseTypedVocabulary: no code outside rules/evidence.go
// spells an evidence kind or an effect as a string literal, so every kind
// emitted is one of the constants (and so in the closed set the profile
// check knows) and every effect is built by Bound, FactFalse, Raise or
// NoEffect. It reads the module's non-test Go files and flags a string
// literal as a Kind or Effect field, as the first argument of a
// claims-style add(kind, …), compared with a .Kind or .Effect, as a case
// of a switch on .Kind, or converted to EvidenceKind or Effect.
func TestEmittersUseTypedVocabulary(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..")
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && p != root {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") && p != "evidence.go" && p != filepath.Join("..", "rules", "evidence.go") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, p := range files {
		for _, pos := range vocabularyLiterals(t, p) {
			t.Errorf("%s: an evidence kind or effect spelled as a string; use the rules.Kind… constants, rules.Bound, rules.FactFalse, rules.Raise or rules.NoEffect (adding a kind: rules/evidence.go)", pos)
			found++
		}
	}
	if len(files) < 20 {
		t.Fatalf("read only %d files: the walk missed the module", len(files))
	}
}

// vocabularyLiterals returns the positions in file p where a string
// literal stands for an evidence kind or effect.
func vocabularyLiterals(t *testing.T, p string) []token.Position {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, p, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	isStr := func(e ast.Expr) bool {
		// The empty string names no kind: comparing with it asks
		// whether a field is set.
		lit, ok := e.(*ast.BasicLit)
		return ok && lit.Kind == token.STRING && lit.Value != `""`
	}
	selName := func(e ast.Expr) string {
		if s, ok := e.(*ast.SelectorExpr); ok {
			return s.Sel.Name
		}
		if id, ok := e.(*ast.Ident); ok {
			return id.Name
		}
		return ""
	}
	vocab := func(name string) bool { return name == "Kind" || name == "Effect" }
	var out []token.Position
	flag := func(n ast.Node) { out = append(out, fset.Position(n.Pos())) }
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.KeyValueExpr:
			if id, ok := n.Key.(*ast.Ident); ok && vocab(id.Name) && isStr(n.Value) {
				flag(n)
			}
		case *ast.CallExpr:
			switch fn := selName(n.Fun); {
			case fn == "add" && len(n.Args) == 5 && isStr(n.Args[0]):
				flag(n)
			case (fn == "EvidenceKind" || fn == "Effect") && len(n.Args) == 1 && isStr(n.Args[0]):
				flag(n)
			}
		case *ast.BinaryExpr:
			if n.Op == token.EQL || n.Op == token.NEQ {
				if _, ok := n.X.(*ast.SelectorExpr); ok && vocab(selName(n.X)) && isStr(n.Y) ||
					func() bool { _, ok := n.Y.(*ast.SelectorExpr); return ok && vocab(selName(n.Y)) && isStr(n.X) }() {
					flag(n)
				}
			}
		case *ast.SwitchStmt:
			if _, ok := n.Tag.(*ast.SelectorExpr); !ok || selName(n.Tag) != "Kind" {
				return true
			}
			for _, st := range n.Body.List {
				for _, e := range st.(*ast.CaseClause).List {
					if isStr(e) {
						flag(e)
					}
				}
			}
		}
		return true
	})
	return out
}

// kindDocs reads each EvidenceKind constant of evidence.go with the
// text of its doc comment after the constant's name.
func kindDocs(t *testing.T) map[EvidenceKind]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "evidence.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	docs := map[EvidenceKind]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok || vs.Doc == nil || len(vs.Values) != 1 {
			return true
		}
		if id, ok := vs.Type.(*ast.Ident); ok && id.Name == "EvidenceKind" {
			v, _ := strconv.Unquote(vs.Values[0].(*ast.BasicLit).Value)
			text := strings.Join(strings.Fields(vs.Doc.Text()), " ")
			docs[EvidenceKind(v)] = strings.TrimPrefix(text, vs.Names[0].Name+" ")
		}
		return true
	})
	return docs
}

// TestProfilesDocListsKinds: the table of evidence kinds in PROFILES.md,
// which profile authors read, is the constants of evidence.go with their
// doc comments. go test ./rules -u rewrites it.
func TestProfilesDocListsKinds(t *testing.T) {
	t.Parallel()
	file := filepath.Join("profiles", "PROFILES.md")
	doc, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	const start, end = "| kind | meaning |\n|---|---|\n", "\n\n"
	before, rest, ok := strings.Cut(string(doc), start)
	if !ok {
		t.Fatalf("%s has no table of evidence kinds (a %q header)", file, start)
	}
	_, after, _ := strings.Cut(rest, end)
	docs := kindDocs(t)
	var table strings.Builder
	for _, k := range evidenceKinds {
		fmt.Fprintf(&table, "| `%s` | %s |\n", k, docs[k])
	}
	want := before + start + strings.TrimSuffix(table.String(), "\n") + end + after
	if *update {
		if err := os.WriteFile(file, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if want != string(doc) {
		t.Errorf("%s's table of evidence kinds differs from rules/evidence.go; run go test ./rules -u", file)
	}
}
