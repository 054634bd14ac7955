// Package parse turns shell text into every program it would run, with each
// word marked literal or dynamic, wrappers unwrapped, redirects and path
// arguments found, and each program classified by the command knowledge
// table (what each command and flag reads, writes, reaches and runs).
//
// It uses mvdan.cc/sh/v3/syntax only. It never expands, executes or touches
// the disk. Its API is not stable.
package parse
