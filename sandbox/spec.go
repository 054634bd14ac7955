package sandbox

import (
	"errors"
	"time"
)

// Spec says what one sandboxed run may touch. The network is never a
// choice: every run gets a network namespace with only lo.
type Spec struct {
	// Writable are the absolute directories the run may write beneath (the
	// workspace). [Start] adds a private tmp of its own.
	Writable []string `json:"writable"`
	// Dir is the working directory of the program; empty means the
	// wrapper's own for confinement (Args set), else the first writable
	// directory.
	Dir string `json:"dir"`
	// Args is the program and its arguments for confinement (narrowd exec
	// --confine). Empty means held mode: the sandbox reports ready and
	// waits for [Sandbox.Release], then runs the released text with
	// bash -c.
	Args []string `json:"args,omitempty"`
	// Env is the program's environment; nil means the wrapper's own.
	// TMPDIR is always replaced by the private tmp.
	Env []string `json:"-"`
	// DropSecretEnv removes from Env every variable whose name looks like
	// it holds a secret ([SecretEnvName]: TOKEN, SECRET, PASSWORD, API_KEY,
	// AUTH, AWS_, ANTHROPIC_, ...) before the sandbox starts, and gives the
	// program's stderr one line naming them (never their values). Set it
	// for the repository's own code (narrowd exec --ticket); confinement
	// for narrowd's own use (--confine, the daemon's MCP servers, whose
	// configs pass tokens on purpose) keeps the environment. The secret
	// locations the variables name are hidden either way.
	DropSecretEnv bool `json:"-"`
	// MaxScan bounds how many directory entries [Start] may look at when
	// it checks the writable directories for hard links; 0 means
	// [DefaultMaxScan].
	MaxScan int `json:"-"`

	// Protected are absolute paths the run may not change (narrowd's own
	// files: its binaries, state, configuration), computed by the caller.
	// Those inside a writable root are mounted read-only.
	Protected []string `json:"-"`
	// ProtectedPatterns are paths relative to each writable root that
	// stay read-only (.git, the standing-configuration table); nil means
	// [DefaultProtectedPatterns]. See [Protect] for how a pattern maps to
	// the paths mounted read-only.
	ProtectedPatterns []string `json:"-"`
	// HomeAllow are entries the person's profile adds to the home
	// allowlist ("PATH" read-only, "PATH:cache" writable, writes
	// discarded), relative to $HOME.
	HomeAllow []string `json:"-"`
	// KeepHome shows the whole home directory (minus the secret
	// locations) instead of the allowlist: narrowd's own confinement of
	// MCP servers, which live and read their files there.
	KeepHome bool `json:"-"`
	// MaxProcs bounds the processes and threads of the run
	// (RLIMIT_NPROC, counted in the sandbox's user namespace only); 0
	// means [DefaultMaxProcs].
	MaxProcs int `json:"-"`
	// MaxFileSize bounds one file the run writes (RLIMIT_FSIZE); 0 means
	// [DefaultMaxFileSize].
	MaxFileSize int64 `json:"-"`
	// TmpSize bounds the private tmp, a tmpfs; 0 means [DefaultTmpSize].
	TmpSize int64 `json:"-"`
	// MinFree is the free space of a writable root's file system below
	// which the wrapper stops the command; 0 means [DefaultMinFree], at
	// most half of what is free at the start.
	MinFree int64 `json:"-"`
	// Overlays mount an overlay over writable roots: the run's writes
	// land in Upper and the real root is unchanged (undo applies them
	// afterwards). Protected paths are mounted read-only on top.
	Overlays []Overlay `json:"-"`
}

// Overlay is one writable root seen through an overlay. Upper and Work
// are empty directories of the caller on the root's file system.
type Overlay struct {
	Root  string `json:"root"`
	Upper string `json:"upper"`
	Work  string `json:"work"`
}

// Limits of a run, unless the spec says otherwise.
const (
	DefaultMaxProcs    = 1024
	DefaultMaxFileSize = 4 << 30
	DefaultTmpSize     = 1 << 30
	DefaultMinFree     = 1 << 30
)

// DefaultMaxScan is the default bound of the hard-link scan.
const DefaultMaxScan = 200_000

// Ready is what the lock stage reports once it is confined.
type Ready struct {
	// Pid is the lock stage's pid, as the wrapper (and the daemon, which
	// shares its PID namespace) sees it.
	Pid int
	// LandlockABI is the Landlock ABI version the stage got.
	LandlockABI int
}

// Facts are what [Verify] observed from outside, for the evidence record.
type Facts struct {
	Pid int `json:"pid"`
	// Exe is the binary it runs, as named to Verify.
	Exe        string   `json:"exe"`
	NetNS      string   `json:"netns"`
	UserNS     string   `json:"userns"`
	Interfaces []string `json:"interfaces"`
	Threads    int      `json:"threads"`
	Seccomp    int      `json:"seccomp"`
	NoNewPrivs int      `json:"no_new_privs"`
	CapEff     string   `json:"cap_eff"`
	// MountNS and PidNS are the sandbox's own namespaces.
	MountNS string `json:"mntns"`
	PidNS   string `json:"pidns"`
	// ReadOnly are the protected paths Verify found mounted read-only.
	ReadOnly []string `json:"read_only"`
	// HomeHidden are the home directories Verify found covered by a
	// tmpfs (the allowlist shown on top).
	HomeHidden []string `json:"home_hidden"`
	// PrivateProc says the sandbox's /proc is its PID namespace's own.
	PrivateProc bool `json:"private_proc"`
	// MaxProcs and MaxFileSize are the limits read from /proc/PID/limits.
	MaxProcs    string    `json:"max_procs"`
	MaxFileSize string    `json:"max_file_size"`
	VerifiedAt  time.Time `json:"verified_at"`
}

// Expect is what [Verify] must find, computed by the verifier from the
// workspace, not told by the sandbox.
type Expect struct {
	// ReadOnly are absolute paths that must be read-only mounts in the
	// sandbox.
	ReadOnly []string
	// Homes are home directories that must be covered by a tmpfs.
	Homes []string
}

// ErrUnsupported reports a system where narrowd cannot build its sandbox.
// Nothing runs then.
var ErrUnsupported = errors.New("narrowd's sandbox is not supported on this system")

// StageArgs are the arguments, after the binary, that make narrowd run a
// sandbox stage: `narrowd exec --stage NAME`. The command line entry point
// passes NAME to [RunStage].
func StageArgs(name string) []string { return []string{"exec", "--stage", name} }
