package sandbox

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The environment rule of [Spec.DropSecretEnv]. A ticket's command is the
// repository's own code (a test can be malicious) and runs without the
// person being asked; what it prints reaches the agent's context, and so
// the model provider, and what it writes stays in the workspace. So every
// variable whose name looks like it holds a secret is removed before the
// sandbox starts. The rule judges names only: a value is never looked at,
// so a secret inside a harmless-looking variable (a password in
// DATABASE_URL, GOPROXY or PIP_INDEX_URL) passes through.

// secretWords are the parts that make a name secret wherever they appear
// in it (compared upper case): NPM_TOKEN, GH_TOKEN, PGPASSWORD,
// MY_API_KEY, GOAUTH (which can name a command that prints credentials),
// NPM_CONFIG__AUTH, ...
var secretWords = []string{
	"TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASSPHRASE", "CREDENTIAL",
	"API_KEY", "APIKEY", "ACCESS_KEY", "PRIVATE_KEY", "AUTH",
}

// secretPrefixes are the beginnings of names that are secret, or that
// lead to one, whatever follows: a cloud's whole family of variables
// (AWS_SESSION_TOKEN but also AWS_PROFILE, which names the key to use),
// the agents' own model keys, the SSH and GPG agents' sockets, and the
// names of credential files.
var secretPrefixes = []string{
	"AWS_", "AZURE_", "ARM_CLIENT_", "GOOGLE_APPLICATION_CREDENTIALS",
	"VAULT_", "SSH_AUTH_SOCK", "GPG_AGENT_INFO", "DOCKER_AUTH_CONFIG",
	"NETRC", "CODEX_API_KEY", "OPENAI_", "ANTHROPIC_", "GEMINI_",
	"GOOGLE_API_KEY", "HF_TOKEN",
	// MySQL's client reads its password from this one; it matches no
	// word above (PWD alone would drop the working directory).
	"MYSQL_PWD",
}

// harmlessWords are underscore-separated words that contain a secret
// word but name no secret; builds and tests need them. They are ignored
// when the words are matched (a prefix still drops the name):
// GIT_AUTHOR_NAME, GIT_AUTHOR_EMAIL and GIT_AUTHOR_DATE (tests that
// commit), TOKENIZERS_PARALLELISM (Hugging Face tokenizers). AUTHORITY
// and AUTHORIZATION are not among them: XAUTHORITY names the X cookie
// file and an AUTHORIZATION variable holds a header.
var harmlessWords = []string{"AUTHOR", "AUTHORS", "TOKENIZERS"}

// SecretEnvName reports whether the sandbox removes a variable of this
// name from the program's environment when [Spec.DropSecretEnv] is set.
// Names are compared case-insensitively.
func SecretEnvName(name string) bool {
	upper := strings.ToUpper(name)
	for _, p := range secretPrefixes {
		if strings.HasPrefix(upper, p) {
			return true
		}
	}
	words := strings.Split(upper, "_")
	for i, w := range words {
		if slices.Contains(harmlessWords, w) {
			words[i] = ""
		}
	}
	// Joined again so that a word spanning an underscore (API_KEY) is
	// found; a blanked word leaves its underscores, so it joins nothing.
	rest := strings.Join(words, "_")
	for _, w := range secretWords {
		if strings.Contains(rest, w) {
			return true
		}
	}
	return false
}

// dropSecretEnv returns env without the variables [SecretEnvName]
// matches, and their names, sorted and without repeats.
func dropSecretEnv(env []string) (kept, dropped []string) {
	kept = env[:0:0]
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if SecretEnvName(name) {
			dropped = append(dropped, name)
			continue
		}
		kept = append(kept, kv)
	}
	slices.Sort(dropped)
	return kept, slices.Compact(dropped)
}

// droppedNotice is the one line the program's stderr gets before it
// runs, naming (never showing) what was removed, so that a test that
// needed a token fails understandably. "" when nothing was.
func droppedNotice(names []string) string {
	if len(names) == 0 {
		return ""
	}
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = n
		if !plainName(n) {
			quoted[i] = strconv.Quote(n) // one line, whatever the name holds
		}
	}
	what := "variables that may hold secrets"
	if len(names) == 1 {
		what = "variable that may hold a secret"
	}
	return fmt.Sprintf("narrowd exec: the sandbox removed %d %s: %s\n", len(names), what, strings.Join(quoted, " "))
}

// plainName reports a name of letters, digits and underscores only.
func plainName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r != '_' && (r < '0' || r > '9') && (r < 'A' || r > 'Z') && (r < 'a' || r > 'z') {
			return false
		}
	}
	return true
}
