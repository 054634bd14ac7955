package sandbox

import (
	"slices"
	"strings"
	"testing"
)

// TestSecretEnvName is the name rule of DropSecretEnv: what is removed
// and what builds and tests keep, look-alikes included.
func TestSecretEnvName(t *testing.T) {
	drop := []string{
		// Words anywhere in the name, any case.
		"GH_TOKEN", "GITHUB_TOKEN", "NPM_TOKEN", "CARGO_REGISTRY_TOKEN", "gh_token", "Npm_Token",
		"AWS_SESSION_TOKEN", "CI_JOB_TOKEN", "MYTOKEN", "CLIENT_SECRET", "SECRETS_FILE",
		"PGPASSWORD", "DB_PASSWD", "GPG_PASSPHRASE", "GIT_CREDENTIAL_HELPER", "CREDENTIALS_PATH",
		"MY_API_KEY", "STRIPE_APIKEY", "ACCESS_KEY_ID", "SSH_PRIVATE_KEY",
		"GOAUTH", "NPM_CONFIG__AUTH", "OAUTH_CLIENT", "BASIC_AUTH", "HTTP_AUTHORIZATION", "XAUTHORITY",
		// Prefixes: the whole family.
		"AWS_REGION", "AWS_PROFILE", "aws_access_key_id", "AZURE_TENANT_ID", "ARM_CLIENT_ID",
		"GOOGLE_APPLICATION_CREDENTIALS", "VAULT_ADDR", "SSH_AUTH_SOCK", "GPG_AGENT_INFO",
		"DOCKER_AUTH_CONFIG", "NETRC", "CODEX_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_KEY",
		"ANTHROPIC_API_KEY", "ANTHROPIC_MODEL", "GEMINI_API_KEY", "GOOGLE_API_KEY", "HF_TOKEN",
		"MYSQL_PWD",
	}
	keep := []string{
		"PATH", "HOME", "USER", "SHELL", "TERM", "LANG", "PWD", "OLDPWD", "TMPDIR",
		"GOPATH", "GOFLAGS", "GOCACHE", "GOMODCACHE", "GOPROXY", "GOPRIVATE", "GONOSUMDB", "GOTOOLCHAIN",
		"NODE_OPTIONS", "NODE_ENV", "npm_config_cache", "CI", "CARGO_HOME", "RUSTUP_HOME", "PYTHONPATH",
		"FOO", "SSH_CONNECTION", "GPG_TTY", "DOCKER_HOST", "GOOGLE_CLOUD_PROJECT",
		// Look-alikes: a secret word inside a harmless word.
		"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_AUTHOR_DATE", "git_author_name", "TOKENIZERS_PARALLELISM",
		"GIT_COMMITTER_NAME",
		// Not secret by name, though a value may be (not covered).
		"DATABASE_URL", "PIP_INDEX_URL", "KEY", "KEYRING_BACKEND",
	}
	for _, name := range drop {
		if !SecretEnvName(name) {
			t.Errorf("%s is kept, want dropped", name)
		}
	}
	for _, name := range keep {
		if SecretEnvName(name) {
			t.Errorf("%s is dropped, want kept", name)
		}
	}
}

// TestDropSecretEnv: the variables are removed by name, repeats and all,
// the rest keep their order, and the names come back sorted and once.
func TestDropSecretEnv(t *testing.T) {
	env := []string{"PATH=/bin", "GH_TOKEN=a", "FOO=bar", "AWS_SECRET_ACCESS_KEY=b", "GH_TOKEN=c", "X=TOKEN=d", "NOVALUE"}
	kept, dropped := dropSecretEnv(env)
	if want := []string{"PATH=/bin", "FOO=bar", "X=TOKEN=d", "NOVALUE"}; !slices.Equal(kept, want) {
		t.Errorf("kept %q, want %q", kept, want)
	}
	if want := []string{"AWS_SECRET_ACCESS_KEY", "GH_TOKEN"}; !slices.Equal(dropped, want) {
		t.Errorf("dropped %q, want %q", dropped, want)
	}
	if env[1] != "GH_TOKEN=a" {
		t.Error("the caller's environment was changed")
	}
}

func TestDroppedNotice(t *testing.T) {
	tests := []struct {
		names []string
		want  string
	}{
		{nil, ""},
		{[]string{"GH_TOKEN"}, "narrowd exec: the sandbox removed 1 variable that may hold a secret: GH_TOKEN\n"},
		{[]string{"AWS_SECRET_ACCESS_KEY", "GH_TOKEN", "NPM_TOKEN"},
			"narrowd exec: the sandbox removed 3 variables that may hold secrets: AWS_SECRET_ACCESS_KEY GH_TOKEN NPM_TOKEN\n"},
		{[]string{"A_TOKEN\nX", "B TOKEN"}, "narrowd exec: the sandbox removed 2 variables that may hold secrets: \"A_TOKEN\\nX\" \"B TOKEN\"\n"},
	}
	for _, tt := range tests {
		got := droppedNotice(tt.names)
		if got != tt.want {
			t.Errorf("droppedNotice(%q) = %q, want %q", tt.names, got, tt.want)
		}
		if strings.Count(got, "\n") > 1 {
			t.Errorf("droppedNotice(%q) is more than one line", tt.names)
		}
	}
}
