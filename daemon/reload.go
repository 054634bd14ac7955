package daemon

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// reloadDelay lets an editor finish writing (write, rename, chmod) before
// the engine is rebuilt.
const reloadDelay = 150 * time.Millisecond

// watchedFiles returns the files whose change rebuilds the engine: the
// profile when it names a file rather than a built-in profile, the label
// files, and Config.Watch.
func (s *Server) watchedFiles() []string {
	var files []string
	if p := s.cfg.Engine.Profile; p != "" && (strings.ContainsRune(p, os.PathSeparator) || strings.HasSuffix(p, ".toml")) {
		files = append(files, p)
	}
	files = append(files, s.cfg.Engine.LabelFiles...)
	files = append(files, s.cfg.Watch...)
	for i, f := range files {
		if abs, err := filepath.Abs(f); err == nil {
			files[i] = abs
		}
	}
	return files
}

// watch rebuilds the engine whenever a watched file changes, until ctx is
// done. It watches directories, not files, so editors that replace a file
// by renaming keep being seen; and it follows symlinks: the directory of
// every symlink on the way to each file (a swapped directory link, as in
// a Kubernetes ConfigMap's ..data) and of the file the links end at (an
// edit of a home-manager profile's target) are watched too. After each
// change the set is worked out again, since the links may now point
// elsewhere.
func (s *Server) watch(ctx context.Context) {
	files := s.watchedFiles()
	if len(files) == 0 {
		return
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		s.log.Error("cannot watch the profile; changes need a restart", "err", err)
		return
	}
	defer w.Close()
	var want map[string]bool
	watching := map[string]bool{}
	rewatch := func() {
		var dirs map[string]bool
		want, dirs = watchSet(files)
		for d := range watching {
			if !dirs[d] {
				w.Remove(d)
				delete(watching, d)
			}
		}
		for d := range dirs {
			if watching[d] {
				continue
			}
			if err := w.Add(d); err != nil {
				s.log.Error("cannot watch a directory; changes to its files need a restart", "dir", d, "err", err)
				continue
			}
			watching[d] = true
		}
	}
	rewatch()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			if want[filepath.Clean(ev.Name)] && !ev.Has(fsnotify.Chmod) {
				timer.Reset(reloadDelay)
			}
		case err, ok := <-w.Errors:
			if !ok {
				return
			}
			s.log.Error("file watch error", "err", err)
		case <-timer.C:
			rewatch()
			s.Reload()
		}
	}
}

// maxLinks bounds the symlinks followed on the way to one watched file,
// as the kernel's 40.
const maxLinks = 40

// watchSet returns the names whose change means a watched file may have
// changed, and the directories to watch for them: each file as named,
// every symlink met while resolving it, component by component, and
// the file it resolves to.
func watchSet(files []string) (want, dirs map[string]bool) {
	want, dirs = map[string]bool{}, map[string]bool{}
	add := func(p string) {
		want[p] = true
		dirs[filepath.Dir(p)] = true
	}
	for _, f := range files {
		add(f)
		links := 0
		// done is the resolved prefix, rest what is left to resolve.
		done, rest := "/", strings.TrimPrefix(filepath.Clean(f), "/")
		for rest != "" && links <= maxLinks {
			name, tail, _ := strings.Cut(rest, "/")
			p := filepath.Join(done, name)
			fi, err := os.Lstat(p)
			if err != nil || fi.Mode()&os.ModeSymlink == 0 {
				done, rest = p, tail
				continue
			}
			add(p)
			target, err := os.Readlink(p)
			if err != nil {
				break
			}
			links++
			if !filepath.IsAbs(target) {
				target = filepath.Join(done, target)
			}
			done, rest = "/", strings.TrimPrefix(filepath.Join(filepath.Clean(target), tail), "/")
		}
		if resolved := filepath.Join(done, rest); resolved != f {
			add(resolved)
		}
	}
	return want, dirs
}

// Reload rebuilds the engine from the configuration and swaps it in
// atomically. Calls in flight finish on the engine they started with. A
// failed build keeps the last good engine, is logged (the error names the
// file and line) and counted as profile_reloads_total{result="error"}.
func (s *Server) Reload() error {
	e, err := NewEngine(s.cfg.Engine)
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	if err != nil {
		s.metrics.reloads.WithLabelValues("error").Inc()
		s.lastReloadErr = err.Error()
		s.log.Error("profile reload failed; keeping the last good profile", "err", err)
		return err
	}
	s.engine.Store(e)
	s.metrics.reloads.WithLabelValues("ok").Inc()
	s.lastReloadErr = ""
	s.log.Info("profile reloaded", "profile", s.cfg.Engine.Profile)
	return nil
}
