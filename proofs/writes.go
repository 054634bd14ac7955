package proofs

import (
	"fmt"
	"path/filepath"
	"slices"

	"github.com/narrowd/narrowd/parse"
	"github.com/narrowd/narrowd/rules"
)

// narrowdPrograms are the names narrowd's binaries are installed under.
var narrowdPrograms = []string{"narrowd", "narrowd-hook", "narrowd-exec"}

// writeRaises adds the evidence that keeps a write to the inside path w
// from counting as one ordinary file: a dot segment or table entry in
// the path as written (proven), or in the path a symlink on disk now
// leads to (point in time).
func writeRaises(c *claims, ps Paths, w Where, name string, deleting bool) {
	if w.Abs == w.Root {
		// The working directory itself (split, tar -x, patch): the
		// names created under it are not seen here, and [WriteTargets]
		// refuses to hold a snapshot of them.
		return
	}
	if why := ps.NotOrdinary(w, deleting); why != "" {
		c.add(rules.KindStandingConfig, rules.Proven, name, why+"; a change there is standing configuration (§3.2), not one ordinary file", raise(rules.Scope))
		return
	}
	linked, ok := ps.linkedPath(w.Root, w.Abs)
	if !ok || linked == w.Abs {
		return
	}
	if lw := ps.Resolve("/", linked); lw.Inside {
		if why := ps.NotOrdinary(lw, deleting); why != "" {
			c.add(rules.KindStandingConfig, rules.PointInTime, name, "a symlink leads it to "+lw.Abs+": "+why, raise(rules.Scope))
		}
	}
}

// ownWrite adds narrowd-own-file when a word the call changes names one
// of narrowd's own files, and reports whether it did.
func ownWrite(c *claims, ps Paths, cwd, name, what string) bool {
	o := ps.ownFileLinked(cwd, name)
	if o == "" {
		return false
	}
	c.add(rules.KindOwnFile, rules.Proven, name, fmt.Sprintf("%s names narrowd's own file %s; no agent call may %s it", name, o, what), raise(rules.Scope))
	return true
}

// ownRead adds a guess for a read of narrowd's own state (its audit
// log, sessions, snapshots, profiles): a person should see it.
func ownRead(c *claims, ps Paths, cwd, name string) {
	if o := ps.OwnFile(cwd, name); o != "" {
		c.add(rules.KindSensitiveName, rules.Guess, name, "reads narrowd's own file "+o+" (its audit log, grants, state or configuration)", raise(rules.Scope))
	}
}

// linksOrCopies are programs whose read operands reappear under a new
// name: a link to standing configuration is a later way to write it, and
// a copy puts it where another tool loads it.
var linksOrCopies = []string{"ln", "link", "cp", "mv", "install"}

// shellOwnFiles adds the evidence about narrowd itself for every program
// of a shell command, proven or not: writes to its own files, reads of
// them, and its administrative commands.
func shellOwnFiles(c *claims, a *parse.Analysis, cwd string, ps Paths) {
	for _, p := range a.Programs {
		if len(p.Argv) > 0 && (slices.Contains(narrowdPrograms, filepath.Base(p.Name)) || ps.OwnFile(cwd, p.Argv[0].Value) != "") && !p.Known {
			c.add(rules.KindAdmin, rules.Proven, argvText(p), "runs narrowd's own command "+argvText(p)+", which changes what narrowd allows; only a person may run it", raise(rules.Scope))
		}
		if len(ps.Own) == 0 {
			continue
		}
		reader := p.Known && !p.RunsCode && !slices.Contains(linksOrCopies, p.Name)
		for _, pa := range p.Paths {
			if pa.Access == parse.Read && reader {
				ownRead(c, ps, cwd, pa.Word.Value)
				continue
			}
			ownWrite(c, ps, cwd, pa.Word.Value, "change")
		}
		if p.Known && !p.RunsCode {
			continue
		}
		// A program narrowd cannot read may write any file its words
		// name, in any form.
		for _, w := range p.Argv[min(1, len(p.Argv)):] {
			if o := ps.OwnFile(cwd, w.Value); o != "" || ps.ownInText(w.Value) != "" {
				if o == "" {
					o = ps.ownInText(w.Value)
				}
				c.add(rules.KindOwnFile, rules.Proven, w.Value, "an argument of "+p.Name+", which narrowd cannot read, names narrowd's own file "+o+"; no agent call may change it", raise(rules.Scope))
				break
			}
		}
	}
}
