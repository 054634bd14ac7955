package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Discovery keeps a [Registry] current: one round reads every agent's
// configuration and lists every server; rounds run at start, after a
// configuration file changes, and on a schedule.
type Discovery struct {
	Locations Locations
	Lister    *Lister
	Registry  *Registry
	// Interval between scheduled rounds; 0 means 10 minutes.
	Interval time.Duration
	// Parallel is how many servers are listed at once; 0 means 2.
	Parallel int
	// MaxServers bounds the distinct servers listed in one round; 0
	// means 64. The rest fail, and their tools stay unlabelled.
	MaxServers int
	// Logger receives problems; nil discards them.
	Logger *slog.Logger
	// OnDrift is called with each round's drifts, if any.
	OnDrift func([]Drift)
	// Now returns the time; nil means time.Now.
	Now func() time.Time

	mu      sync.Mutex
	noticed map[string]bool // project directories calls came from
	dirs    map[string]bool // call directories already looked at
	wake    chan struct{}
}

// maxNoticed bounds the projects discovery learns from calls.
const maxNoticed = 256

// Resolve is [Registry.Resolve], and it notices the project a call came
// from: a call that names no tool discovery knows, from a directory whose
// project it has not read, has that project's configuration read in a
// round soon after. The call itself stays unlabelled.
func (d *Discovery) Resolve(agent, name, dir string) (key, defHash string, ok bool) {
	key, defHash, ok = d.Registry.Resolve(agent, name, dir)
	if key == "" && looksMCP(agent, name) {
		d.notice(dir)
	}
	return key, defHash, ok
}

// looksMCP reports whether name has the shape of agent's MCP tool names;
// only such calls make discovery read a project, so built-in tools cost
// nothing here.
func looksMCP(agent, name string) bool {
	switch agent {
	case "claude", "codex":
		return strings.HasPrefix(name, "mcp__")
	case "gemini":
		return strings.HasPrefix(name, "mcp_")
	case "cursor":
		return strings.HasPrefix(name, "MCP:")
	case "copilot":
		return strings.Contains(name, "-")
	}
	return false
}

// notice records the project of dir: the nearest directory above it that
// holds .git, else dir itself.
func (d *Discovery) notice(dir string) {
	if dir == "" || !filepath.IsAbs(dir) {
		return
	}
	dir = filepath.Clean(dir)
	d.mu.Lock()
	if d.dirs == nil {
		d.dirs = map[string]bool{}
	}
	if d.dirs[dir] || len(d.dirs) >= 4*maxNoticed {
		d.mu.Unlock()
		return
	}
	d.dirs[dir] = true
	d.mu.Unlock()
	root := dir
	for p, i := dir, 0; i < 64; p, i = filepath.Dir(p), i+1 {
		if _, err := os.Lstat(filepath.Join(p, ".git")); err == nil {
			root = p
			break
		}
		if p == filepath.Dir(p) {
			break
		}
	}
	d.mu.Lock()
	if d.noticed == nil {
		d.noticed = map[string]bool{}
	}
	if d.noticed[root] || len(d.noticed) >= maxNoticed || slices.Contains(d.Locations.Projects, root) {
		d.mu.Unlock()
		return
	}
	d.noticed[root] = true
	if d.wake == nil {
		d.wake = make(chan struct{}, 1)
	}
	wake := d.wake
	d.mu.Unlock()
	select {
	case wake <- struct{}{}:
	default:
	}
}

// locations are the configured locations plus the noticed projects.
func (d *Discovery) locations() Locations {
	loc := d.Locations
	d.mu.Lock()
	defer d.mu.Unlock()
	loc.Projects = slices.Clone(loc.Projects)
	for p := range d.noticed {
		loc.Projects = append(loc.Projects, p)
	}
	slices.Sort(loc.Projects[len(d.Locations.Projects):])
	return loc
}

func (d *Discovery) wakeup() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.wake == nil {
		d.wake = make(chan struct{}, 1)
	}
	return d.wake
}

// configDelay lets an editor finish writing a configuration file.
const configDelay = 300 * time.Millisecond

func (d *Discovery) now() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}

func (d *Discovery) log() *slog.Logger {
	if d.Logger != nil {
		return d.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// Round reads the configurations, lists every server (each distinct
// program or URL once, however many agents configure it), updates the
// registry and returns the files it read, for a watcher.
func (d *Discovery) Round(ctx context.Context) []string {
	servers, files, problems := Locate(d.locations())
	for _, p := range problems {
		d.log().Warn("mcp configuration", "err", p)
	}
	type res struct {
		tools []Tool
		err   error
	}
	unique := map[string]*res{}
	var order []Server
	for _, s := range servers {
		if s.RepoRemote() {
			continue
		}
		if _, ok := unique[s.launchKey()]; !ok {
			unique[s.launchKey()] = nil
			order = append(order, s)
		}
	}
	maxServers := d.MaxServers
	if maxServers <= 0 {
		maxServers = 64
	}
	for _, s := range order[min(len(order), maxServers):] {
		unique[s.launchKey()] = &res{err: fmt.Errorf("more than %d MCP servers configured; not listed", maxServers)}
	}
	order = order[:min(len(order), maxServers)]
	par := d.Parallel
	if par <= 0 {
		par = 2
	}
	sem := make(chan struct{}, par)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, s := range order {
		wg.Go(func() {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				mu.Lock()
				unique[s.launchKey()] = &res{err: ctx.Err()}
				mu.Unlock()
				return
			}
			defer func() { <-sem }()
			tools, err := d.Lister.List(ctx, s)
			mu.Lock()
			unique[s.launchKey()] = &res{tools, err}
			mu.Unlock()
		})
	}
	wg.Wait()
	now := d.now()
	ls := make([]Listing, 0, len(servers))
	for _, s := range servers {
		r := unique[s.launchKey()]
		if s.RepoRemote() {
			r = &res{err: ErrRepoRemote}
		}
		l := Listing{Server: s, At: now}
		if r.err != nil {
			l.Err = r.err.Error()
			d.log().Warn("mcp server not listed; its tools stay unlabelled", "agent", s.Agent, "server", s.Name, "err", r.err)
		} else {
			// Each configuration names its own namespace. The
			// definitions are dropped: the registry needs only hashes,
			// and a large listing must not stay in memory.
			for _, t := range r.tools {
				t.Key, t.Definition = s.Name+"/"+t.Name, nil
				l.Tools = append(l.Tools, t)
			}
		}
		ls = append(ls, l)
	}
	if drifts := d.Registry.Update(ls, now); len(drifts) > 0 {
		for _, dr := range drifts {
			d.log().Warn("mcp tool definition changed; its labels no longer apply", "key", dr.Key, "old", dr.OldHash, "new", dr.NewHash)
		}
		if d.OnDrift != nil {
			d.OnDrift(drifts)
		}
	}
	return files
}

// RepoRemote reports a remote server named by a repository's own
// configuration: contacting it would have narrowd send requests, and
// whatever headers it names, to any address the repository chooses.
// Discovery does not contact it.
func (s Server) RepoRemote() bool { return s.InRepo && s.Transport != Stdio }

// ErrRepoRemote is the listing error of a [Server.RepoRemote] server.
var ErrRepoRemote = errors.New("a remote server named by the repository's own configuration is not contacted; its tools stay unlabelled")

// Run does a round at once, then one after any configuration file
// changes and one every Interval, until ctx is done.
func (d *Discovery) Run(ctx context.Context) {
	interval := d.Interval
	if interval <= 0 {
		interval = 10 * time.Minute
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		d.log().Error("cannot watch MCP configuration; changes wait for the schedule", "err", err)
	} else {
		defer w.Close()
	}
	watched := map[string]bool{}
	want := map[string]bool{}
	ancestors := map[string]bool{}
	watch := func(files []string) {
		if w == nil {
			return
		}
		for _, f := range files {
			want[filepath.Clean(f)] = true
			for a := filepath.Dir(f); !ancestors[a] && a != filepath.Dir(a); a = filepath.Dir(a) {
				ancestors[a] = true
			}
			// Watch the nearest existing directory, so a file that
			// appears later (a new .mcp.json) is seen.
			for dir := filepath.Dir(f); ; dir = filepath.Dir(dir) {
				if watched[dir] {
					break
				}
				if w.Add(dir) == nil {
					watched[dir] = true
					break
				}
				if dir == filepath.Dir(dir) {
					break
				}
			}
		}
	}
	watch(d.Round(ctx))
	tick := time.NewTicker(interval)
	defer tick.Stop()
	debounce := time.NewTimer(time.Hour)
	debounce.Stop()
	wake := d.wakeup()
	var events <-chan fsnotify.Event
	var errs <-chan error
	if w != nil {
		events, errs = w.Events, w.Errors
	}
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			// A new directory on the way to a config file (.cursor,
			// .github) is watched too.
			if name := filepath.Clean(ev.Name); want[name] || ancestors[name] && ev.Has(fsnotify.Create) {
				debounce.Reset(configDelay)
			}
		case err, ok := <-errs:
			if !ok {
				errs = nil
				continue
			}
			d.log().Warn("mcp configuration watch", "err", err)
		case <-wake:
			debounce.Reset(configDelay)
		case <-debounce.C:
			watch(d.Round(ctx))
		case <-tick.C:
			watch(d.Round(ctx))
		}
	}
}
