package proofs_test

import (
	"testing"

	"github.com/narrowd/narrowd/parse"
	"github.com/narrowd/narrowd/proofs"
	"github.com/narrowd/narrowd/rules"
)

// TestHomeSecrets: an argument that reaches a secret through ~ or $HOME is
// unproven, so the call keeps its ceiling, and the evidence still names
// the secret (a guess, which only raises) so the reason says why.
func TestHomeSecrets(t *testing.T) {
	k, err := parse.DefaultKnowledge()
	if err != nil {
		t.Fatal(err)
	}
	ps := proofs.NewPaths([]string{"/w"}, proofs.DefaultSensitive(), nil)
	tests := []struct {
		cmd    string
		secret string // the subject of the sensitive-name guess; "" for none
	}{
		{`cat ~/.ssh/id_rsa`, "~/.ssh/id_rsa"},
		{`cat $HOME/.aws/credentials`, "$HOME/.aws/credentials"},
		{`cp "$HOME"/.netrc x`, `"$HOME"/.netrc`},
		{`tar czf k.tgz ${HOME}/.gnupg/pubring.kbx`, "${HOME}/.gnupg/pubring.kbx"},
		{`cat ~/notes.txt`, ""},
		{`ls ~`, ""},
		{`cat $HOMEDIR/.ssh/id_rsa`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.cmd, func(t *testing.T) {
			ev := proofs.Shell(parse.Analyze(tt.cmd, k), "/w", ps)
			got := ""
			for _, e := range ev {
				if e.Kind == "sensitive-name" {
					got = e.Subject
					if e.Strength != rules.Guess || e.Effect != "raise:scope" {
						t.Errorf("evidence %+v: want a guess that raises scope", e)
					}
				}
				if e.Kind == "label-bound" {
					t.Errorf("an unproven call got a proven bound: %+v", e)
				}
			}
			if got != tt.secret {
				t.Errorf("sensitive-name subject = %q, want %q", got, tt.secret)
			}
		})
	}
}
