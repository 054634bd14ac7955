package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A bad label file's error names that file and line, not "labels:1",
// also when it is not the first label file.
func TestNewEngineLabelErrorNamesFile(t *testing.T) {
	good, err := os.ReadFile("../rules/testdata/catalog/spec-examples.toml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	first := filepath.Join(dir, "first.toml")
	bad := filepath.Join(dir, "second.toml")
	os.WriteFile(first, good, 0o600)
	os.WriteFile(bad, []byte("# a comment\n\n[[tool]]\nkey = \"x/y\"\n[tool.labels]\nmutation = \"obliterate\"\n"), 0o600)
	if _, err := NewEngine(EngineConfig{LabelFiles: []string{first}}); err != nil {
		t.Fatalf("good label file: %v", err)
	}
	_, err = NewEngine(EngineConfig{LabelFiles: []string{first, bad}})
	if err == nil {
		t.Fatal("a bad label file loaded")
	}
	if !strings.Contains(err.Error(), bad+":3") {
		t.Fatalf("error does not name %s:3: %v", bad, err)
	}
	if strings.Contains(err.Error(), "labels:") {
		t.Fatalf("error names the old concatenated name: %v", err)
	}
}
