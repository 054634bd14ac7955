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
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/narrowd/narrowd/rules"
)

// Seed 003's five portable tool labels, as session history records them.
const (
	ReadsUntrusted = "reads_untrusted"
	ExternalEffect = "external_effect"
	Destructive    = "destructive"
	MovesMoney     = "moves_money"
	ReadsSensitive = "reads_sensitive"
)

// CalledLabels returns the seed 003 labels a call that ran carries, from
// its verdict, as [rules.SessionLabels] defines them (narrowed labels and
// evidence). An unlabelled tool could have done anything, so it carries
// all five.
func CalledLabels(v rules.Verdict) []string {
	return rules.SessionLabels(v.Narrowed, v.Evidence)
}

// Sessions is the history of every agent session narrowd has seen run
// tools: which tools ran and which seed 003 labels they carried. It is
// kept in memory and in an append-only file (sessions.jsonl in the state
// directory) that is replayed at start and compacted when it grows, so
// history survives a restart. It is bounded: at most maxSessions sessions
// (the least recently used are dropped) and the last maxTools tool keys
// per session. A dropped or interrupted session is remembered as
// incomplete and reads as unknown, never as clean.
type Sessions struct {
	log  *slog.Logger
	path string
	now  func() time.Time

	mu   sync.Mutex
	m    map[string]*sessionState
	gone map[string]bool // incomplete sessions: evicted or with a gap
	// pending are gaps known in memory but not yet on disk (their
	// history write failed); the next append writes them first.
	pending map[string]bool
	lines   int // lines in the file, for compaction
	checked int // lines when compaction was last considered

	jmu sync.RWMutex // held for writing while the file is compacted
	j   *journal

	// Bounds; tests lower them.
	maxSessions, maxTools int
}

type sessionState struct {
	called map[string]bool
	tools  []string
	last   time.Time
}

// historyLine is one line of sessions.jsonl.
type historyLine struct {
	Agent   string    `json:"agent"`
	Session string    `json:"session"`
	Tool    string    `json:"tool,omitempty"`
	Labels  []string  `json:"labels,omitempty"`
	Time    time.Time `json:"time"`
	// Gap marks history narrowd missed (the shim ran without the daemon,
	// or the session was dropped): the session is incomplete from now on.
	Gap bool `json:"gap,omitempty"`
}

// Bounds of the session store.
const (
	maxSessions   = 4096
	maxGone       = 16384
	maxTools      = 64
	sessionsName  = "sessions.jsonl"
	compactFactor = 4 // compact when lines > compactFactor × live entries + slack
)

// OpenSessions loads the history in stateDir (created 0700) and opens it
// for appending.
func OpenSessions(stateDir string, log *slog.Logger) (*Sessions, error) {
	if stateDir == "" {
		return nil, errors.New("no state directory")
	}
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return nil, fmt.Errorf("failed to create state directory: %w", err)
	}
	s := &Sessions{
		log:     log,
		path:    filepath.Join(stateDir, sessionsName),
		now:     time.Now,
		m:       make(map[string]*sessionState),
		gone:    make(map[string]bool),
		pending: make(map[string]bool),

		maxSessions: maxSessions,
		maxTools:    maxTools,
	}
	if err := s.replay(); err != nil {
		return nil, err
	}
	if err := s.compact(); err != nil {
		return nil, err
	}
	j, err := openJournal(s.path, journalOptions{})
	if err != nil {
		return nil, err
	}
	s.j = j
	return s, nil
}

func sessionKey(agent, id string) string { return agent + "\x00" + id }

func (s *Sessions) replay() error {
	f, err := os.Open(s.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("failed to open session history: %w", err)
	}
	defer f.Close()
	br := bufio.NewReader(f)
	for {
		line, err := br.ReadBytes('\n')
		if err == nil {
			var h historyLine
			if json.Unmarshal(line, &h) == nil && h.Session != "" {
				s.apply(h)
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("failed to read session history: %w", err)
		}
	}
}

// apply adds one history line to memory. s.mu must be held (or s not yet
// shared).
func (s *Sessions) apply(h historyLine) {
	k := sessionKey(h.Agent, h.Session)
	s.lines++
	if h.Gap {
		delete(s.m, k)
		s.markGone(k)
		return
	}
	if s.gone[k] {
		return
	}
	st := s.m[k]
	if st == nil {
		if len(s.m) >= s.maxSessions {
			s.evictOldest()
		}
		st = &sessionState{called: make(map[string]bool)}
		s.m[k] = st
	}
	for _, l := range h.Labels {
		st.called[l] = true
	}
	if h.Tool != "" {
		st.tools = append(st.tools, h.Tool)
		if len(st.tools) > s.maxTools {
			st.tools = append(st.tools[:0], st.tools[len(st.tools)-s.maxTools:]...)
		}
	}
	if h.Time.After(st.last) {
		st.last = h.Time
	}
}

func (s *Sessions) markGone(k string) {
	if len(s.gone) >= maxGone {
		for g := range s.gone { // drop an arbitrary old tombstone
			delete(s.gone, g)
			break
		}
	}
	s.gone[k] = true
}

func (s *Sessions) evictOldest() {
	var oldK string
	var oldT time.Time
	for k, st := range s.m {
		if oldK == "" || st.last.Before(oldT) {
			oldK, oldT = k, st.last
		}
	}
	delete(s.m, oldK)
	s.markGone(oldK)
}

// Get returns what narrowd knows of a session. A session with no id,
// with no recorded history, or that is incomplete is unknown.
func (s *Sessions) Get(agent, id string) rules.Session {
	if id == "" {
		return rules.Session{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.m[sessionKey(agent, id)]
	if st == nil {
		return rules.Session{}
	}
	called := make(map[string]bool, len(st.called))
	for k, v := range st.called {
		called[k] = v
	}
	return rules.Session{Known: true, Called: called, Tools: append([]string(nil), st.tools...)}
}

// Record adds a tool that ran, with its seed 003 labels, to the session's
// history, durably.
func (s *Sessions) Record(agent, id, tool string, labels []string) error {
	if id == "" {
		return nil
	}
	return s.append(historyLine{Agent: agent, Session: id, Tool: tool, Labels: labels, Time: s.now().UTC()})
}

// MarkGap records that narrowd missed part of a session's history; the
// session reads as unknown from then on.
func (s *Sessions) MarkGap(agent, id string) error {
	if id == "" {
		return nil
	}
	return s.append(historyLine{Agent: agent, Session: id, Gap: true, Time: s.now().UTC()})
}

func (s *Sessions) append(h historyLine) error {
	b, err := json.Marshal(h)
	if err != nil {
		return fmt.Errorf("failed to encode session history: %w", err)
	}
	// Gaps that could not be written before go first, in the same write.
	s.mu.Lock()
	var gaps []historyLine
	var buf []byte
	for k := range s.pending {
		agent, id, _ := strings.Cut(k, "\x00")
		g := historyLine{Agent: agent, Session: id, Gap: true, Time: h.Time}
		gb, err := json.Marshal(g)
		if err != nil {
			continue
		}
		gaps = append(gaps, g)
		buf = append(append(buf, gb...), '\n')
	}
	s.mu.Unlock()
	buf = append(append(buf, b...), '\n')

	// Durable first: history that is in memory but not on disk would be
	// lost by a crash, and a restarted daemon would then think the
	// session cleaner than it was.
	s.jmu.RLock()
	err = s.j.Append(buf)
	s.jmu.RUnlock()
	if err != nil {
		return err
	}
	s.mu.Lock()
	for _, g := range gaps {
		delete(s.pending, sessionKey(g.Agent, g.Session))
		s.apply(g)
	}
	s.apply(h)
	due := s.lines-s.checked >= 1024 && s.compactDue()
	if s.lines-s.checked >= 1024 {
		s.checked = s.lines
	}
	s.mu.Unlock()
	if due {
		s.compactNow()
	}
	return nil
}

// compactNow stops appends, rewrites the file from memory and reopens it.
// A failure is logged; the old file stays valid either way.
func (s *Sessions) compactNow() {
	s.jmu.Lock()
	defer s.jmu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.compactDue() {
		return
	}
	s.j.Close()
	if err := s.compact(); err != nil {
		s.log.Error("session history compaction failed", "err", err)
	}
	j, err := openJournal(s.path, journalOptions{})
	if err != nil {
		// Keep a closed journal: appends then fail and the calls that
		// need them fail safe.
		s.log.Error("failed to reopen session history", "err", err)
		return
	}
	s.j = j
}

// Close closes the history file.
func (s *Sessions) Close() error {
	s.jmu.Lock()
	defer s.jmu.Unlock()
	if s.j == nil {
		return nil
	}
	return s.j.Close()
}

// compactDue reports whether the file holds many more lines than the
// state they describe. s.mu must be held.
func (s *Sessions) compactDue() bool {
	live := len(s.gone)
	for _, st := range s.m {
		live += 1 + len(st.tools)
	}
	return s.lines > compactFactor*live+1024
}

// compact rewrites the history file from memory when it holds many more
// lines than live state; it runs at open, before the journal starts.
func (s *Sessions) compact() error {
	if !s.compactDue() {
		return nil
	}
	tmp := s.path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("failed to compact session history: %w", err)
	}
	bw := bufio.NewWriter(f)
	enc := json.NewEncoder(bw)
	keys := make([]string, 0, len(s.gone))
	for k := range s.gone {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	lines := 0
	for _, k := range keys {
		agent, id, _ := strings.Cut(k, "\x00")
		enc.Encode(historyLine{Agent: agent, Session: id, Gap: true})
		lines++
	}
	for k, st := range s.m {
		agent, id, _ := strings.Cut(k, "\x00")
		labels := make([]string, 0, len(st.called))
		for l := range st.called {
			labels = append(labels, l)
		}
		sort.Strings(labels)
		enc.Encode(historyLine{Agent: agent, Session: id, Labels: labels, Time: st.last})
		lines++
		for _, t := range st.tools {
			enc.Encode(historyLine{Agent: agent, Session: id, Tool: t, Time: st.last})
			lines++
		}
	}
	err = bw.Flush()
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, s.path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("failed to compact session history: %w", err)
	}
	s.lines, s.checked = lines, lines
	clear(s.pending) // every gap is in the new file
	return syncDir(filepath.Dir(s.path))
}

// AppendGap records, without a running daemon, that a session's history
// has a gap: the shim calls it when it handled a post-tool event itself.
// It appends one line to the history file in stateDir.
func AppendGap(stateDir, agent, id string) error {
	if stateDir == "" || id == "" {
		return nil
	}
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return fmt.Errorf("failed to create state directory: %w", err)
	}
	b, err := json.Marshal(historyLine{Agent: agent, Session: id, Gap: true, Time: time.Now().UTC()})
	if err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(stateDir, sessionsName), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("failed to open session history: %w", err)
	}
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// forget drops a session's history from memory and remembers it as
// incomplete, for when its history could not be written. The gap is
// written to disk with the next history that can be.
func (s *Sessions) forget(agent, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := sessionKey(agent, id)
	delete(s.m, k)
	s.markGone(k)
	if len(s.pending) < maxGone {
		s.pending[k] = true
	}
}
