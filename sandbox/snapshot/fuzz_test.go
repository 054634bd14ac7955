package snapshot

import (
	"bytes"
	"errors"
	"os"
	"testing"
)

// FuzzIndex: an index file is read back by `narrowd undo` and the
// daemon's prune, and a process of the same user could have written it.
// Whatever its bytes, Get never panics, and an index it accepts names its
// own id, a valid hash for every stored file, and only paths strictly
// beneath a root other than /, so undo cannot be steered elsewhere.
func FuzzIndex(f *testing.F) {
	f.Add([]byte(`{"id":"ID","time":"2026-11-30T12:00:00Z","files":[{"path":"/w/a.txt","root":"/w","exists":true,"size":3,"mode":420,"sha256":"` +
		"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" + `"}]}`))
	f.Add([]byte(`{"id":"ID","files":[{"path":"/etc/passwd","root":"/","exists":true,"sha256":"00"}]}`))
	f.Add([]byte(`{"id":"ID","files":[{"path":"/w/../etc/x","root":"/w","exists":false}]}`))
	f.Add([]byte(`not json`))
	s, err := Open(f.TempDir(), Budget{})
	if err != nil {
		f.Fatal(err)
	}
	id := NewID()
	f.Fuzz(func(t *testing.T, data []byte) {
		// Seeds say ID where the store's id goes, so that accepted
		// indexes are reachable.
		data = bytes.ReplaceAll(data, []byte("ID"), []byte(id))
		if err := os.WriteFile(s.indexPath(id), data, 0o600); err != nil {
			t.Fatal(err)
		}
		snap, err := s.Get(id)
		if err != nil {
			return
		}
		if snap.ID != id {
			t.Fatalf("accepted an index naming %q as %q", snap.ID, id)
		}
		for _, f := range snap.Files {
			if f.Exists && !validSum(f.SHA256) {
				t.Fatalf("accepted a bad hash %q", f.SHA256)
			}
			if _, err := rel(f.Root, f.Path); err != nil {
				t.Fatalf("accepted a path outside its root: %v", err)
			}
		}
		if _, err := s.List(); err != nil && !errors.Is(err, ErrTampered) {
			t.Logf("list: %v", err)
		}
	})
}

// TestIndexRefusesOutsideRoot: an index naming a file outside its root,
// or the root /, is tampering, while narrowd's own shape loads.
func TestIndexRefusesOutsideRoot(t *testing.T) {
	s, err := Open(t.TempDir(), Budget{})
	if err != nil {
		t.Fatal(err)
	}
	id := NewID()
	sum := "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
	for _, tt := range []struct {
		path, root string
		ok         bool
	}{
		{"/w/a.txt", "/w", true},
		{"/w/sub/a.txt", "/w", true},
		{"/etc/passwd", "/", false},
		{"/etc/passwd", "/w", false},
		{"/w/../etc/passwd", "/w", false},
		{"/w", "/w", false},
		{"a.txt", "/w", false},
	} {
		index := `{"id":"` + id + `","files":[{"path":"` + tt.path + `","root":"` + tt.root + `","exists":true,"sha256":"` + sum + `"}]}`
		if err := os.WriteFile(s.indexPath(id), []byte(index), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := s.Get(id)
		if (err == nil) != tt.ok || !tt.ok && !errors.Is(err, ErrTampered) {
			t.Errorf("%s under %s: Get error %v, want ok=%v", tt.path, tt.root, err, tt.ok)
		}
	}
}
