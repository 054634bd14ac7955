package quickstage

import (
	"bytes"
	"strconv"
	"time"
	"unicode/utf8"
)

// kind is the shape of a config value.
type kind int

const (
	str kind = iota
	strList
	integer
	boolean
	dur
)

// configKeys are the keys of narrowd's config file (fileConfig in
// cmd/narrowd, which a test holds this to) and their values' shapes.
var configKeys = map[string]kind{
	"socket": str, "http": str, "metrics": str, "profile": str,
	"workspaces": strList, "labels": strList, "watch": strList, "mcp_projects": strList, "sandbox_home_allow": strList,
	"audit_dir": str, "state_dir": str, "log_level": str,
	"audit_max_size": integer, "audit_keep": integer, "undo_max_entries": integer, "undo_max_bytes": integer,
	"abstain_for_permission_request": boolean, "interactive": boolean, "snapshots": boolean, "mcp": boolean,
	"sandbox_undo":  boolean,
	"snapshot_keep": dur, "audit_sync_within": dur, "ticket_ttl": dur, "mcp_interval": dur,
}

// ConfigAccepted reports that narrowd's TOML decoder reads b as main
// does without an error: b is in a small subset of TOML it checks line by
// line, each line blank, a comment, or one known key (lowercase, bare)
// set once to a one-line value of its type (a string without escapes, a
// list of them, a decimal integer, true or false, a duration's text),
// with no table. Anything else may be a config main refuses (an unknown
// key, a value of another type, bad TOML), or one it reads in ways this
// does not: false, and main reads it.
func ConfigAccepted(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	seen := make(map[string]bool)
	for len(b) > 0 {
		line, rest, ended := bytes.Cut(b, []byte("\n"))
		b = rest
		if ended {
			// CRLF; a carriage return anywhere else is a control
			// character TOML refuses.
			line = bytes.TrimSuffix(line, []byte("\r"))
		}
		for _, c := range line {
			if c < 0x20 && c != '\t' || c == 0x7f {
				return false
			}
		}
		line = bytes.Trim(line, " \t")
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		key, rest, ok := bytes.Cut(line, []byte("="))
		if !ok {
			return false
		}
		name := string(bytes.TrimRight(key, " \t"))
		k, known := configKeys[name]
		if !known || seen[name] {
			return false
		}
		seen[name] = true
		rest = bytes.TrimLeft(rest, " \t")
		if rest, ok = value(k, rest); !ok {
			return false
		}
		if rest = bytes.TrimLeft(rest, " \t"); len(rest) > 0 && rest[0] != '#' {
			return false
		}
	}
	return true
}

// value takes one value of kind k from the start of b and returns what
// follows it.
func value(k kind, b []byte) ([]byte, bool) {
	switch k {
	case str:
		_, rest, ok := quoted(b)
		return rest, ok
	case dur:
		s, rest, ok := quoted(b)
		if _, err := time.ParseDuration(s); err != nil {
			return nil, false
		}
		return rest, ok
	case boolean:
		for _, v := range []string{"true", "false"} {
			if rest, ok := bytes.CutPrefix(b, []byte(v)); ok && (len(rest) == 0 || rest[0] == ' ' || rest[0] == '\t' || rest[0] == '#') {
				return rest, true
			}
		}
		return nil, false
	case integer:
		n := 0
		for n < len(b) && '0' <= b[n] && b[n] <= '9' {
			n++
		}
		// No sign, underscore or leading zero: 18 digits fit an int.
		if n == 0 || n > 18 || n > 1 && b[0] == '0' {
			return nil, false
		}
		_, err := strconv.Atoi(string(b[:n]))
		return b[n:], err == nil
	case strList:
		rest, ok := bytes.CutPrefix(b, []byte("["))
		if !ok {
			return nil, false
		}
		for {
			rest = bytes.TrimLeft(rest, " \t")
			if after, ok := bytes.CutPrefix(rest, []byte("]")); ok {
				return after, true
			}
			if _, rest, ok = quoted(rest); !ok {
				return nil, false
			}
			rest = bytes.TrimLeft(rest, " \t")
			if after, ok := bytes.CutPrefix(rest, []byte(",")); ok {
				rest = after
			} else if rest, ok = bytes.CutPrefix(rest, []byte("]")); ok {
				return rest, true
			} else {
				return nil, false
			}
		}
	}
	return nil, false
}

// quoted takes a one-line string in double quotes without escapes, or in
// single quotes, from the start of b: its text and what follows.
func quoted(b []byte) (string, []byte, bool) {
	if len(b) < 2 || b[0] != '"' && b[0] != '\'' {
		return "", nil, false
	}
	end := bytes.IndexByte(b[1:], b[0])
	if end < 0 {
		return "", nil, false
	}
	s := b[1 : 1+end]
	// Triple quotes open a multi-line string; a backslash may escape.
	if end == 0 && len(b) > 2 && b[2] == b[0] || b[0] == '"' && bytes.IndexByte(s, '\\') >= 0 {
		return "", nil, false
	}
	return string(s), b[2+end:], true
}
