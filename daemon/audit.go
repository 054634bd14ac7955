package daemon

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/narrowd/narrowd/rules"
)

// Record is one audit log line: one per decision narrowd answered. It
// carries the full verdict with its evidence and, at the top level, seed
// 004's permission decision object (tool_name, risk_class,
// side_effect_class, resource_scope, decision, policy_rule, reason,
// approver, timestamp).
type Record struct {
	// ID is narrowd's id for this call; the shim's reply carries it.
	ID string `json:"id"`

	// Seed 004's decision object.
	ToolName        string  `json:"tool_name"`
	RiskClass       string  `json:"risk_class"`
	SideEffectClass string  `json:"side_effect_class"`
	ResourceScope   string  `json:"resource_scope"`
	Decision        string  `json:"decision"`
	PolicyRule      string  `json:"policy_rule"`
	Reason          string  `json:"reason"`
	Approver        *string `json:"approver"`
	Timestamp       string  `json:"timestamp"`

	Agent     string `json:"agent"`
	Event     string `json:"event,omitempty"`
	Phase     string `json:"phase,omitempty"`
	Session   string `json:"session,omitempty"`
	Cwd       string `json:"cwd,omitempty"`
	ToolUseID string `json:"tool_use_id,omitempty"`
	// Summary is the call's main argument for a person: the command, the
	// path or the URL, cut to a few hundred characters.
	Summary string `json:"summary,omitempty"`
	// Via is how the call arrived: "socket" (the shim), "http" (an agent's
	// HTTP hook).
	Via string `json:"via"`
	// Answer is what narrowd told the agent: allow, sandbox, ask, deny,
	// abandoned (the client had stopped waiting: nobody received it),
	// abstain (it would allow, and left the call to the agent's own
	// permission flow) or error (it failed safe with a blocking reply).
	Answer string `json:"answer"`
	// Outcome and CeilingOutcome are the profile's verdicts on the
	// narrowed and on the un-narrowed labels.
	Outcome        string `json:"outcome,omitempty"`
	CeilingOutcome string `json:"ceiling_outcome,omitempty"`
	// PromptAvoided is true when narrowd allowed a call at the agent's
	// permission request: a prompt a person did not have to answer.
	PromptAvoided bool `json:"prompt_avoided"`
	// PromptAvoidedEstimate is true for a pre-tool allow, by an agent
	// without a permission-request hook, of a call whose ceiling the
	// profile would not have allowed.
	PromptAvoidedEstimate bool `json:"prompt_avoided_estimate"`
	// SessionKnown reports whether narrowd held the session's history.
	SessionKnown bool           `json:"session_known"`
	Verdict      *rules.Verdict `json:"verdict,omitempty"`
	// Error is the internal failure behind an error answer.
	Error string `json:"error,omitempty"`
	// Corrects marks a record written after the record with the same
	// ID, which it corrects: the first was still being written when its
	// call gave up waiting for it and was answered with a block, so the
	// answer it states is not the one the agent received. [ReadAudit]
	// applies corrections.
	Corrects   bool  `json:"corrects,omitempty"`
	DurationUS int64 `json:"duration_us"`
}

// Time parses the record's timestamp.
func (r *Record) Time() time.Time {
	t, _ := time.Parse(time.RFC3339Nano, r.Timestamp)
	return t
}

// seed004Decision maps an outcome to seed 004's decision values.
func seed004Decision(o rules.Outcome) string {
	switch o {
	case rules.Allow:
		return "allow"
	case rules.Sandbox:
		return "run_in_sandbox"
	case rules.Ask:
		return "approval_required"
	default:
		return "deny"
	}
}

// sideEffectClass condenses narrowed labels to seed 004's
// side_effect_class: none, local_write, internal, external, financial, or
// unknown for an unlabelled tool.
func sideEffectClass(l *rules.Labels) string {
	switch {
	case l == nil:
		return "unknown"
	case l.Get(rules.Financial) > 0:
		return "financial"
	case l.Value(rules.Egress) == "external":
		return "external"
	case l.Value(rules.Egress) == "internal":
		return "internal"
	case l.Get(rules.Mutation) > 0:
		return "local_write"
	default:
		return "none"
	}
}

// resourceScope condenses narrowed labels to seed 004's resource_scope:
// project, organization, external, or unknown for an unlabelled tool.
func resourceScope(l *rules.Labels) string {
	switch {
	case l == nil:
		return "unknown"
	case l.Value(rules.Egress) == "external":
		return "external"
	case l.Value(rules.Scope) == "account_wide":
		return "organization"
	default:
		return "project"
	}
}

// summaryKeys are the tool input fields that say what a call does, most
// telling first.
var summaryKeys = [...]string{"command", "cmd", "file_path", "path", "notebook_path", "url", "pattern", "query", "prompt", "dir_path"}

// summarize returns the call's main argument, cut to 300 bytes on a rune
// boundary.
func summarize(in map[string]any) string {
	for _, k := range summaryKeys {
		if s, ok := in[k].(string); ok && s != "" {
			const max = 300
			if len(s) > max {
				cut := max
				for cut > 0 && !utf8.RuneStart(s[cut]) {
					cut--
				}
				s = s[:cut] + "…"
			}
			return s
		}
	}
	return ""
}

// Audit is the audit log: audit.jsonl in its directory, rotated by size
// into audit-<time>.jsonl files, of which the newest few are kept.
// Append returns only once the record is written; see [AuditOptions]
// for when it reaches the disk.
type Audit struct {
	dir     string
	keep    int
	timeout time.Duration
	log     *slog.Logger
	j       *journal
	// coming counts the decisions being judged that will append a
	// record: the journal's writer waits a little for them (group
	// commit across more calls under load).
	coming atomic.Int64
}

// auditLinger bounds how long a record waits for others to share its
// fsync: a fraction of a hook round trip, and only under load.
const auditLinger = 500 * time.Microsecond

// auditName is the live audit file's name.
const auditName = "audit.jsonl"

// AuditOptions configure an [Audit].
type AuditOptions struct {
	// MaxSize is the size in bytes at which the live file is rotated.
	MaxSize int64
	// Keep is how many rotated files are kept.
	Keep int
	// Timeout fails an append the disk has not taken after this long,
	// and with SyncWithin, appends while a record written longer ago is
	// still not fsynced (0: no limit).
	Timeout time.Duration
	// SyncWithin, when positive, lets Append return once its record is
	// written, and fsyncs records within that long (at once when the
	// log is idle). Otherwise Append returns only once its record is
	// fsynced.
	SyncWithin time.Duration
}

// OpenAudit opens the audit log in dir (created 0700).
func OpenAudit(dir string, o AuditOptions, log *slog.Logger) (*Audit, error) {
	if dir == "" {
		return nil, errors.New("no audit directory")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("failed to create audit directory: %w", err)
	}
	a := &Audit{dir: dir, keep: o.Keep, timeout: o.Timeout, log: log}
	j, err := openJournal(filepath.Join(dir, auditName), journalOptions{
		limit:      o.MaxSize,
		full:       a.rotate,
		logErr:     func(err error) { log.Error("audit log trouble", "err", err) },
		coming:     &a.coming,
		linger:     auditLinger,
		syncWithin: o.SyncWithin,
		syncLimit:  o.Timeout,
	})
	if err != nil {
		return nil, err
	}
	a.j = j
	return a, nil
}

// recordBufs holds encode buffers for audit lines: one per decision in
// flight, reused so that a decision's record costs no garbage.
var recordBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// maxPooledRecord bounds the buffers kept for reuse, so that one huge
// record does not pin its memory.
const maxPooledRecord = 64 << 10

// Append writes one record: fsynced, or written for the syncer to fsync
// (AuditOptions.SyncWithin). An error means the record may not be on
// disk, and the call must fail safe.
func (a *Audit) Append(r *Record) error {
	bp := recordBufs.Get().(*[]byte)
	b := append(appendRecord((*bp)[:0], r), '\n')
	err := a.j.AppendWithin(b, a.timeout, func() []byte {
		c := *r
		c.Answer, c.Corrects, c.Verdict = "error", true, nil
		c.Error = "the record was not written in time, so the agent was answered with a block"
		return append(appendRecord(nil, &c), '\n')
	})
	// The journal copied the line: the buffer is free whatever happened.
	if cap(b) <= maxPooledRecord {
		*bp = b[:0]
		recordBufs.Put(bp)
	}
	return err
}

// Close flushes and closes the log.
func (a *Audit) Close() error { return a.j.Close() }

// rotate renames the full live file aside and opens a new one. It runs
// in the journal's writer goroutine.
func (a *Audit) rotate(f *os.File, size int64) (*os.File, int64, error) {
	live := filepath.Join(a.dir, auditName)
	aside := filepath.Join(a.dir, "audit-"+time.Now().UTC().Format("20060102T150405.000000000Z")+".jsonl")
	if err := os.Rename(live, aside); err != nil {
		return f, size, fmt.Errorf("failed to rotate audit log: %w", err)
	}
	f.Close()
	nf, nsize, err := openAppend(live)
	if err != nil {
		return nil, 0, err
	}
	if err := syncDir(a.dir); err != nil {
		a.log.Error("audit rotation not durable", "err", err)
	}
	a.prune()
	return nf, nsize, nil
}

// prune removes rotated files beyond the newest a.keep.
func (a *Audit) prune() {
	old, err := rotatedAuditFiles(a.dir)
	if err != nil || len(old) <= a.keep {
		return
	}
	for _, p := range old[:len(old)-a.keep] {
		if err := os.Remove(p); err != nil {
			a.log.Error("failed to remove old audit file", "path", p, "err", err)
		}
	}
}

// rotatedAuditFiles lists the rotated audit files in dir, oldest first.
func rotatedAuditFiles(dir string) ([]string, error) {
	m, err := filepath.Glob(filepath.Join(dir, "audit-*.jsonl"))
	if err != nil {
		return nil, err
	}
	slices.Sort(m) // names sort by time
	return m, nil
}

// ReadAudit calls fn for every record in the audit log in dir, oldest
// first, across rotated files. A line that does not parse (a record torn
// by a crash before it was acknowledged) is skipped. A correction
// ([Record.Corrects]) is applied to the record it corrects, whose answer
// and error it replaces, and is not itself passed to fn unless that
// record is missing. fn returning an error stops the walk with that
// error.
func ReadAudit(dir string, fn func(*Record) error) error {
	files, err := rotatedAuditFiles(dir)
	if err != nil {
		return fmt.Errorf("failed to list audit files: %w", err)
	}
	files = append(files, filepath.Join(dir, auditName))
	// Corrections are rare: a first pass finds them.
	corrections := map[string]*Record{}
	for _, p := range files {
		err := readAuditFile(p, func(r *Record) error {
			if r.Corrects {
				corrections[r.ID] = r
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	for _, p := range files {
		err := readAuditFile(p, func(r *Record) error {
			if r.Corrects {
				if _, pending := corrections[r.ID]; !pending {
					return nil // applied to its record
				}
				delete(corrections, r.ID)
				return fn(r) // its record is missing
			}
			if c, ok := corrections[r.ID]; ok {
				r.Answer, r.Error = c.Answer, c.Error
				delete(corrections, r.ID)
			}
			return fn(r)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func readAuditFile(path string, fn func(*Record) error) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("failed to open audit log: %w", err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if len(strings.TrimSpace(string(line))) > 0 && err == nil {
			var r Record
			if json.Unmarshal(line, &r) == nil {
				if err := fn(&r); err != nil {
					return err
				}
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("failed to read %s: %w", path, err)
		}
	}
}
