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
//     private tmp), installs a seccomp filter that refuses new AF_UNIX
//     sockets and io_uring, and then either execs the program
//     (confinement for narrowd's own use) or reports ready and waits for
//     the command text, which the daemon releases only after [Verify].
//
// What it does not cover, and the evidence says so: a file in the
// workspace that already has another hard link outside (Landlock judges
// the name used, so [Start] refuses such workspaces, at the time it
// looks); stdin, stdout and stderr, which are the agent's and may be
// connected sockets. Landlock binds the lock stage's exec thread only
// (ABI 8 would sync all threads); the other threads of that Go process
// run nothing but the runtime until the exec replaces them. The command
// is its PID namespace's init, so what it leaves running dies with it.
//
// Linux only; elsewhere every entry point fails closed.
package sandbox
