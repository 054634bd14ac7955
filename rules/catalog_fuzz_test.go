package rules

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// FuzzLoadCatalog: a label file is a trust boundary (a team commits it,
// narrowd label appends to it). Whatever its bytes, loading never panics;
// a refusal is a *CatalogError whose every problem names the file; and a
// catalog that loads answers lookups with labels inside the label space.
func FuzzLoadCatalog(f *testing.F) {
	// One entry of the built-in catalog: the whole file is too large for
	// the fuzzer to mutate usefully.
	if i := bytes.Index(builtinCatalog[1:], []byte("[[tool]]")); i >= 0 {
		first := builtinCatalog[i+1:]
		if j := bytes.Index(first[1:], []byte("[[tool]]")); j >= 0 {
			first = first[:j+1]
		}
		f.Add(first)
	}
	f.Add([]byte("[[tool]]\nkey = \"mcp/fs/read_file\"\n"))
	f.Add([]byte("[[tool]]\nagent = \"claude\"\nname = \"Read\"\n[tool.labels]\nmutation = \"read\"\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := LoadCatalog("labels.toml", data)
		if err != nil {
			ce, ok := errors.AsType[*CatalogError](err)
			if !ok || len(ce.Problems) == 0 {
				t.Fatalf("error %T %v is not a *CatalogError with problems", err, err)
			}
			for _, p := range ce.Problems {
				if !strings.HasPrefix(p, "labels.toml") {
					t.Fatalf("problem %q does not name the file", p)
				}
			}
			return
		}
		for _, e := range c.Entries() {
			for d := range Dim(NumDims) {
				if l := e.Labels.Get(d); l > d.Max() {
					t.Fatalf("entry %s: %s level %d outside the label space", e.Key, d, l)
				}
			}
		}
	})
}
