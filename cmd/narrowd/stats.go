package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"github.com/narrowd/narrowd/daemon"
)

const statsUsage = `stats [--agent NAME] [--tool NAME] [--outcome O] [--since 24h] [--session ID] [--json] [--audit-dir DIR] [--config FILE]`

// auditStats are the totals `narrowd stats` prints.
type auditStats struct {
	Decisions      int            `json:"decisions"`
	ByAnswer       map[string]int `json:"by_answer"`
	ByTool         map[string]int `json:"by_tool"`
	ByAgent        map[string]int `json:"by_agent"`
	PromptsAvoided int            `json:"prompts_avoided"`
	// PromptsAvoidedEstimate counts pre-tool allows, by agents without a
	// permission-request hook, of calls whose ceiling needed a person.
	PromptsAvoidedEstimate int `json:"prompts_avoided_estimate"`
	UnknownSessions        int `json:"unknown_session_decisions"`
	Unlabelled             int `json:"unlabelled"`
	// SandboxRuns and SandboxRefused count narrowd exec's own records:
	// the check of a sandbox before a ticket's command ran, which follows
	// a decision and is not one.
	SandboxRuns    int `json:"sandbox_runs"`
	SandboxRefused int `json:"sandbox_refused"`
}

// runStats prints totals from the audit log.
func runStats(ctx context.Context, e env, args []string) error {
	fs, finish := filterFlags(e, "stats", statsUsage)
	asJSON := fs.Bool("json", false, "print the totals as JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	f, dir, err := finish()
	if err != nil {
		return err
	}
	st := auditStats{ByAnswer: map[string]int{}, ByTool: map[string]int{}, ByAgent: map[string]int{}}
	err = daemon.ReadAudit(dir, func(r *daemon.Record) error {
		if !f.match(r) {
			return nil
		}
		switch r.Answer {
		case "exec":
			st.SandboxRuns++
			return ctx.Err()
		case "exec-refused":
			st.SandboxRefused++
			return ctx.Err()
		}
		st.Decisions++
		st.ByAnswer[r.Answer]++
		st.ByTool[orDash(r.ToolName)]++
		st.ByAgent[r.Agent]++
		if r.PromptAvoided {
			st.PromptsAvoided++
		}
		if r.PromptAvoidedEstimate {
			st.PromptsAvoidedEstimate++
		}
		if !r.SessionKnown {
			st.UnknownSessions++
		}
		if r.Verdict != nil && r.Verdict.Ceiling == nil {
			st.Unlabelled++
		}
		return ctx.Err()
	})
	if err != nil {
		return err
	}
	if *asJSON {
		b, _ := json.MarshalIndent(st, "", "  ")
		fmt.Fprintf(e.stdout, "%s\n", b)
		return nil
	}
	w := e.stdout
	fmt.Fprintf(w, "decisions                  %d\n", st.Decisions)
	fmt.Fprintf(w, "prompts avoided            %d   (permission requests narrowd allowed)\n", st.PromptsAvoided)
	fmt.Fprintf(w, "prompts avoided, estimate  %d   (pre-tool allows whose ceiling needed a person)\n", st.PromptsAvoidedEstimate)
	fmt.Fprintf(w, "unlabelled tools           %d\n", st.Unlabelled)
	fmt.Fprintf(w, "session unknown            %d\n", st.UnknownSessions)
	fmt.Fprintf(w, "sandbox runs               %d   (refused by the check from outside: %d)\n", st.SandboxRuns, st.SandboxRefused)
	printCounts(w, "by answer", st.ByAnswer, 0)
	printCounts(w, "by agent", st.ByAgent, 0)
	printCounts(w, "by tool", st.ByTool, 20)
	return nil
}

// printCounts prints a table of counts, largest first, at most max rows
// (0: all).
func printCounts(w io.Writer, title string, m map[string]int, max int) {
	if len(m) == 0 {
		return
	}
	type kv struct {
		k string
		v int
	}
	rows := make([]kv, 0, len(m))
	for k, v := range m {
		rows = append(rows, kv{k, v})
	}
	slices.SortFunc(rows, func(a, b kv) int {
		if c := cmp.Compare(b.v, a.v); c != 0 {
			return c
		}
		return cmp.Compare(a.k, b.k)
	})
	fmt.Fprintf(w, "\n%s\n", title)
	for i, r := range rows {
		if max > 0 && i == max {
			fmt.Fprintf(w, "  … %d more\n", len(rows)-max)
			break
		}
		fmt.Fprintf(w, "  %-24s %d\n", r.k, r.v)
	}
}
