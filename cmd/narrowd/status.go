package main

import (
	"context"
	"encoding/json"
	"fmt"
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
	fmt.Fprintf(w, "audit      %s\n", st.AuditDir)
	fmt.Fprintf(w, "state      %s\n", st.StateDir)
	mode := "abstain at pre-tool, allow at permission request"
	if st.AllowAtPreTool {
		mode = "allow at pre-tool"
	}
	fmt.Fprintf(w, "mode       %s\n", mode)
	if st.LastReloadErr != "" {
		fmt.Fprintf(w, "reload     last reload failed: %s\n", st.LastReloadErr)
	}
	return nil
}
