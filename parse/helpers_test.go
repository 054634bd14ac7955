package parse

import (
	"strconv"
	"strings"
)

// renderWord shows a literal word bare when that is unambiguous, quoted
// otherwise, and a dynamic word as {why}.
func renderWord(w Word) string {
	if !w.Literal {
		return "{" + w.Why + "}"
	}
	if w.Value == "" || strings.ContainsFunc(w.Value, func(r rune) bool {
		return r <= ' ' || r >= 0x7f || r == '"' || r == '\\'
	}) {
		return strconv.Quote(w.Value)
	}
	return w.Value
}

// renderCommand shows one command as env words, argv and redirects, the
// redirects that open a path with their access in brackets.
func renderCommand(c Command) string {
	var parts []string
	if c.Decl {
		parts = append(parts, "decl:")
	}
	if len(c.Argv) == 0 {
		for _, a := range c.Env {
			parts = append(parts, "set:"+a.Name+"="+renderWord(a.Value))
		}
	} else if !c.Decl {
		for _, a := range c.Env {
			parts = append(parts, a.Name+"="+renderWord(a.Value))
		}
	}
	for _, w := range c.Argv {
		parts = append(parts, renderWord(w))
	}
	for _, r := range c.Redirs {
		s := r.Fd + r.Op + renderWord(r.Target)
		if r.Path {
			s += "[" + r.Access.String() + "]"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

// renderProgram shows one program: wrappers, name, known or not, and its
// paths.
func renderProgram(p Program) string {
	var b strings.Builder
	for _, w := range p.Wrappers {
		b.WriteString(w + " > ")
	}
	b.WriteString(p.Name)
	if p.Privileged {
		b.WriteString(" (privileged)")
	}
	for _, pa := range p.Paths {
		b.WriteString(" " + pa.Access.String() + ":" + renderWord(pa.Word))
		if pa.Recursive {
			b.WriteString("/**")
		}
	}
	return b.String()
}

func renderUnproven(us []Unproven) []string {
	out := make([]string, 0, len(us))
	for _, u := range us {
		out = append(out, u.Why)
	}
	return out
}
