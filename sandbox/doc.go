// Package sandbox is the environment narrowd establishes itself (spec §5
// rule 4): a no-network, write-confined process that `narrowd exec` builds
// by re-executing narrowd as the sandbox's init, and the checks the daemon
// runs from outside (pidfd and /proc) before it releases a command into
// it. Evidence from here is "established" and may relax a label; the
// agent's own sandbox settings are only ever "host_asserted".
//
// The sandbox needs no root. [Start] spawns two stages of the narrowd
// binary:
//
//   - the net stage runs in new user, network and PID namespaces with one
//     ambient capability, CAP_NET_ADMIN, only to bring lo up (so a test's
//     own loopback listeners work); it then drops every capability and
//     execs the lock stage;
//   - the lock stage starts with no capability at all, checks that its
//     network namespace has only lo, sets no_new_privs, confines writes
//     with Landlock to the writable directories (the workspace and a
//     private tmp) and reads to everything but the person's secret
//     locations, installs a seccomp filter that refuses new AF_UNIX
//     sockets and io_uring, and then either execs the program
//     (confinement for narrowd's own use) or reports ready and waits for
//     the command text, which the daemon releases only after [Verify].
//
// The secret locations (secretPaths and secretVars in hidden_linux.go:
// ~/.ssh, ~/.aws, ~/.config/gh, ~/.netrc, the agents' own credentials,
// shell histories, narrowd's own state and config, ...) are looked up
// under $HOME, the passwd home and the XDG directories, by their real
// place (a symlink and its target). The program can neither read nor
// list them; the rest of $HOME (module caches, toolchains, .gitconfig)
// stays readable. Landlock only grants, so the read rules are every
// sibling on the way from / down to each hidden path, listed when the
// sandbox starts; the directories on the way (/, /home, $HOME, ...)
// can be passed through but not listed, and what appears in them later
// is unreadable. A workspace inside a secret location, or holding one,
// is refused.
//
// The environment: for the repository's own code (narrowd exec
// --ticket, [Spec.DropSecretEnv]) every variable whose name looks like
// it holds a secret is removed before the first stage starts
// ([SecretEnvName], in env.go: TOKEN, SECRET, PASSWORD, PASSWD,
// PASSPHRASE, CREDENTIAL, API_KEY, APIKEY, ACCESS_KEY, PRIVATE_KEY, AUTH
// anywhere in the name, GOAUTH included; AWS_, AZURE_, VAULT_, OPENAI_,
// ANTHROPIC_, GEMINI_, SSH_AUTH_SOCK, ... at its start; GIT_AUTHOR_*
// and TOKENIZERS_PARALLELISM are kept), and the program's stderr gets
// one line naming them, never their values. The wrapper's own
// environment, which still holds them, is out of reach: Landlock refuses
// /proc/PID/environ of processes outside the sandbox. Confinement
// (--confine, which the daemon uses for MCP servers whose configs pass
// tokens on purpose) keeps the environment.
//
// What it does not cover, and the evidence says so: a file in the
// workspace that already has another hard link outside (Landlock judges
// the name used, so [Start] refuses such workspaces, at the time it
// looks); stdin, stdout and stderr, which are the agent's and may be
// connected sockets; secrets the program reaches another way: a
// secret in the value of a variable whose name does not look like one
// (a password in DATABASE_URL, GOPROXY or PIP_INDEX_URL), every
// variable under --confine, a hard link or copy of
// a secret elsewhere, other processes' /proc/PID/cmdline. Landlock binds
// the lock stage's exec thread only (ABI 8 would sync all threads); the
// other threads of that Go process run nothing but the runtime until the
// exec replaces them. The command
// is its PID namespace's init, so what it leaves running dies with it.
//
// Linux only; elsewhere every entry point fails closed.
package sandbox
