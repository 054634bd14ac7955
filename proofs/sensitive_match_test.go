package proofs

import (
	"testing"

	"github.com/bmatcuk/doublestar/v4"
)

// TestSensitivePatternsMatchDoublestar: the shapes read once must answer
// exactly as doublestar does, for every default pattern and profile-style
// extras, on paths at, under, beside and around each name.
func TestSensitivePatternsMatchDoublestar(t *testing.T) {
	pats := append(DefaultSensitive(),
		"**/prod/*.yaml", "secrets/**", "**/x", "**/a/b", "**/a/b/**", "**/*", "**/.e*v", "home/*/.ssh/**", "**/[ab].key")
	paths := []string{
		"", ".env", "w/.env", "w/.env.local", "w/.env.example", "w/x.env", "w/envx", "w/.envrc",
		"home/u/.ssh", "home/u/.ssh/id_ed25519", "home/u/.sshx/y", "home/u/ssh/.ssh.bak",
		".ssh/config", "w/id_rsa", "w/id_rsa.pub", "w/my_id_rsa", "w/server.pem", "w/pem",
		"w/.config/gcloud", "w/.config/gcloud/creds.json", "w/.config/x/gcloud", "w/.config",
		"w/.docker/config.json", "w/docker/config.json", "w/.git/config", "w/.git/configx",
		"w/.git/hooks/pre-commit", "w/.git/hooks", "w/credentials", "w/credentials.json",
		"w/aws_credentials_x.json", "w/secrets.yaml", "w/app-secret.yml", "w/.claude/settings.local.json",
		"w/.claude/settings.json", "w/.claude/hooks/x.sh", "w/.codex", "w/.codex/hooks.json",
		"w/state.tfstate", "w/state.tfstate.backup", "w/prod/a.yaml", "w/prod/b/a.yaml",
		"secrets", "secrets/a", "w/secrets/a", "x", "w/x", "a/b", "w/a/b", "w/a/b/c", "a/bb",
		"w/.ev", "w/.env/v", "a.key", "w/b.key", "w/c.key", "home/u/.ssh/k", "home/a/b/.ssh/k",
	}
	for _, pat := range pats {
		sp := compilePattern(pat)
		for _, rel := range paths {
			want, err := doublestar.Match(pat, rel)
			if err != nil {
				t.Fatalf("doublestar %q: %v", pat, err)
			}
			if got := sp.match(rel, splitRel(rel)); got != want {
				t.Errorf("pattern %q (kind %d) on %q: %v, doublestar says %v", pat, sp.kind, rel, got, want)
			}
		}
	}
}

// TestSensitiveShapes: the common patterns take the fast shapes.
func TestSensitiveShapes(t *testing.T) {
	general := 0
	for _, sp := range compileSensitive(DefaultSensitive()) {
		if sp.kind == patternGeneral {
			general++
		}
	}
	if general > 8 {
		t.Errorf("%d default patterns fall back to the general matcher", general)
	}
}
