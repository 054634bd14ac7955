package proofs

import (
	"os/exec"
	"testing"

	"github.com/narrowd/narrowd/parse"
)

// BenchmarkGitRepoEvidence is what reading an ordinary repository (and the
// person's config) costs one git call: go test ./proofs -run x -bench GitRepo
func BenchmarkGitRepoEvidence(b *testing.B) {
	git, err := exec.LookPath("git")
	if err != nil {
		b.Skip("git is not installed")
	}
	ws := b.TempDir()
	if out, err := exec.Command(git, "init", "-q", ws).CombinedOutput(); err != nil {
		b.Fatalf("git init: %v: %s", err, out)
	}
	k, err := parse.DefaultKnowledge()
	if err != nil {
		b.Fatal(err)
	}
	a := parse.Analyze("git status", k)
	ps := NewPaths([]string{ws}, nil, OSDisk{})
	b.ReportAllocs()
	for b.Loop() {
		var c claims
		gitRepoEvidence(&c, a, ws, ps)
		if len(c.ev) != 1 || c.ev[0].Kind != "git-state-ordinary" {
			b.Fatalf("evidence %v", c.ev)
		}
	}
}
