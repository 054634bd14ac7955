package proofs

import (
	"errors"
	"fmt"
	"strings"
)

// gitConfigMax bounds how much of one git config file narrowd reads.
const gitConfigMax = 256 << 10

// FileReader is a Disk that can also read small files. narrowd reads a
// repository's files itself: it never runs git to learn repo state.
type FileReader interface {
	ReadFile(name string) ([]byte, error)
}

// gitConfigEntry is one variable of a git config file, named as
// `git config --list` names it: section and variable name in lower case,
// the subsection of [section "Sub"] as written, the one of the old
// [section.Sub] form in lower case.
type gitConfigEntry struct {
	Key string
	// Value is the value after quote and escape removal; HasValue is
	// false for a key written without '=' (boolean true).
	Value    string
	HasValue bool
	Line     int
}

// errGitConfigSyntax is a file git itself refuses ("bad config line").
var errGitConfigSyntax = errors.New("bad config line")

// gitConfigSource is parseGitConfig's reader: the rules of config.c's
// get_next_char (a CR before LF is dropped, the end reads as one more
// newline).
type gitConfigSource struct {
	b    []byte
	i    int
	eof  bool
	line int
}

func (s *gitConfigSource) next() byte {
	if s.i >= len(s.b) {
		s.eof = true
		return '\n'
	}
	c := s.b[s.i]
	s.i++
	if c == '\r' && s.i < len(s.b) && s.b[s.i] == '\n' {
		c = '\n'
		s.i++
	}
	if c == '\n' {
		s.line++
	}
	return c
}

// cSpace is C's isspace in the C locale, which git uses.
func cSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

func cAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func keyChar(c byte) bool { return cAlpha(c) || c >= '0' && c <= '9' || c == '-' }

func lowerByte(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// parseGitConfig reads one config file the way git's config.c
// (git_parse_source and its helpers) does: a UTF-8 BOM at the start,
// '#' and ';' comments outside quotes, section names case-insensitive,
// [a "B"] subsections case-sensitive with \ escapes, [a.B] lowered,
// keys without '=' boolean, backslash-newline continuing a value,
// escapes \t \b \n \\ \" and no others, unquoted whitespace trimmed at
// both ends, inner blanks as spaces. Includes are not followed here. A file git would refuse is
// errGitConfigSyntax.
func parseGitConfig(b []byte) ([]gitConfigEntry, error) {
	if len(b) > gitConfigMax {
		return nil, fmt.Errorf("config is larger than %d bytes", gitConfigMax)
	}
	s := &gitConfigSource{b: b, line: 1}
	const bom = "\xef\xbb\xbf"
	if strings.HasPrefix(string(b), bom) {
		s.i = len(bom)
	} else if len(b) > 0 && b[0] == bom[0] {
		// git refuses a partial BOM.
		return nil, fmt.Errorf("line 1: %w (partial byte order mark)", errGitConfigSyntax)
	}
	var out []gitConfigEntry
	var section []byte
	comment := false
	for {
		c := s.next()
		if c == '\n' {
			if s.eof {
				return out, nil
			}
			comment = false
			continue
		}
		if comment {
			continue
		}
		if cSpace(c) {
			continue
		}
		if c == '#' || c == ';' {
			comment = true
			continue
		}
		if c == '[' {
			sec, err := s.sectionHeader()
			if err != nil || len(sec) < 1 {
				return nil, fmt.Errorf("line %d: %w", s.line, errGitConfigSyntax)
			}
			section = append(sec, '.')
			continue
		}
		if !cAlpha(c) {
			return nil, fmt.Errorf("line %d: %w", s.line, errGitConfigSyntax)
		}
		line := s.line
		name := append([]byte(nil), section...)
		name = append(name, lowerByte(c))
		e, err := s.variable(name)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		e.Line = line
		out = append(out, e)
	}
}

// sectionHeader is get_base_var and get_extended_base_var: the name after
// '[' up to ']'.
func (s *gitConfigSource) sectionHeader() ([]byte, error) {
	var name []byte
	for {
		c := s.next()
		if s.eof {
			return nil, errGitConfigSyntax
		}
		if c == ']' {
			return name, nil
		}
		if cSpace(c) {
			return s.subsection(name, c)
		}
		if !keyChar(c) && c != '.' {
			return nil, errGitConfigSyntax
		}
		name = append(name, lowerByte(c))
	}
}

func (s *gitConfigSource) subsection(name []byte, c byte) ([]byte, error) {
	for {
		if c == '\n' {
			return nil, errGitConfigSyntax
		}
		c = s.next()
		if !cSpace(c) {
			break
		}
	}
	if c != '"' {
		return nil, errGitConfigSyntax
	}
	name = append(name, '.')
	for {
		c := s.next()
		if c == '\n' {
			return nil, errGitConfigSyntax
		}
		if c == '"' {
			break
		}
		if c == '\\' {
			c = s.next()
			if c == '\n' {
				return nil, errGitConfigSyntax
			}
		}
		name = append(name, c)
	}
	if s.next() != ']' {
		return nil, errGitConfigSyntax
	}
	return name, nil
}

// variable is get_value: the rest of the name, then '=' and a value, or
// the end of the line.
func (s *gitConfigSource) variable(name []byte) (gitConfigEntry, error) {
	var c byte
	for {
		c = s.next()
		if s.eof || !keyChar(c) {
			break
		}
		name = append(name, lowerByte(c))
	}
	for c == ' ' || c == '\t' {
		c = s.next()
	}
	e := gitConfigEntry{Key: string(name)}
	if c != '\n' {
		if c != '=' {
			return e, errGitConfigSyntax
		}
		v, err := s.value()
		if err != nil {
			return e, err
		}
		e.Value, e.HasValue = v, true
	}
	return e, nil
}

// value is parse_value.
func (s *gitConfigSource) value() (string, error) {
	var v []byte
	quote, comment := false, false
	trim := 0
	for {
		c := s.next()
		if c == '\n' {
			if quote {
				return "", errGitConfigSyntax
			}
			if trim > 0 {
				v = v[:trim]
			}
			return string(v), nil
		}
		if comment {
			continue
		}
		if cSpace(c) && !quote {
			if trim == 0 {
				trim = len(v)
			}
			if len(v) > 0 {
				// git before 2.45 stores each blank as a space,
				// later ones keep it: only a value's inner blanks
				// differ, never which keys a file sets.
				v = append(v, ' ')
			}
			continue
		}
		if !quote && (c == ';' || c == '#') {
			comment = true
			continue
		}
		trim = 0
		if c == '\\' {
			c = s.next()
			switch c {
			case '\n':
				continue
			case 't':
				c = '\t'
			case 'b':
				c = '\b'
			case 'n':
				c = '\n'
			case '\\', '"':
			default:
				return "", errGitConfigSyntax
			}
			v = append(v, c)
			continue
		}
		if c == '"' {
			quote = !quote
			continue
		}
		v = append(v, c)
	}
}
