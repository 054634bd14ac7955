package e2e

// The OpenAI Responses API dialect of the fake model, as Codex CLI uses it
// through a custom model_provider (real-clients.md §4): POST /v1/responses
// with "stream": true, answered with server-sent events. Codex's shell
// tool is the function exec_command ({"cmd": …}); apply_patch is a custom
// (grammar) tool whose input is the raw patch text, so a scripted
// apply_patch call's Input is a JSON string.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
)

// openAI is the Responses API dialect.
type openAI struct{}

// HandleOpenAI serves the Responses API on m; Codex's base_url is
// m.URL()+"/v1".
func (m *FakeModel) HandleOpenAI() {
	m.Handle("POST /v1/responses", openAI{})
}

// responsesItem is one input item: a message, a tool call the model made
// earlier (function_call, custom_tool_call) or its result
// (function_call_output, custom_tool_call_output).
type responsesItem struct {
	Type    string          `json:"type"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	CallID  string          `json:"call_id"`
	Output  json.RawMessage `json:"output"`
}

// callTurnRE reads the turn out of a call id the fake gave (CallID).
var callTurnRE = regexp.MustCompile(`e2e_t(\d+)_c\d+$`)

// Decode implements Dialect: the prompt is the user messages' text, the
// turn the number of distinct model turns among the tool calls in the
// history (the fake's call ids name their turn; a call id it did not give
// counts as a turn of its own).
func (openAI) Decode(body []byte) (Decoded, error) {
	var req struct {
		Input []responsesItem `json:"input"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return Decoded{}, fmt.Errorf("responses request: %w", err)
	}
	var d Decoded
	turns := map[string]bool{}
	for i, it := range req.Input {
		switch it.Type {
		case "message":
			if it.Role == "user" {
				d.Prompt += contentText(it.Content) + "\n"
			}
		case "function_call", "custom_tool_call":
			key := fmt.Sprintf("foreign-%d", i)
			if m := callTurnRE.FindStringSubmatch(it.CallID); m != nil {
				key = m[1]
			}
			turns[key] = true
		case "function_call_output", "custom_tool_call_output":
			d.Results = append(d.Results, ToolResult{ID: it.CallID, Text: contentText(it.Output)})
		}
	}
	d.Turn = len(turns)
	return d, nil
}

// contentText flattens message content or a tool output: a string, or a
// list of parts with text (input_text, output_text, …).
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) == nil {
		texts := make([]string, 0, len(parts))
		for _, p := range parts {
			texts = append(texts, p.Text)
		}
		return strings.Join(texts, "\n")
	}
	return string(raw)
}

// Write implements Dialect: response.created, then for each call (or the
// final message) response.output_item.added and .done, then
// response.completed with usage, which Codex needs to close the turn.
func (openAI) Write(w http.ResponseWriter, _ *http.Request, _ []byte, calls []EncodedCall, text string) {
	var items []map[string]any
	for _, c := range calls {
		id := "call_" + c.ID
		if c.Name == "apply_patch" {
			var patch string
			if err := json.Unmarshal(c.Input, &patch); err != nil {
				patch = string(c.Input)
			}
			items = append(items, map[string]any{"type": "custom_tool_call", "id": "ctc_" + c.ID,
				"call_id": id, "name": c.Name, "input": patch, "status": "completed"})
			continue
		}
		items = append(items, map[string]any{"type": "function_call", "id": "fc_" + c.ID,
			"call_id": id, "name": c.Name, "arguments": string(c.Input), "status": "completed"})
	}
	if len(calls) == 0 {
		items = append(items, map[string]any{"type": "message", "role": "assistant", "id": "msg_e2e", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}})
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	ev := func(data map[string]any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", data["type"], b)
	}
	ev(map[string]any{"type": "response.created", "response": map[string]any{"id": "resp_e2e", "status": "in_progress"}})
	for i, it := range items {
		ev(map[string]any{"type": "response.output_item.added", "output_index": i, "item": it})
		ev(map[string]any{"type": "response.output_item.done", "output_index": i, "item": it})
	}
	ev(map[string]any{"type": "response.completed", "response": map[string]any{"id": "resp_e2e", "status": "completed",
		"usage": map[string]any{
			"input_tokens": 50, "input_tokens_details": map[string]any{"cached_tokens": 0},
			"output_tokens": 20, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
			"total_tokens": 70,
		}}})
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}
