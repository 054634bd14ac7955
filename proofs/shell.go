package proofs

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/narrowd/narrowd/parse"
	"github.com/narrowd/narrowd/rules"
)

// Shell gathers the evidence for one shell command from its analysis.
// Only a command whose every part is proven gets label bounds; anything
// else is recorded and keeps the ceiling.
func Shell(a *parse.Analysis, cwd string, ps Paths) []rules.Evidence {
	var c claims
	if a.Err != nil {
		if errors.Is(a.Err, parse.ErrBudget) {
			c.add(rules.KindOverBudget, rules.Proven, "command", "narrowd did not analyse the command: "+a.Err.Error(), effectNone)
			return c.ev
		}
		c.add(rules.KindParseError, rules.Proven, "command", "narrowd could not parse the command: "+a.Err.Error(), effectNone)
		return c.ev
	}
	for _, u := range a.Unproven {
		c.add(rules.KindUnproven, rules.Proven, u.Why, fmt.Sprintf("at %s: %s is only known at run time", u.Pos, u.Why), effectNone)
	}
	proven := len(a.Unproven) == 0
	shellOwnFiles(&c, a, cwd, ps)
	walkBudget := walkMaxEntries
	for _, p := range a.Programs {
		for _, pa := range p.Paths {
			if v := pa.Word.Value; strings.HasPrefix(v, "/dev/tcp/") || strings.HasPrefix(v, "/dev/udp/") {
				// bash opens a connection to any host: the call
				// keeps its ceiling.
				c.add(rules.KindNetworkRedirect, rules.Proven, v, "bash connects to the network for /dev/tcp and /dev/udp", effectNone)
				proven = false
			}
		}
		if p.Known && !followedTrees(&c, p, cwd, ps, &walkBudget) {
			proven = false
		}
		switch {
		case !p.Known:
			c.add(rules.KindUnknownCommand, rules.Proven, argvText(p), "not in the command knowledge table: "+p.Why, effectNone)
			proven = false
		case p.Privileged:
			c.add(rules.KindPrivileged, rules.Proven, argvText(p), "runs with raised privileges via "+strings.Join(p.Wrappers, " "), effectNone)
			proven = false
		case p.RunsCode:
			c.add(rules.KindRunsCode, rules.Proven, argvText(p), p.Rule+" executes code narrowd did not read (build, test or script runner)", effectNone)
			proven = false
		}
	}
	if !proven {
		// The call keeps its ceiling; naming a secret it reaches
		// through ~ or $HOME still tells the person and the agent why.
		homeSecrets(&c, a, ps)
		besideCode(&c, a, cwd, ps)
		return c.ev
	}
	if len(a.Programs) == 0 {
		c.add(rules.KindNoProgram, rules.Proven, "command", "the text runs no program", effectNone)
	}

	var joined rules.Labels
	var why [rules.NumDims]string
	joined.Levels[rules.ReturnsClass] = rules.ReturnsClass.Max()
	anyDelete := false
	for i, p := range a.Programs {
		part, partWhy, del := programLabels(&c, p, cwd, ps)
		anyDelete = anyDelete || del
		// Concatenation, not fmt: the same text ("riskiest part %q:
		// %s"), built for every label of every part of every call.
		riskiest := ""
		for _, d := range rules.Dims() {
			if i == 0 || part.Get(d) > joined.Get(d) {
				if riskiest == "" {
					riskiest = "riskiest part " + strconv.Quote(argvText(p)) + ": "
				}
				why[d] = riskiest + partWhy[d]
			}
			joined.Levels[d] = max(joined.Levels[d], part.Get(d))
		}
	}
	if len(a.Programs) == 0 {
		for d := range rules.Dim(rules.NumDims) {
			why[d] = "the text runs no program"
		}
	}
	why[rules.ReturnsClass] = "shell output carries file contents and names anyone could have written (§3.6)"
	raiseOnDisk(&c, a, cwd, ps)
	for _, p := range a.Programs {
		for _, w := range p.Argv[min(1, len(p.Argv)):] {
			if secretWord(w.Value) {
				c.add(rules.KindSensitiveWord, rules.Guess, w.Value, "the argument names secrets (token, password, key, credential)", raise(rules.Scope))
				break
			}
			if pat := sensitiveInWord(ps, cwd, w.Value); pat != "" {
				// HEAD:.env, --output=id_rsa, -- .env: a name inside
				// an argument that is not itself a path argument.
				c.add(rules.KindSensitiveName, rules.Guess, w.Value, "names a path matching sensitive pattern "+pat, raise(rules.Scope))
				break
			}
		}
	}
	facts := []rules.Fact{rules.OpenWorld, rules.ConfigurationObject}
	if !anyDelete {
		facts = append(facts, rules.PureDeletion)
	}
	c.bounds(joined, why, facts)
	return c.ev
}

// programLabels returns the proven labels of one known program and
// whether it purely deletes something.
func programLabels(c *claims, p parse.Program, cwd string, ps Paths) (rules.Labels, [rules.NumDims]string, bool) {
	var l rules.Labels
	var why [rules.NumDims]string
	l.Levels[rules.ReturnsClass] = rules.ReturnsClass.Max()
	mut, err := rules.Mutation.Parse(p.Mutation)
	if err != nil {
		mut = rules.Mutation.Max()
	}
	l.Levels[rules.Mutation] = mut
	why[rules.Mutation] = p.Mutation + " (table rule " + p.Rule + ")"
	c.add(rules.KindKnownCommand, rules.Proven, argvText(p), "table rule "+strconv.Quote(p.Rule)+": "+describe(p), effectNone)

	pureDelete := false
	overwritten := false
	outside := false
	targets := 0
	recursive := false
	for _, pa := range p.Paths {
		name := pa.Word.Value
		// /dev/tcp and /dev/udp never get here: Shell keeps the ceiling
		// for them before any program is labelled.
		if pa.Word.Literal && parse.HarmlessDevice(name) {
			c.add(rules.KindHarmlessDevice, rules.Proven, name, "a standard stream or the null device", effectNone)
			continue
		}
		m := accessMutation(pa.Access)
		if m > l.Levels[rules.Mutation] {
			l.Levels[rules.Mutation] = m
			why[rules.Mutation] = fmt.Sprintf("%s of %s", pa.Access, name)
		}
		switch pa.Access {
		case parse.Delete:
			pureDelete = true
		case parse.Overwrite:
			overwritten = true
		}
		if pa.Word.Literal && name == parse.EnvironPath && pa.Access == parse.Read {
			// env, printenv, export -p, declare -p, set: the
			// environment and the shell's variables hold tokens
			// like a secret file does.
			c.add(rules.KindSensitiveName, rules.Guess, name, "prints the environment or shell variables, which hold secrets", raise(rules.Scope))
		}
		w := ps.Resolve(cwd, name)
		if pa.Word.Glob && globClimbs(name) {
			w = Where{Why: "a segment of the pattern matches .. (it can list the parent directory)"}
		}
		if !w.Inside {
			outside = true
			c.add(rules.KindPathOutside, rules.Proven, name, w.Why, effectNone)
			continue
		}
		targets++
		recursive = recursive || pa.Recursive || pa.Word.Glob
		c.add(rules.KindPathInside, rules.Proven, name, w.Abs+" stays under workspace "+w.Root, effectNone)
		pathRaises(c, ps, w, name)
		switch {
		case pa.Access != parse.Read && pa.Access != parse.Exec:
			writeRaises(c, ps, w, name, pa.Access == parse.Delete)
		case pa.Access == parse.Read && slices.Contains(linksOrCopies, p.Name) && w.Abs != w.Root:
			if why := ps.NotOrdinary(w, false); why != "" {
				c.add(rules.KindStandingConfig, rules.Proven, name, why+"; "+p.Name+" puts it under a new name, a later way to change it or a place another tool loads it from", raise(rules.Scope))
			}
		}
		rawRaises(c, ps, cwd, name)
		if pa.Word.Glob {
			globRaises(c, ps, w, name)
		}
	}
	// Patterns in other argument slots expand to workspace paths too;
	// they must stay inside like path arguments.
	for _, word := range p.Argv[min(1, len(p.Argv)):] {
		if !word.Glob || slices.ContainsFunc(p.Paths, func(pa parse.PathArg) bool { return pa.Word == word }) {
			continue
		}
		w := ps.Resolve(cwd, word.Value)
		if globClimbs(word.Value) {
			w = Where{Why: "a segment of the pattern matches .. (it can list the parent directory)"}
		}
		if !w.Inside {
			outside = true
			c.add(rules.KindPathOutside, rules.Proven, word.Value, "pattern "+w.Why, effectNone)
			continue
		}
		recursive = true
		c.add(rules.KindGlobInside, rules.Proven, word.Value, fmt.Sprintf("every expansion of %s stays under workspace %s and none can be an option", w.Abs, w.Root), effectNone)
		globRaises(c, ps, w, word.Value)
	}

	// A delete the table states that no overwrite explains removes state
	// and puts nothing in its place (git branch -D, git stash drop): a
	// pure deletion (§4.4; P4 when in doubt).
	if mut == rules.Mutation.Max() && !overwritten {
		pureDelete = true
	}

	// Scope: how much one call can reach (§3.2, §4.3).
	switch {
	case p.Global:
		l.Levels[rules.Scope] = rules.Scope.Max()
		why[rules.Scope] = "touches state outside its path arguments (configuration, services, the cluster)"
	case outside:
		l.Levels[rules.Scope] = rules.Scope.Max()
		why[rules.Scope] = "a path is not proven inside the workspace"
	case recursive || targets > 1:
		l.Levels[rules.Scope] = 1
		why[rules.Scope] = "several paths or a recursive walk, all inside the workspace"
	case targets == 1:
		why[rules.Scope] = "one path inside the workspace"
	default:
		if w := ps.Resolve(cwd, "."); !w.Inside {
			l.Levels[rules.Scope] = rules.Scope.Max()
			why[rules.Scope] = "no path argument, and the working directory is not inside the workspace"
		} else {
			why[rules.Scope] = "no path argument; it works in the workspace directory"
		}
	}

	// Egress (§3.4).
	switch p.Net {
	case parse.Internet:
		l.Levels[rules.Egress] = rules.Egress.Max()
		why[rules.Egress] = "reaches the network"
	case parse.LocalNet:
		l.Levels[rules.Egress] = max(l.Levels[rules.Egress], 1)
		why[rules.Egress] = "reaches local services only"
	default:
		if why[rules.Egress] == "" {
			c.add(rules.KindNoNetwork, rules.Proven, argvText(p), "the table says it opens no network connection", effectNone)
			why[rules.Egress] = "opens no network connection"
		}
	}

	// Reversibility (§3.3): overwrite and delete destroy, update needs
	// work to undo, create and read are undone by their inverse.
	rev := rules.Level(0)
	switch mm := l.Levels[rules.Mutation]; {
	case mm >= 3:
		rev = 2
	case mm == 2:
		rev = 1
	}
	if p.Irreversible || (l.Levels[rules.Egress] == rules.Egress.Max() && l.Levels[rules.Mutation] > 0) {
		rev = 2
	}
	if rev > l.Levels[rules.Reversibility] {
		l.Levels[rules.Reversibility] = rev
		why[rules.Reversibility] = "follows from what it changes (§3.3)"
	}
	if why[rules.Reversibility] == "" {
		why[rules.Reversibility] = "changes nothing that needs undoing"
	}

	fin, err := rules.Financial.Parse(p.Financial)
	if p.Financial == "" {
		fin, err = 0, nil
	}
	if err != nil {
		fin = rules.Financial.Max()
	}
	l.Levels[rules.Financial] = fin
	why[rules.Financial] = "financial " + rules.Financial.Name(fin) + " per the table"

	return l, why, pureDelete
}

// globMatchLimit bounds how many matches of one pattern narrowd reads.
const globMatchLimit = 2000

// globRaises expands a pattern on disk now, when narrowd may read the
// disk, and raises on any match that is sensitive or leaves the
// workspace. Go's matching also matches dotfiles, which bash does not:
// it errs toward raising.
func globRaises(c *claims, ps Paths, w Where, name string) {
	if sample := ps.globMaySensitive(name); sample != "" {
		c.add(rules.KindSensitiveName, rules.Guess, name, "the pattern can match "+sample+", a sensitive name", raise(rules.Scope))
	}
	if ps.Disk == nil {
		return
	}
	matches, err := filepath.Glob(w.Abs)
	if err != nil {
		c.add(rules.KindGlobUnreadable, rules.PointInTime, name, "the pattern cannot be expanded: "+err.Error(), raise(rules.Scope))
		return
	}
	if len(matches) > globMatchLimit {
		c.add(rules.KindGlobTooMany, rules.PointInTime, name, fmt.Sprintf("the pattern matches more than %d paths", globMatchLimit), raise(rules.Scope))
		return
	}
	for _, m := range matches {
		mw := ps.Resolve("/", m)
		if !mw.Inside {
			c.add(rules.KindLinkEscape, rules.PointInTime, m, "a match of "+name+" is outside the workspace", raise(rules.Scope))
			return
		}
		if pat := ps.SensitiveMatch(mw.Abs); pat != "" {
			c.add(rules.KindSensitiveName, rules.Guess, m, "a match of "+name+" matches sensitive pattern "+pat, raise(rules.Scope))
			return
		}
		if esc := ps.Escape(mw); esc != "" {
			c.add(rules.KindLinkEscape, rules.PointInTime, m, esc, raise(rules.Scope))
			return
		}
	}
}

// pathRaises adds the guess and point-in-time evidence for one inside
// path: a sensitive name, or a link that leaves the workspace.
func pathRaises(c *claims, ps Paths, w Where, name string) {
	if pat := ps.SensitiveMatch(w.Abs); pat != "" {
		c.add(rules.KindSensitiveName, rules.Guess, name, "matches sensitive pattern "+pat, raise(rules.Scope))
	}
	if esc := ps.Escape(w); esc != "" {
		c.add(rules.KindLinkEscape, rules.PointInTime, name, esc, raise(rules.Scope))
	}
}

func accessMutation(a parse.Access) rules.Level {
	switch a {
	case parse.Read:
		return 0
	case parse.Create:
		return 1
	case parse.Update:
		return 2
	default:
		return 3
	}
}

func describe(p parse.Program) string {
	var parts []string
	parts = append(parts, p.Mutation)
	if len(p.Wrappers) > 0 {
		parts = append(parts, "via "+strings.Join(p.Wrappers, ", "))
	}
	switch p.Net {
	case parse.Internet:
		parts = append(parts, "network")
	case parse.LocalNet:
		parts = append(parts, "local network")
	}
	if p.Global {
		parts = append(parts, "global state")
	}
	return strings.Join(parts, ", ")
}

func argvText(p parse.Program) string {
	var b strings.Builder
	for i, w := range p.Argv {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(w.Value)
		if b.Len() > 200 {
			b.WriteString("…")
			break
		}
	}
	if b.Len() == 0 {
		return p.Name
	}
	return b.String()
}

// raiseOnDisk adds what narrowd reads on disk now about the programs: the
// state of the repository each git program runs in (gitrepo.go).
func raiseOnDisk(c *claims, a *parse.Analysis, cwd string, ps Paths) {
	// Without a disk (lexical tests only) it only checks where git runs.
	gitRepoEvidence(c, a, cwd, ps)
}

// homeSecrets adds a guess for each argument that names a sensitive path
// under the home directory (~/.ssh/id_rsa, $HOME/.aws/credentials). Such
// a word is unproven, so the call is already at its ceiling; the guess
// only raises, and names the secret in the reason.
func homeSecrets(c *claims, a *parse.Analysis, ps Paths) {
	for _, p := range a.Programs {
		for _, w := range p.Argv[min(1, len(p.Argv)):] {
			tail, ok := homeTail(w.Value)
			if !ok {
				continue
			}
			if pat := ps.SensitiveMatch("/" + tail); pat != "" {
				c.add(rules.KindSensitiveName, rules.Guess, w.Value, "names a path under the home directory matching sensitive pattern "+pat, raise(rules.Scope))
				return
			}
		}
	}
}

// besideCode judges the other parts of a command that runs repository
// code (make && rm -rf src): the call keeps its ceiling either way, but a
// part that would be asked about on its own (a pure deletion, a path
// outside the workspace or with a sensitive name, a link that leaves it,
// the network, spending) is named as beside-code evidence, so a profile
// that sends builds to a sandbox can tell a plain build from one that also
// deletes or reaches out.
func besideCode(c *claims, a *parse.Analysis, cwd string, ps Paths) {
	if !slices.ContainsFunc(a.Programs, func(p parse.Program) bool { return p.RunsCode }) {
		return
	}
	for _, p := range a.Programs {
		if !p.Known || p.RunsCode || p.Privileged {
			continue
		}
		var part claims
		l, _, del := programLabels(&part, p, cwd, ps)
		why := ""
		switch {
		case del:
			why = "it deletes"
		case l.Get(rules.Scope) == rules.Scope.Max():
			why = "it reaches outside the workspace"
		case l.Get(rules.Egress) > 0:
			why = "it reaches the network"
		case l.Get(rules.Financial) > 0:
			why = "it can spend"
		}
		for _, e := range part.ev {
			if _, raised := e.Effect.Raised(); why == "" && raised {
				why = string(e.Kind) + " " + e.Subject
			}
		}
		if why != "" {
			c.add(rules.KindBesideCode, rules.Proven, argvText(p), "runs beside the repository's code and would be asked about on its own: "+why, effectNone)
		}
	}
}

// homeTail returns the part of word after a leading ~/, $HOME/ or
// ${HOME}/.
func homeTail(word string) (string, bool) {
	for _, prefix := range []string{"~/", "$HOME/", "${HOME}/", `"$HOME"/`, `"${HOME}"/`} {
		if tail, ok := strings.CutPrefix(word, prefix); ok && tail != "" {
			return tail, true
		}
	}
	return "", false
}

// secretWord reports an argument that names secrets: searching for them
// is a guess that raises, never a proof.
func secretWord(s string) bool {
	l := strings.ToLower(s)
	for _, w := range []string{"secret", "passw", "api_key", "apikey", "api-key", "private_key", "private-key", "credential", "access_key", "aws_access", "_token", "token_", "$env", "auth_token", "bearer"} {
		if strings.Contains(l, w) {
			return true
		}
	}
	for f := range strings.FieldsFuncSeq(l, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9') }) {
		if f == "token" || f == "tokens" {
			return true
		}
	}
	return false
}

// sensitiveInWord checks the pieces of one argument around ':' and '='
// against the sensitive patterns, for names that are not path arguments
// (git show HEAD:.env).
func sensitiveInWord(ps Paths, cwd, word string) string {
	for piece := range strings.FieldsFuncSeq(word, func(r rune) bool { return r == ':' || r == '=' }) {
		if piece == "" || strings.HasPrefix(piece, "-") {
			continue
		}
		if w := ps.Resolve(cwd, piece); w.Abs != "" {
			if pat := ps.SensitiveMatch(w.Abs); pat != "" {
				return pat
			}
		}
	}
	return ""
}

// globClimbs reports a pattern with a segment that matches "." or "..":
// bash before 5.2 lets .* match both, so ls .* lists the parent. A
// segment that does not begin with a literal '.' never matches them,
// dotglob or not: bash's glob (skipname in lib/glob/glob.c) skips "."
// and ".." unless the segment's pattern starts with '.' (or "\."), so
// */ and src/**/*.ts cannot climb.
func globClimbs(pattern string) bool {
	for _, seg := range strings.Split(pattern, "/") {
		if !strings.ContainsAny(seg, "*?[") || !strings.HasPrefix(seg, ".") {
			continue
		}
		if ok, _ := path.Match(seg, ".."); ok {
			return true
		}
		if ok, _ := path.Match(seg, "."); ok {
			return true
		}
	}
	return false
}
