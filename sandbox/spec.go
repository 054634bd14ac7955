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
	Exe        string    `json:"exe"`
	NetNS      string    `json:"netns"`
	UserNS     string    `json:"userns"`
	Interfaces []string  `json:"interfaces"`
	Threads    int       `json:"threads"`
	Seccomp    int       `json:"seccomp"`
	NoNewPrivs int       `json:"no_new_privs"`
	CapEff     string    `json:"cap_eff"`
	VerifiedAt time.Time `json:"verified_at"`
}

// ErrUnsupported reports a system where narrowd cannot build its sandbox.
// Nothing runs then.
var ErrUnsupported = errors.New("narrowd's sandbox is not supported on this system")

// StageArgs are the arguments, after the binary, that make narrowd run a
// sandbox stage: `narrowd exec --stage NAME`. The command line entry point
// passes NAME to [RunStage].
func StageArgs(name string) []string { return []string{"exec", "--stage", name} }
