package parse

import "strings"

// date refuses an operand that is not an output format: GNU date reads
// [MMDDhhmm[[CC]YY][.ss]] there and sets the clock.
func (r *run) date(p parsed) {
	for _, op := range p.ops {
		if !strings.HasPrefix(op.Value, "+") {
			r.fail("date " + op.Value + " sets the clock")
			return
		}
	}
}
