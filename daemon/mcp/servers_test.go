package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/narrowd/narrowd/internal/testenv"
)

// The test binary is also the stdio MCP servers the tests start: with
// NARROWD_TEST_MCP set it becomes that server instead of running tests.
const serverEnv_ = "NARROWD_TEST_MCP"

func TestMain(m *testing.M) {
	if mode := os.Getenv(serverEnv_); mode != "" {
		os.Exit(runTestServer(mode))
	}
	code := m.Run()
	testenv.RemoveNarrowd()
	os.Exit(code)
}

// runTestServer is a stdio MCP server whose behaviour the mode picks.
func runTestServer(mode string) int {
	ctx := context.Background()
	switch {
	case mode == "hang":
		// Read everything, answer nothing.
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
		}
		time.Sleep(time.Hour)
		return 0
	case mode == "garbage":
		// An endless line of junk: never a valid frame.
		junk := []byte(strings.Repeat("\x00\xff{{not json]] ", 4096))
		for {
			if _, err := os.Stdout.Write(junk); err != nil {
				return 0
			}
		}
	case strings.HasPrefix(mode, "many:"):
		n, _ := strconv.Atoi(strings.TrimPrefix(mode, "many:"))
		var b strings.Builder
		b.WriteByte('[')
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"name":"tool_%05d","description":"one of many","inputSchema":{"type":"object"}}`, i)
		}
		b.WriteByte(']')
		return rawServer(b.String())
	case mode == "probe":
		// Names its tools after what it could do: reach a network, run
		// in the directory it was given, write there.
		names := []string{"net_blocked", "cwd_other", "write_denied"}
		ifs, _ := net.Interfaces()
		for _, i := range ifs {
			if i.Flags&net.FlagUp != 0 && i.Flags&net.FlagLoopback == 0 {
				names[0] = "net_open"
			}
		}
		if wd, _ := os.Getwd(); wd == os.Getenv("EXPECT_DIR") {
			names[1] = "cwd_ok"
		}
		if os.WriteFile("probe-write", []byte("x"), 0o600) == nil {
			names[2] = "write_ok"
		}
		s := sdk.NewServer(&sdk.Implementation{Name: "probe"}, nil)
		for _, n := range names {
			addTool(s, n, "a probe", nil)
		}
		s.Run(ctx, &sdk.StdioTransport{})
		return 0
	case mode == "raw":
		return rawServer(os.Getenv("NARROWD_TOOLS"))
	case mode == "notes":
		s := notesServer(os.Getenv("NOTES_DESCRIPTION"))
		s.Run(ctx, &sdk.StdioTransport{})
		return 0
	}
	fmt.Fprintln(os.Stderr, "unknown mode", mode)
	return 2
}

// rawServer answers initialize and tools/list by hand, with the tools
// array given as raw JSON, so tests control every byte a server sends.
func rawServer(tools string) int {
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(sc.Bytes(), &req) != nil || req.ID == nil {
			continue
		}
		var result string
		switch req.Method {
		case "initialize":
			result = `{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"raw","version":"1"}}`
		case "tools/list":
			result = `{"tools":` + tools + `}`
		default:
			fmt.Printf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"no"}}`+"\n", req.ID)
			continue
		}
		fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", req.ID, result)
	}
	return 0
}

var emptyObject = map[string]any{"type": "object"}

func addTool(s *sdk.Server, name, desc string, ann *sdk.ToolAnnotations) {
	s.AddTool(&sdk.Tool{Name: name, Description: desc, InputSchema: emptyObject, Annotations: ann},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{}, nil
		})
}

// notesServer has a read tool that takes a path and a send tool.
func notesServer(readDesc string) *sdk.Server {
	if readDesc == "" {
		readDesc = "Read one note by path."
	}
	s := sdk.NewServer(&sdk.Implementation{Name: "notes"}, nil)
	yes := true
	s.AddTool(&sdk.Tool{
		Name:        "read_note",
		Description: readDesc,
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}, "required": []any{"path"}},
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &yes},
	}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{}, nil
	})
	addTool(s, "send_note", "Send a note to anyone.", &sdk.ToolAnnotations{DestructiveHint: &yes})
	return s
}

// selfServer is a stdio server entry that runs this test binary in mode.
func selfServer(t *testing.T, agent, name, mode string, env map[string]string) Server {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	e := map[string]string{serverEnv_: mode}
	for k, v := range env {
		e[k] = v
	}
	return Server{Agent: agent, Name: name, Transport: Stdio, Command: exe, Env: e, Dir: t.TempDir()}
}

// recordingLauncher records each argv and starts it confined.
type recordingLauncher struct {
	mu    sync.Mutex
	argvs [][]string
	inner Launcher
}

func (r *recordingLauncher) Command(ctx context.Context, s Server) (*exec.Cmd, func(), error) {
	cmd, cleanup, err := r.inner.Command(ctx, s)
	if err == nil {
		r.mu.Lock()
		r.argvs = append(r.argvs, cmd.Args)
		r.mu.Unlock()
	}
	return cmd, cleanup, err
}
