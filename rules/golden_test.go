package rules

import "flag"

// update rewrites golden files instead of comparing against them:
// go test ./rules -u
var update = flag.Bool("u", false, "update golden files")
