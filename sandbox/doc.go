// Package sandbox is the environment narrowd establishes itself (spec §5
// rule 4): a no-network, write-confined process that `narrowd exec` builds
// by re-executing narrowd as the sandbox's init, and the checks the daemon
// runs from outside (pidfd and /proc) before it releases a command into
// it. Evidence from here is "established" and may relax a label; the
// agent's own sandbox settings are only ever "host_asserted".
//
// The sandbox needs no root. [Start] spawns the narrowd binary as its
// net stage, in new user, network, PID and mount namespaces, with three
// ambient capabilities of that user namespace: NET_ADMIN to bring lo up
// (so a test's own loopback listeners work), SYS_ADMIN and DAC_OVERRIDE
// to build the mounts (overlayfs needs the latter for its work
// directory). The net stage, init of the PID namespace:
//
//   - makes every mount private, mounts a size-bounded tmpfs on the
//     private tmp, and, with [Spec.Overlays], an overlay over each such
//     writable root (writes land in the caller's upper directory);
//   - mounts each protected path that exists read-only on itself (.git,
//     the directory a gitfile names, the standing-configuration paths of
//     [Spec.ProtectedPatterns], narrowd's own files of [Spec.Protected]):
//     a write beneath fails with EROFS, a rename or delete of it with
//     EBUSY, a hard link into or out of it with EXDEV. The directories
//     between the root and a protected path are mounted on themselves,
//     so that they cannot be moved aside or replaced by a symlink. A
//     protected path no mount can cover (it does not exist yet and no
//     protected directory holds it, like a missing .envrc or .vscode, or
//     it is a symlink) is watched: after the run, what the run made of it
//     is renamed NAME.narrowd-refused, stderr names it, and the exit
//     status is not 0 ([Protect]);
//   - hides the home directories ($HOME, the wrapper's, the passwd
//     entry's) behind an empty tmpfs and mounts on top only the
//     allowlist of home.toml plus [Spec.HomeAllow] (toolchains and
//     package caches: read-only, or for caches an overlay whose writes
//     are discarded at exit, so a build cannot plant a cache entry a
//     later unconfined build uses), and the writable roots that lie in a
//     home; [Spec.KeepHome] (narrowd's own confinement of MCP servers)
//     keeps the home in view;
//   - covers every secret location still in view (see below) with an
//     empty read-only tmpfs or an empty mode-0 file;
//   - mounts a /proc of its own PID namespace: no host process's command
//     line, environ or fds are in view;
//   - sets RLIMIT_NPROC (counted per user namespace since Linux 5.14, so
//     a fork bomb stops at [DefaultMaxProcs] without touching the
//     person's other processes) and RLIMIT_FSIZE;
//   - brings lo up, drops its capabilities and becomes the lock stage:
//     for confinement, those of the thread that execs the program (a
//     program's capabilities come from it); for a held command, which
//     the daemon checks thread by thread, those of every thread at once
//     (AllThreadsSyscall; a binary with cgo execs the lock stage
//     instead, which starts with none).
//
// The lock stage checks it has no capability and that its network
// namespace has only lo, sets no_new_privs, confines writes with Landlock
// to the writable roots, the private tmp and the cache overlays (reads:
// everywhere, the mounts hide what is secret), installs a seccomp filter
// that refuses new AF_UNIX sockets and io_uring, and then either execs
// the program (confinement for narrowd's own use) or reports ready and
// waits for the command text, which the daemon releases only after
// [Verify] checked from outside the namespaces, the read-only mounts of
// the protected paths it computes itself ([ExpectFor]), the tmpfs over
// the home, the private /proc and the limits. The mounts cannot be
// undone inside: the program has no capability, Landlock forbids mount
// and umount, and in a user namespace the program makes, the mounts it
// inherits are locked. A failed command's stderr gets one line naming
// the read-only paths (a program's EROFS does not say who made them so).
//
// The secret locations (secretPaths and secretVars in hidden_linux.go:
// ~/.ssh, ~/.aws, ~/.config/gh, ~/.netrc, the agents' own credentials,
// shell histories, narrowd's own state and config, ...) are looked up
// under $HOME, the passwd home and the XDG directories, by their real
// place (a symlink and its target), and masked by mounts wherever they
// are still in view. A workspace inside a secret location, or holding
// one, is refused.
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
// looks; the read-only protected trees are not walked: their names
// cannot be written through, and their other names are found where
// they lie in the walked part); the workspace reachable at a second
// path (another bind mount of it: the protected mounts cover the path
// narrowd was given); a "**/" protected pattern matching a path created
// deeper than the root during the run; a disk filled with many files
// each under the file-size limit; stdin, stdout and stderr, which are the agent's and may be
// connected sockets; secrets the program reaches another way: a
// secret in the value of a variable whose name does not look like one
// (a password in DATABASE_URL, GOPROXY or PIP_INDEX_URL), every
// variable under --confine, a hard link or copy of
// a secret elsewhere. Landlock binds
// the lock stage's exec thread only (ABI 8 would sync all threads); the
// other threads of that Go process run nothing but the runtime until the
// exec replaces them. The command
// is its PID namespace's init, so what it leaves running dies with it.
//
// Linux only; elsewhere every entry point fails closed.
package sandbox
