package parse

import "strings"

// man refuses page names that man-db reads as local files: a name with a
// / is formatted like man -l FILE, and a page's .so requests include any
// other file, which groff then prints.
func (r *run) man(p parsed) {
	for _, op := range p.ops {
		if strings.Contains(op.Value, "/") {
			r.fail("man " + op.Value + " formats a local file, whose .so includes read any file")
			return
		}
	}
}
