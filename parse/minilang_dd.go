package parse

import (
	"strings"
)

// dd reads dd's KEY=VALUE operands.
func (r *run) dd(p parsed) {
	for _, op := range p.ops {
		key, val, ok := strings.Cut(op.Value, "=")
		if !ok {
			r.fail("dd operand " + op.Value + " not understood")
			return
		}
		w := Word{Value: val, Literal: true, Pos: op.Pos}
		switch key {
		case "if":
			r.addPath(w, Read, false)
		case "of":
			r.addPath(w, Overwrite, false)
		case "bs", "ibs", "obs", "cbs", "count", "skip", "seek", "iseek", "oseek", "status", "conv", "iflag", "oflag":
		default:
			r.fail("unknown dd operand " + key)
			return
		}
	}
}
