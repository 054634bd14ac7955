package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/narrowd/narrowd/daemon"
)

const logUsage = `log [--agent NAME] [--tool NAME] [--outcome allow|ask|deny|sandbox|abstain|error]
       [--since 1h|2026-11-30T10:00:00Z] [--session ID] [--last N] [--json] [--audit-dir DIR] [--config FILE]`

// auditFilter is what log and stats select records by.
type auditFilter struct {
	agent, tool, outcome, session string
	since                         time.Time
}

func (f auditFilter) match(r *daemon.Record) bool {
	switch {
	case f.agent != "" && r.Agent != f.agent,
		f.tool != "" && r.ToolName != f.tool,
		f.outcome != "" && r.Answer != f.outcome && r.Outcome != f.outcome,
		f.session != "" && r.Session != f.session,
		!f.since.IsZero() && r.Time().Before(f.since):
		return false
	}
	return true
}

// parseSince reads a duration back from now ("90m") or a time (RFC 3339).
func parseSince(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := time.ParseInLocation("2006-01-02", s, time.Local); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("bad --since %q: want a duration such as 2h or a time such as 2026-11-30T10:00:00Z", s)
}

// filterFlags registers the flags log and stats share and returns a
// function that builds the filter and the audit directory after parsing.
func filterFlags(e env, name, usage string) (*flag.FlagSet, func() (auditFilter, string, error)) {
	fs := newFlags(e, name, usage)
	var f auditFilter
	fs.StringVar(&f.agent, "agent", "", "only this agent")
	fs.StringVar(&f.tool, "tool", "", "only this tool name")
	fs.StringVar(&f.outcome, "outcome", "", "only this answer or outcome")
	fs.StringVar(&f.session, "session", "", "only this session id")
	since := fs.String("since", "", "only records from this long ago (2h) or since this time")
	auditDir := fs.String("audit-dir", "", "audit log directory (default from the config file)")
	configPath := fs.String("config", "", "config file")
	return fs, func() (auditFilter, string, error) {
		var err error
		if f.since, err = parseSince(*since, time.Now()); err != nil {
			return f, "", err
		}
		dir := *auditDir
		if dir == "" {
			c, err := loadConfig(e, *configPath)
			if err != nil {
				return f, "", err
			}
			c.defaults(e)
			dir = c.AuditDir
		}
		return f, dir, nil
	}
}

// runLog prints audit records for a person, or as JSON lines.
func runLog(ctx context.Context, e env, args []string) error {
	fs, finish := filterFlags(e, "log", logUsage)
	asJSON := fs.Bool("json", false, "print the records as JSON lines")
	last := fs.Int("last", 0, "only the last N matching records")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	f, dir, err := finish()
	if err != nil {
		return err
	}
	var recs []*daemon.Record
	err = daemon.ReadAudit(dir, func(r *daemon.Record) error {
		if f.match(r) {
			recs = append(recs, r)
			if *last > 0 && len(recs) > 2*(*last)+1024 {
				recs = append(recs[:0], recs[len(recs)-*last:]...)
			}
		}
		return ctx.Err()
	})
	if err != nil {
		return err
	}
	if *last > 0 && len(recs) > *last {
		recs = recs[len(recs)-*last:]
	}
	for _, r := range recs {
		if *asJSON {
			b, _ := json.Marshal(r)
			fmt.Fprintf(e.stdout, "%s\n", b)
			continue
		}
		printRecord(e.stdout, r)
	}
	return nil
}

// printRecord writes one record on one line for a person: time, agent,
// tool, answer, rule, reason, and what the call did.
func printRecord(w io.Writer, r *daemon.Record) {
	t := r.Time().Local().Format("2006-01-02 15:04:05")
	var extra []string
	if r.PromptAvoided {
		extra = append(extra, "prompt avoided")
	}
	if r.PromptAvoidedEstimate {
		extra = append(extra, "prompt avoided (estimate)")
	}
	if r.Error != "" {
		extra = append(extra, "error: "+r.Error)
	}
	line := fmt.Sprintf("%s  %-7s %-14s %-8s %s: %s", t, r.Agent, orDash(r.ToolName), r.Answer, orDash(r.PolicyRule), oneLine(r.Reason))
	if r.Summary != "" {
		line += "  — " + oneLine(r.Summary)
	}
	if len(extra) > 0 {
		line += "  [" + strings.Join(extra, "; ") + "]"
	}
	fmt.Fprintln(w, line)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// oneLine keeps a field on one terminal line and free of control bytes.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return ' '
		}
		return r
	}, s)
}
