package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/narrowd/narrowd/daemon"
	"github.com/narrowd/narrowd/daemon/agent"
	"github.com/narrowd/narrowd/rules"
)

// multiFlag collects a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(s string) error { *m = append(*m, s); return nil }

// checkConfig is what check and explain read from their flags.
type checkConfig struct {
	agent      string
	jsonl      bool
	profile    string
	workspaces multiFlag
}

func checkFlags(name string, e env, cfg *checkConfig) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.StringVar(&cfg.agent, "agent", "auto", "agent whose payload shape to read: auto, "+strings.Join(agent.Names(), ", "))
	fs.StringVar(&cfg.profile, "profile", "standard", "built-in profile name or profile file")
	fs.Var(&cfg.workspaces, "workspace", "workspace root (repeatable); replaces the payload's project dir")
	return fs
}

func runCheck(ctx context.Context, e env, args []string) error {
	var cfg checkConfig
	fs := checkFlags("check", e, &cfg)
	fs.BoolVar(&cfg.jsonl, "jsonl", false, "read one payload per line and print one verdict per line")
	if err := fs.Parse(args); err != nil {
		return exitError{1}
	}
	eng, err := daemon.NewEngine(daemon.EngineConfig{Profile: cfg.profile})
	if err != nil {
		return err
	}
	out := bufio.NewWriter(e.stdout)
	defer out.Flush()
	failed := 0
	judgeOne := func(payload []byte) {
		v, err := judgePayload(eng, cfg, payload)
		if err != nil {
			failed++
			fmt.Fprintf(e.stderr, "narrowd: error: %v\n", err)
		}
		b, _ := json.Marshal(v)
		out.Write(b)
		out.WriteByte('\n')
	}
	if !cfg.jsonl {
		payload, err := readBounded(e.stdin)
		if err != nil {
			judgeFailed(out, e, err)
			return exitError{1}
		}
		judgeOne(payload)
	} else {
		sc := bufio.NewScanner(e.stdin)
		sc.Buffer(make([]byte, 64<<10), agent.MaxPayload+1)
		for sc.Scan() {
			line := bytes.TrimSpace(sc.Bytes())
			if len(line) == 0 {
				continue
			}
			judgeOne(line)
		}
		if err := sc.Err(); err != nil {
			judgeFailed(out, e, fmt.Errorf("reading payloads: %w", err))
			return exitError{1}
		}
	}
	if failed > 0 {
		return exitError{1}
	}
	return nil
}

// judgeFailed prints the deny verdict for input that could not be read.
func judgeFailed(out io.Writer, e env, err error) {
	fmt.Fprintf(e.stderr, "narrowd: error: %v\n", err)
	b, _ := json.Marshal(daemon.FailVerdict(rules.Call{}, "narrowd could not read the hook payload"))
	fmt.Fprintf(out, "%s\n", b)
}

// readBounded reads a whole payload, refusing more than agent.MaxPayload.
func readBounded(r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, agent.MaxPayload+1))
	if err != nil {
		return nil, fmt.Errorf("reading payload: %w", err)
	}
	if len(b) > agent.MaxPayload {
		return nil, fmt.Errorf("payload larger than %d bytes: %w", agent.MaxPayload, agent.ErrTooLarge)
	}
	return b, nil
}

// judgePayload decodes one payload and judges it. A payload that does not
// decode gets the fixed deny verdict and an error.
func judgePayload(eng *daemon.Engine, cfg checkConfig, payload []byte) (rules.Verdict, error) {
	name := cfg.agent
	if name == "" || name == "auto" {
		detected, err := agent.Detect(payload)
		if err != nil {
			return daemon.FailVerdict(rules.Call{}, "narrowd could not tell which agent sent this payload"), err
		}
		name = detected
	}
	call, err := agent.Decode(name, bytes.NewReader(payload))
	if err != nil {
		return daemon.FailVerdict(rules.Call{Agent: name}, "narrowd could not decode the hook payload"), err
	}
	if len(cfg.workspaces) > 0 {
		call.Workspaces = append([]string(nil), cfg.workspaces...)
	}
	return eng.Judge(call, rules.Session{}), nil
}

func runExplain(ctx context.Context, e env, args []string) error {
	var cfg checkConfig
	fs := checkFlags("explain", e, &cfg)
	if err := fs.Parse(args); err != nil {
		return exitError{1}
	}
	eng, err := daemon.NewEngine(daemon.EngineConfig{Profile: cfg.profile})
	if err != nil {
		return err
	}
	payload, err := readBounded(e.stdin)
	if err != nil {
		return err
	}
	v, jerr := judgePayload(eng, cfg, payload)
	writeExplanation(e.stdout, v)
	if jerr != nil {
		return jerr
	}
	return nil
}

// writeExplanation prints a verdict for a person: labels beside the
// ceiling, each piece of evidence, and the rule that decided.
func writeExplanation(w io.Writer, v rules.Verdict) {
	fmt.Fprintf(w, "%s %s  (key %s, risk class %s)\n\n", v.Agent, v.Tool, v.Key, v.RiskClass)
	if v.Ceiling == nil {
		fmt.Fprintln(w, "labels: none recorded; the tool is unlabelled (absent is unknown)")
	} else {
		fmt.Fprintf(w, "  %-22s %-24s %s\n", "label", "ceiling", "narrowed")
		for _, d := range rules.Dims() {
			mark := ""
			if v.Narrowed.Get(d) < v.Ceiling.Get(d) {
				mark = "  ↓"
			}
			fmt.Fprintf(w, "  %-22s %-24s %s%s\n", d, v.Ceiling.Value(d), v.Narrowed.Value(d), mark)
		}
		for f := range rules.Fact(rules.NumFacts) {
			fmt.Fprintf(w, "  %-22s %-24t %t\n", f, v.Ceiling.Fact(f), v.Narrowed.Fact(f))
		}
	}
	fmt.Fprintln(w, "\nevidence:")
	if len(v.Evidence) == 0 {
		fmt.Fprintln(w, "  (none)")
	}
	for _, ev := range v.Evidence {
		fmt.Fprintf(w, "  [%s] %s %q: %s", ev.Strength, ev.Kind, ev.Subject, ev.Detail)
		if ev.Effect != rules.NoEffect {
			fmt.Fprintf(w, "  ⇒ %s", ev.Effect)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "\ndecision: %s by rule %s: %s\n", v.Decision.Outcome, v.Decision.Rule, v.Decision.Reason)
	fmt.Fprintf(w, "at the ceiling the profile would say: %s\n", v.CeilingOutcome)
}

func runProfile(ctx context.Context, e env, args []string) error {
	if len(args) != 2 || args[0] != "check" {
		fmt.Fprintln(e.stderr, "usage: narrowd profile check FILE")
		return exitError{1}
	}
	data, err := os.ReadFile(args[1])
	if err != nil {
		return err
	}
	problems := rules.CheckProfile(args[1], data)
	for _, p := range problems {
		fmt.Fprintln(e.stdout, p)
	}
	if len(problems) > 0 {
		return exitError{1}
	}
	fmt.Fprintf(e.stdout, "%s: ok\n", args[1])
	return nil
}
