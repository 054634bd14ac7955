package changes

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// ErrNotMounted: the sandbox does not have the overlay narrowd asked for
// over a writable root.
var ErrNotMounted = errors.New("the workspace is not behind narrowd's overlay")

// OverlayMounted checks, in the text of a process's /proc/PID/mountinfo,
// that the mount visible at root (the last one mounted there) is an
// overlay with lowerdir root, upperdir upper and workdir work, mounted
// with userxattr and without redirect_dir, metacopy or index, which
// [Read] does not understand. The daemon reads the sandbox's mountinfo
// from outside before it releases the command.
func OverlayMounted(mountinfo, root, upper, work string) error {
	root = filepath.Clean(root)
	var last string
	for _, line := range strings.Split(mountinfo, "\n") {
		fields := strings.Fields(line)
		if len(fields) < 10 || unescape(fields[4]) != root {
			continue
		}
		last = line
	}
	if last == "" {
		return fmt.Errorf("%w: nothing is mounted at %s", ErrNotMounted, root)
	}
	_, post, ok := strings.Cut(last, " - ")
	if !ok {
		return fmt.Errorf("%w: a malformed mountinfo line for %s", ErrNotMounted, root)
	}
	tail := strings.Fields(post)
	if len(tail) < 3 || tail[0] != "overlay" {
		return fmt.Errorf("%w: %s is not an overlay", ErrNotMounted, root)
	}
	opts := map[string]string{}
	for _, o := range splitOptions(tail[2]) {
		k, v, _ := strings.Cut(o, "=")
		opts[k] = unescape(v)
	}
	switch {
	case opts["lowerdir"] != root:
		return fmt.Errorf("%w: the overlay at %s has lowerdir %q", ErrNotMounted, root, opts["lowerdir"])
	case opts["upperdir"] != filepath.Clean(upper):
		return fmt.Errorf("%w: the overlay at %s has upperdir %q, not narrowd's", ErrNotMounted, root, opts["upperdir"])
	case opts["workdir"] != filepath.Clean(work):
		return fmt.Errorf("%w: the overlay at %s has workdir %q, not narrowd's", ErrNotMounted, root, opts["workdir"])
	}
	if _, ok := opts["userxattr"]; !ok {
		return fmt.Errorf("%w: the overlay at %s is not mounted with userxattr", ErrNotMounted, root)
	}
	for _, k := range []string{"redirect_dir", "metacopy", "index"} {
		if v, ok := opts[k]; ok && v != "off" && !(k == "redirect_dir" && v == "nofollow") {
			return fmt.Errorf("%w: the overlay at %s has %s=%s", ErrNotMounted, root, k, v)
		}
	}
	return nil
}

// splitOptions splits super options at commas; overlayfs escapes a comma
// inside a path with a backslash.
func splitOptions(s string) []string {
	var out []string
	var cur strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && i+1 < len(s) && s[i+1] == ',':
			cur.WriteByte(',')
			i++
		case s[i] == ',':
			out = append(out, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(s[i])
		}
	}
	return append(out, cur.String())
}

// unescape undoes mountinfo's octal escapes (\040 for a space, \011,
// \012, \134).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && isOctal(s[i+1:min(i+4, len(s))]) {
			n := (s[i+1]-'0')*64 + (s[i+2]-'0')*8 + (s[i+3] - '0')
			b.WriteByte(n)
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(s string) bool {
	if len(s) != 3 {
		return false
	}
	for i := 0; i < 3; i++ {
		if s[i] < '0' || s[i] > '7' {
			return false
		}
	}
	return true
}
