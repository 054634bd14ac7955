package agent

import (
	"errors"
	"strings"
	"testing"
)

// Copilot 1.0.102's permissionRequest for its create and edit tools, as
// the e2e suite captured it: toolName "edit", toolInput {file_path, diff}.
func TestCopilotPermissionRequestFilePath(t *testing.T) {
	const diff = `"diff":"\n--- a/dev/null\n+++ b/p/new.txt\n@@ -1,0 +1,1 @@\n+x\n"`
	for _, tc := range []struct {
		name, input, wantPath string
		wantErr               error
	}{
		{"file_path only", `{"file_path":"/p/new.txt",` + diff + `}`, "/p/new.txt", nil},
		{"path only", `{"path":"/p/a.txt"}`, "/p/a.txt", nil},
		{"same file twice", `{"path":"/p/a.txt","file_path":"/p/a.txt"}`, "/p/a.txt", nil},
		{"two files", `{"path":"/p/a.txt","file_path":"/etc/passwd"}`, "", ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			payload := `{"hookName":"permissionRequest","sessionId":"s","timestamp":1,"cwd":"/p","toolName":"edit","toolInput":` + tc.input + `,"permissionSuggestions":[]}`
			call, err := DecodeEvent(Copilot, "permissionRequest", strings.NewReader(payload))
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := call.Input["path"]; got != tc.wantPath {
				t.Errorf("path = %v, want %s", got, tc.wantPath)
			}
		})
	}
	// The pre-tool payload keeps its own keys.
	pre := `{"sessionId":"s","timestamp":1,"cwd":"/p","toolName":"create","toolArgs":{"path":"/p/a","file_path":"/elsewhere"}}`
	call, err := DecodeEvent(Copilot, "preToolUse", strings.NewReader(pre))
	if err != nil {
		t.Fatal(err)
	}
	if call.Input["path"] != "/p/a" {
		t.Errorf("pre-tool path = %v, want /p/a", call.Input["path"])
	}
}

// Copilot 1.0.102 names the event of a permissionRequest in hookName, so
// it decodes as one even where the hook command does not say so.
func TestCopilotHookName(t *testing.T) {
	payload := `{"hookName":"permissionRequest","sessionId":"s","timestamp":1,"cwd":"/p","toolName":"bash","toolInput":{"command":"ls"},"permissionSuggestions":[]}`
	for _, configured := range []string{"", "permissionRequest"} {
		call, err := DecodeEvent(Copilot, configured, strings.NewReader(payload))
		if err != nil {
			t.Fatal(err)
		}
		if call.Event != "permissionRequest" {
			t.Errorf("configured %q: event = %q, want permissionRequest", configured, call.Event)
		}
	}
	// The configured event wins over the payload's word.
	call, err := DecodeEvent(Copilot, "preToolUse", strings.NewReader(payload))
	if err != nil {
		t.Fatal(err)
	}
	if call.Event != "preToolUse" {
		t.Errorf("configured preToolUse: event = %q", call.Event)
	}
}
