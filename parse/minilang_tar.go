package parse

import (
	"strings"
)

// tarArgLetters are the bundled old-style letters that take an argument,
// in order, from the following words (tar cf a.tar, tar xzfC a.tar dir).
const tarArgLetters = "fbCTXgKLNVH"

// tarOldStyle rewrites tar's bundled first word (tar czf a.tgz x) into
// ordinary short options.
func tarOldStyle(args []Word) []Word {
	if len(args) == 0 || args[0].Value == "" || args[0].Value[0] == '-' {
		return args
	}
	letters := args[0].Value
	for i := 0; i < len(letters); i++ {
		c := letters[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return args
		}
	}
	out := make([]Word, 0, len(args)+len(letters))
	next := 1
	for i := 0; i < len(letters); i++ {
		c := letters[i]
		out = append(out, Word{Value: "-" + string(rune(c)), Literal: true, Pos: args[0].Pos})
		if strings.IndexByte(tarArgLetters, c) >= 0 && next < len(args) {
			out = append(out, args[next])
			next++
		}
	}
	return append(out, args[next:]...)
}

// tar derives the archive's and members' access from the mode.
func (r *run) tar(p parsed) {
	var mode string
	for _, m := range []string{"-c", "-x", "-t", "-r", "-u", "-A", "-d", "--delete", "--test-label"} {
		if p.hasHit(m) {
			if mode != "" {
				r.fail("tar with two modes")
				return
			}
			mode = m
		}
	}
	if mode == "" {
		r.fail("tar without a mode")
		return
	}
	r.rule = append(r.rule, mode)
	archive := Read
	switch mode {
	case "-c":
		archive = Overwrite
	case "-r", "-u", "-A", "--delete":
		archive = Update
	}
	for _, f := range p.values("-f") {
		if isRemote(f.Value) && !p.hasHit("--force-local") {
			r.fail("tar archive on a remote host")
			return
		}
		if f.Value != "-" {
			r.addPath(f, archive, false)
		}
	}
	switch mode {
	case "-c", "-r", "-u":
		remove := p.hasHit("--remove-files")
		for _, op := range p.ops {
			a := Read
			if remove {
				a = Delete
			}
			r.addPath(r.resolve(op), a, true)
			// -h archives what each symbolic link points to.
			r.paths[len(r.paths)-1].Follows = p.hasHit("-h")
		}
	case "-A":
		for _, op := range p.ops {
			r.addPath(r.resolve(op), Read, false)
		}
	case "-x":
		if p.hasHit("-P") {
			r.fail("tar -P extracts absolute names")
			return
		}
		dest := Word{Value: ".", Literal: true, Pos: r.prog.Pos}
		if r.dir != nil {
			dest = *r.dir
		}
		a := Overwrite
		if p.hasHit("-k") {
			a = Create
		}
		r.addPath(dest, a, true)
	case "-d":
		dest := Word{Value: ".", Literal: true, Pos: r.prog.Pos}
		if r.dir != nil {
			dest = *r.dir
		}
		r.addPath(dest, Read, true)
	}
}
