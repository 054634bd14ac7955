package parse

import (
	"context"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// longOptionsInHelp are the commands whose GNU-style long options this
// test holds to the installed tool's --help: a long option the table
// lists and the tool lacks is a hazard, since the tool may resolve that
// spelling as an abbreviation of an option the table never saw (gawk's
// --exec from --ex), while the table calls it the harmless one it lists.
var longOptionsInHelp = []string{
	"ls", "cat", "head", "tail", "wc", "sort", "uniq", "cut", "tr", "grep", "sed", "awk",
	"diff", "find", "stat", "du", "df", "date", "env", "basename", "dirname", "realpath",
	"readlink", "nl", "tac", "comm", "join", "paste", "fold", "fmt", "od", "md5sum",
	"sha256sum", "base64", "file", "man", "less", "tar", "touch", "mkdir", "cp", "mv",
	"rm", "ln", "chmod", "tee", "xargs", "which", "column", "numfmt", "expand", "split",
	"who", "last", "findmnt", "lscpu", "lsblk", "lslogins", "lastlog", "journalctl", "ss", "pgrep", "date", "jq", "gawk", "mawk",
}

// TestLongOptionsExist checks, for every command above that is installed
// here, that each long option the table lists appears in the tool's
// --help output, and that the table reads no spelling of one it lists
// and the tool lacks as the tool reads it.
func TestLongOptionsExist(t *testing.T) {
	k := mustKnowledge(t)
	longOpt := regexp.MustCompile(`--[a-zA-Z0-9][a-zA-Z0-9-]*`)
	for _, name := range longOptionsInHelp {
		s := k.cmds[name]
		if s == nil || s.flags == nil {
			continue
		}
		bin, err := exec.LookPath(name)
		if err != nil {
			continue
		}
		help := ""
		for _, arg := range []string{"--help"} {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			out, _ := exec.CommandContext(ctx, bin, arg).CombinedOutput()
			cancel()
			help += string(out)
		}
		have := longOpt.FindAllString(help, -1)
		if len(have) < 3 {
			continue
		}
		var missing []string
		for _, n := range s.flags.longs {
			if slices.Contains(have, n) || strings.HasPrefix(n, "--no-") {
				continue
			}
			missing = append(missing, n)
			// Every spelling the table reads as n must mean n (or an
			// alias of it) to the tool too. Where neither abbreviates
			// (jq, clap tools), a spelling means only itself.
			abbrev := s.Parser.abbreviates()
			if s.Abbrev != nil {
				abbrev = *s.Abbrev
			}
			if !abbrev {
				continue
			}
			def := s.flags.long[n]
			for end := 3; end <= len(n); end++ {
				spell := n[:end]
				if tableResolves(s.flags, spell) != def {
					continue
				}
				if real := toolResolves(have, spell); real != "" && s.flags.long[real] != def {
					t.Errorf("%s: the table reads %s as %s, which this %s lacks; the tool reads it as %s", name, spell, n, bin, real)
				}
			}
		}
		if len(missing) > 0 {
			t.Logf("%s: the table lists %s, which %s --help does not show (another version?)", name, strings.Join(missing, " "), bin)
		}
	}
}

// tableResolves is the table's reading of a long option spelling: the
// exact name, or the one listed name it is a prefix of.
func tableResolves(fs *flagSet, spell string) *flagDef {
	if d := fs.long[spell]; d != nil {
		return d
	}
	var found *flagDef
	for _, n := range fs.longs {
		if strings.HasPrefix(n, spell) {
			if found != nil && fs.long[n] != found {
				return nil
			}
			found = fs.long[n]
		}
	}
	return found
}

// toolResolves is getopt_long's reading of a spelling among the options
// the tool's help shows: exact, or the only one it is a prefix of.
func toolResolves(have []string, spell string) string {
	if slices.Contains(have, spell) {
		return spell
	}
	found := ""
	for _, n := range have {
		if strings.HasPrefix(n, spell) && n != found {
			if found != "" {
				return ""
			}
			found = n
		}
	}
	return found
}
