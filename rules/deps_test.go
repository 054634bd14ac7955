package rules

import (
	"encoding/json"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPurePackages keeps the pure packages pure: parse, proofs and rules
// never link the network, program execution, signals or Prometheus, so
// they cannot execute what they judge or phone home.
func TestPurePackages(t *testing.T) {
	if testing.Short() {
		t.Skip("go list takes a few seconds; not in -short")
	}
	forbidden := []string{"net", "net/http", "os/exec", "os/signal", "github.com/prometheus/", "github.com/narrowd/narrowd/daemon"}
	for _, pkg := range []string{"parse", "proofs", "rules"} {
		t.Run(pkg, func(t *testing.T) {
			out, err := exec.Command("go", "list", "-deps", "-json=ImportPath", "github.com/narrowd/narrowd/"+pkg).Output()
			if err != nil {
				t.Fatalf("go list: %v", err)
			}
			dec := json.NewDecoder(strings.NewReader(string(out)))
			n := 0
			for dec.More() {
				var p struct{ ImportPath string }
				if err := dec.Decode(&p); err != nil {
					t.Fatal(err)
				}
				n++
				for _, f := range forbidden {
					if p.ImportPath == f || strings.HasSuffix(f, "/") && strings.HasPrefix(p.ImportPath, f) {
						t.Errorf("%s depends on %s", pkg, p.ImportPath)
					}
				}
			}
			if n < 5 {
				t.Fatalf("go list returned %d packages: the check checked nothing", n)
			}
		})
	}
}

// TestPackageDocs: every package has exactly one package doc comment.
func TestPackageDocs(t *testing.T) {
	t.Parallel()
	root := ".."
	dirs := map[string]bool{}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && p != root {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") {
			dirs[filepath.Dir(p)] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) < 7 {
		t.Fatalf("found %d package directories", len(dirs))
	}
	for dir := range dirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		docs := 0
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ParseComments|parser.PackageClauseOnly)
			if err != nil {
				t.Fatal(err)
			}
			if af.Doc != nil {
				docs++
			}
		}
		if docs != 1 {
			t.Errorf("package in %s has %d package comments, want exactly 1", dir, docs)
		}
	}
}
