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
// done. It watches the files' directories, not the files, so editors that
// replace a file by renaming keep being seen.
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
	want := make(map[string]bool, len(files))
	dirs := make(map[string]bool)
	for _, f := range files {
		want[f] = true
		dirs[filepath.Dir(f)] = true
	}
	for d := range dirs {
		if err := w.Add(d); err != nil {
			s.log.Error("cannot watch a directory; changes to its files need a restart", "dir", d, "err", err)
		}
	}
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
			s.Reload()
		}
	}
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
