package main

import (
	"os"
	"path/filepath"
	"testing"
)

// The hook runs narrowd-hook only when it is an executable file beside a
// binary named narrowd: it hands everything it cannot answer to that one.
func TestHookBinary(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]os.FileMode // in the directory, beside the binary
		bin   string
		want  string
	}{
		{"beside", map[string]os.FileMode{"narrowd": 0o755, "narrowd-hook": 0o755}, "narrowd", "narrowd-hook"},
		{"absent", map[string]os.FileMode{"narrowd": 0o755}, "narrowd", "narrowd"},
		{"not-executable", map[string]os.FileMode{"narrowd": 0o755, "narrowd-hook": 0o644}, "narrowd", "narrowd"},
		{"a-directory", map[string]os.FileMode{"narrowd": 0o755, "narrowd-hook/": 0o755}, "narrowd", "narrowd"},
		{"renamed-narrowd", map[string]os.FileMode{"guard": 0o755, "narrowd-hook": 0o755}, "guard", "guard"},
		{"given-directly", map[string]os.FileMode{"narrowd-hook": 0o755}, "narrowd-hook", "narrowd-hook"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, mode := range tt.files {
				p := filepath.Join(dir, name)
				if name[len(name)-1] == '/' {
					if err := os.Mkdir(p, mode); err != nil {
						t.Fatal(err)
					}
					continue
				}
				if err := os.WriteFile(p, []byte("#!/bin/sh\n"), mode); err != nil {
					t.Fatal(err)
				}
			}
			if got := hookBinary(filepath.Join(dir, tt.bin)); got != filepath.Join(dir, tt.want) {
				t.Errorf("hookBinary = %s, want %s", got, filepath.Join(dir, tt.want))
			}
		})
	}
}
