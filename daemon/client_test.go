package daemon

import (
	"context"
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/narrowd/narrowd/daemon/hookclient"
)

// TestClientOlderDaemon: a daemon from before the raw reply answers the
// JSON envelope whatever the shim accepts; the full shim decodes it, and
// blocks on one it cannot trust.
func TestClientOlderDaemon(t *testing.T) {
	cases := []struct {
		name, body string
		want       Envelope
		unusable   bool
	}{
		{"block", `{"stdout":"e30K","stderr":"no\n","exit_code":2,"id":"ab"}`, Envelope{ID: "ab"}, false},
		{"allow", `{"stdout":null,"stderr":"","exit_code":0}`, Envelope{}, false},
		{"exit 1", `{"stdout":null,"stderr":"","exit_code":1}`, Envelope{}, true},
		{"not json", `{"stdout":`, Envelope{}, true},
		// A listener that is not narrowd: an envelope missing its
		// fields is no abstain.
		{"empty object", `{}`, Envelope{}, true},
		{"null", `null`, Envelope{}, true},
		{"array", `[]`, Envelope{}, true},
		{"no exit code", `{"stdout":null,"stderr":""}`, Envelope{}, true},
		{"null exit code", `{"stdout":null,"stderr":"","exit_code":null}`, Envelope{}, true},
		{"no stdout", `{"stderr":"","exit_code":0}`, Envelope{}, true},
		{"exit code as text", `{"stdout":null,"stderr":"","exit_code":"0"}`, Envelope{}, true},
	}
	cases[0].want.Stdout, cases[0].want.Stderr, cases[0].want.ExitCode = []byte("{}\n"), "no\n", 2
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sock := filepath.Join(t.TempDir(), "old.sock")
			ln, err := net.Listen("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", ReplyType)
				w.Write([]byte(tc.body))
			})}
			go srv.Serve(ln)
			defer srv.Close()
			env, err := (&Client{Socket: sock}).Hook(context.Background(), "claude", []byte("{}"), nil)
			var unusable *hookclient.UnusableError
			switch {
			case tc.unusable:
				if !errors.As(err, &unusable) || errors.Is(err, ErrUnreachable) {
					t.Fatalf("Hook = %+v, %v; want an unusable answer", env, err)
				}
			case err != nil:
				t.Fatal(err)
			case string(env.Stdout) != string(tc.want.Stdout) || env.Stderr != tc.want.Stderr || env.ExitCode != tc.want.ExitCode || env.ID != tc.want.ID:
				t.Fatalf("Hook = %+v, want %+v", env, tc.want)
			}
		})
	}
}
