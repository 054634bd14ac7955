package proofs

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/narrowd/narrowd/rules"
)

// Tool gathers the evidence for one call of a file or web tool, from the
// arguments its catalog entry names. Shell tools go through [Shell].
func Tool(spec rules.InputSpec, input map[string]any, cwd string, ps Paths) []rules.Evidence {
	var c claims
	switch spec.Kind {
	case rules.InputRead:
		onePath(&c, input, spec.Field, cwd, ps, spec.Kind, "reads one file")
	case rules.InputWrite, rules.InputEdit, rules.InputDelete:
		onePath(&c, input, spec.Field, cwd, ps, spec.Kind, "changes one file")
	case rules.InputGlob, rules.InputGrep, rules.InputList:
		searchRoot(&c, spec, input, cwd, ps)
		if pat := str(input, "pattern"); spec.Kind == rules.InputGrep && secretWord(pat) {
			c.add(rules.KindSensitiveWord, rules.Guess, pat, "the search pattern names secrets (token, password, key, credential)", raise(rules.Scope))
		}
	case rules.InputFetch:
		for _, u := range urls(str(input, spec.Field)) {
			c.add(rules.KindURL, rules.Proven, u, "the call requests this URL; a URL is a way out (§3.4)", effectNone)
		}
	case rules.InputPatch:
		patch(&c, str(input, spec.Field), cwd, ps)
	default:
		c.add(rules.KindNoNarrowing, rules.Proven, spec.Kind, "narrowd reads nothing from this tool's arguments", effectNone)
	}
	return c.ev
}

// onePath narrows scope to one record when the path is proven inside the
// workspace and nothing raises it (spec appendix, files/read_file). A
// write (kind other than InputRead) narrows only when its target is also
// proven ordinary: not standing configuration, not narrowd's own file.
func onePath(c *claims, input map[string]any, field, cwd string, ps Paths, kind, what string) {
	raw, ok := input[field]
	name, isString := raw.(string)
	if !ok || !isString {
		c.add(rules.KindMissingArgument, rules.Proven, field, "the path argument is missing or not a string", effectNone)
		return
	}
	write := kind != rules.InputRead
	if write {
		ownWrite(c, ps, cwd, name, "change")
	} else {
		ownRead(c, ps, cwd, name)
	}
	w := ps.Resolve(cwd, name)
	if !w.Inside {
		c.add(rules.KindPathOutside, rules.Proven, name, w.Why, effectNone)
		return
	}
	c.add(rules.KindPathInside, rules.Proven, name, fmt.Sprintf("%s stays under workspace %s", w.Abs, w.Root), bound(rules.Scope, 0))
	c.add(rules.KindOneTarget, rules.Proven, name, "the call "+what+" named by a proven path; the unconstrained argument no longer reaches the account (§4.3)", factIs(rules.OpenWorld, false))
	pathRaises(c, ps, w, name)
	if write {
		if w.Abs == w.Root {
			c.add(rules.KindStandingConfig, rules.Proven, name, "the workspace root is a directory, not one file", raise(rules.Scope))
		} else {
			writeRaises(c, ps, w, name, kind == rules.InputDelete)
		}
	}
	rawRaises(c, ps, cwd, name)
}

// searchRoot narrows a glob, grep or listing to bulk when its root is
// proven inside and its pattern cannot climb out of it.
func searchRoot(c *claims, spec rules.InputSpec, input map[string]any, cwd string, ps Paths) {
	var roots []string
	field := spec.Dir
	if spec.Kind == rules.InputList {
		field = spec.Field
	}
	switch v := input[field].(type) {
	case nil:
		roots = []string{"."}
	case string:
		if v == "" {
			v = "."
		}
		roots = []string{v}
	case []any:
		for _, x := range v {
			s, ok := x.(string)
			if !ok {
				c.add(rules.KindMissingArgument, rules.Proven, field, "a search root is not a string", effectNone)
				return
			}
			roots = append(roots, s)
		}
		if len(roots) == 0 {
			roots = []string{"."}
		}
	default:
		c.add(rules.KindMissingArgument, rules.Proven, field, "the search root is not a string", effectNone)
		return
	}
	if spec.Kind != rules.InputList {
		if pat, _ := input[spec.Field].(string); pat != "" {
			if filepath.IsAbs(pat) || strings.HasPrefix(pat, "~") || hasDotDot(pat) || !pathClean(pat) {
				c.add(rules.KindPatternEscapes, rules.Proven, pat, "the pattern is absolute or climbs with ..", effectNone)
				return
			}
		}
	}
	if !allInside(c, ps, cwd, roots, "search root ") {
		return
	}
	c.add(rules.KindSearchInside, rules.Proven, strings.Join(roots, " "), "every search root is inside the workspace, so the call reads a set of workspace files (§3.2)", bound(rules.Scope, 1))
	c.add(rules.KindBoundedRoot, rules.Proven, strings.Join(roots, " "), "the search root is proven; the argument no longer reaches the account (§4.3)", factIs(rules.OpenWorld, false))
}

// allInside records one path-inside claim per path, with its raises, and
// reports false at the first path that is not proven inside.
func allInside(c *claims, ps Paths, cwd string, paths []string, what string) bool {
	for _, p := range paths {
		w := ps.Resolve(cwd, p)
		if !w.Inside {
			c.add(rules.KindPathOutside, rules.Proven, p, w.Why, effectNone)
			return false
		}
		c.add(rules.KindPathInside, rules.Proven, p, fmt.Sprintf("%s%s stays under workspace %s", what, w.Abs, w.Root), effectNone)
		pathRaises(c, ps, w, p)
		rawRaises(c, ps, cwd, p)
	}
	return true
}

func hasDotDot(p string) bool {
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." {
			return true
		}
	}
	return false
}

// patch reads the file operations of an apply_patch envelope.
func patch(c *claims, text, cwd string, ps Paths) {
	if !strings.HasPrefix(strings.TrimSpace(text), "*** Begin Patch") {
		c.add(rules.KindPatchUnreadable, rules.Proven, "patch", "not an apply_patch envelope", effectNone)
		return
	}
	var files []string
	var deleted []bool
	adds, updates, deletes := 0, 0, 0
	for _, line := range strings.Split(text, "\n") {
		var name string
		switch {
		case strings.HasPrefix(line, "*** Add File: "):
			name, adds = strings.TrimPrefix(line, "*** Add File: "), adds+1
		case strings.HasPrefix(line, "*** Update File: "):
			name, updates = strings.TrimPrefix(line, "*** Update File: "), updates+1
		case strings.HasPrefix(line, "*** Delete File: "):
			name, deletes = strings.TrimPrefix(line, "*** Delete File: "), deletes+1
		case strings.HasPrefix(line, "*** Move to: "):
			name, updates = strings.TrimPrefix(line, "*** Move to: "), updates+1
		default:
			continue
		}
		files = append(files, name)
		deleted = append(deleted, strings.HasPrefix(line, "*** Delete File: "))
	}
	if len(files) == 0 {
		c.add(rules.KindPatchUnreadable, rules.Proven, "patch", "the envelope names no file", effectNone)
		return
	}
	for _, f := range files {
		ownWrite(c, ps, cwd, f, "change")
	}
	if !allInside(c, ps, cwd, files, "") {
		return
	}
	for i, f := range files {
		writeRaises(c, ps, ps.Resolve(cwd, f), f, deleted[i])
	}
	subject := strings.Join(files, " ")
	scope := rules.Level(0)
	if len(files) > 1 {
		scope = 1
	}
	c.add(rules.KindPatchFiles, rules.Proven, subject, fmt.Sprintf("%d added, %d updated, %d deleted, all inside the workspace", adds, updates, deletes), bound(rules.Scope, scope))
	c.add(rules.KindBoundedPaths, rules.Proven, subject, "every path of the patch is proven; the argument no longer reaches the account (§4.3)", factIs(rules.OpenWorld, false))
	if deletes == 0 {
		c.add(rules.KindPatchNoDelete, rules.Proven, subject, "no file is deleted; updated files survive with new content (§4.4)", factIs(rules.PureDeletion, false))
	}
	if updates == 0 && deletes == 0 {
		c.add(rules.KindPatchAddsOnly, rules.Proven, subject, "the patch only adds files", bound(rules.Mutation, 1))
		c.add(rules.KindPatchAddsOnly, rules.Proven, subject, "an added file is undone by removing it", bound(rules.Reversibility, 0))
	}
}

var urlPattern = regexp.MustCompile(`https?://[^\s"'<>]+`)

func urls(s string) []string {
	if found := urlPattern.FindAllString(s, 20); len(found) > 0 {
		return found
	}
	if s != "" {
		return []string{s}
	}
	return nil
}

func str(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}
