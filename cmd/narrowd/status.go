package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/narrowd/narrowd/daemon"
)

const statusUsage = `status [--socket PATH] [--config FILE] [--json]`

// runStatus asks the daemon how it is; exit 1 when it is not running.
func runStatus(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "status", statusUsage)
	socket := fs.String("socket", "", "the daemon's socket (default from the config file)")
	configPath := fs.String("config", "", "config file")
	asJSON := fs.Bool("json", false, "print the status as JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	sock := *socket
	if sock == "" {
		c, err := loadConfig(e, *configPath)
		if err != nil {
			return err
		}
		c.defaults(e)
		sock = c.Socket
	}
	client := daemon.Client{Socket: sock, Timeout: 2 * time.Second}
	st, err := client.Status(ctx)
	if err != nil {
		return fmt.Errorf("daemon not running at %s: %w", sock, err)
	}
	if *asJSON {
		b, _ := json.MarshalIndent(st, "", "  ")
		fmt.Fprintf(e.stdout, "%s\n", b)
		return nil
	}
	w := e.stdout
	fmt.Fprintf(w, "narrowd %s running (pid %d) since %s\n", st.Version, st.PID, st.Started.Local().Format(time.RFC3339))
	fmt.Fprintf(w, "socket     %s\n", st.Socket)
	fmt.Fprintf(w, "profile    %s\n", st.Profile)
	fmt.Fprintf(w, "audit      %s (fsync %s)\n", st.AuditDir, st.AuditSync)
	fmt.Fprintf(w, "state      %s\n", st.StateDir)
	mode := "abstain at pre-tool, allow at permission request"
	if st.AllowAtPreTool {
		mode = "allow at pre-tool"
	}
	fmt.Fprintf(w, "mode       %s\n", mode)
	if st.Sandbox {
		fmt.Fprintf(w, "sandbox    %s --ticket T (tickets live %s)\n", st.SandboxWrapper, st.TicketTTL)
	} else {
		fmt.Fprintf(w, "sandbox    off: this daemon issues no tickets (no Landlock, or no socket)\n")
	}
	if st.LastReloadErr != "" {
		fmt.Fprintf(w, "reload     last reload failed: %s\n", st.LastReloadErr)
	}
	printMCPStatus(w, st.MCP)
	return nil
}

// printMCPStatus shows discovery: each server and how its listing went,
// the tools by label state, and the drifts seen. Server names, tool names
// and errors come from configuration files and servers: they are printed
// quoted, as data.
func printMCPStatus(w io.Writer, m *daemon.MCPStatus) {
	if m == nil {
		fmt.Fprintf(w, "mcp        discovery off\n")
		return
	}
	if m.Rounds == 0 {
		fmt.Fprintf(w, "mcp        discovery running its first round\n")
		return
	}
	counts := map[string]int{}
	for _, t := range m.Tools {
		counts[t.State]++
	}
	fmt.Fprintf(w, "mcp        %d servers, %d tools: %d labelled, %d unlabelled, %d drifted; %d drifts seen\n",
		len(m.Servers), len(m.Tools), counts[daemon.MCPLabelled], counts[daemon.MCPUnlabelled], counts[daemon.MCPDrifted], m.DriftTotal)
	for _, s := range m.Servers {
		where := "user"
		if s.Project != "" {
			where = "project " + escapeInvisible(s.Project)
		}
		state := fmt.Sprintf("%d tools", s.Tools)
		if s.Error != "" {
			state = fmt.Sprintf("not listed (its tools are unlabelled): %q", s.Error)
		}
		fmt.Fprintf(w, "  server   %s %q (%s, %s): %s\n", s.Agent, s.Name, where, s.Transport, state)
	}
	for _, t := range m.Tools {
		if t.State != daemon.MCPLabelled {
			fmt.Fprintf(w, "  tool     %q %s %s\n", t.Key, t.State, t.DefHash)
		}
	}
	for _, d := range m.Drifts {
		fmt.Fprintf(w, "  drift    %q at %s: %s → %s (its labels no longer apply; narrowd label %q)\n",
			d.Key, d.At.Local().Format(time.RFC3339), short(d.OldHash), short(d.NewHash), d.Key)
	}
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}
