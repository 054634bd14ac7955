package e2e

// The Anthropic Messages API dialect of the fake model, as Claude Code and
// Copilot CLI (BYOK, provider type anthropic) use it: POST /v1/messages,
// streamed as server-sent events.

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// anthropic is the Messages API dialect.
type anthropic struct{}

// HandleAnthropic serves the Messages API on m.
func (m *FakeModel) HandleAnthropic() {
	m.Handle("POST /v1/messages", anthropic{})
}

type anthropicRequest struct {
	Stream   bool `json:"stream"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

type anthropicBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// blocks reads a message's content: a string or a list of blocks.
func blocks(raw json.RawMessage) []anthropicBlock {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []anthropicBlock{{Type: "text", Text: s}}
	}
	var bs []anthropicBlock
	json.Unmarshal(raw, &bs)
	return bs
}

// Decode implements Dialect: the prompt is the first user message's text,
// the turn the number of assistant messages with a tool_use block.
func (anthropic) Decode(body []byte) (Decoded, error) {
	var req anthropicRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return Decoded{}, fmt.Errorf("messages request: %w", err)
	}
	var d Decoded
	promptSeen := false
	for _, msg := range req.Messages {
		bs := blocks(msg.Content)
		switch msg.Role {
		case "assistant":
			if hasToolUse(bs) {
				d.Turn++
			}
		case "user":
			for _, b := range bs {
				switch b.Type {
				case "text":
					if !promptSeen {
						d.Prompt += b.Text + "\n"
					}
				case "tool_result":
					d.Results = append(d.Results, ToolResult{ID: b.ToolUseID, Text: resultText(b.Content), IsError: b.IsError})
				}
			}
			promptSeen = promptSeen || strings.Contains(d.Prompt, "SCENARIO=")
		}
	}
	return d, nil
}

// msgID is a fresh message id: Claude Code merges the assistant messages
// that share one id into a single message.
func msgID() string {
	var b [8]byte
	rand.Read(b[:])
	return "msg_e2e_" + hex.EncodeToString(b[:])
}

func hasToolUse(bs []anthropicBlock) bool {
	for _, b := range bs {
		if b.Type == "tool_use" {
			return true
		}
	}
	return false
}

// resultText reads a tool_result's content: a string or text blocks.
func resultText(raw json.RawMessage) string {
	var parts []string
	for _, b := range blocks(raw) {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// Write implements Dialect: a streamed (SSE) message with one tool_use
// block per call (its input split into two input_json_delta chunks, as
// the real API does) and stop_reason tool_use, or one text block and
// end_turn. A non-streaming request gets the same message as JSON.
func (anthropic) Write(w http.ResponseWriter, r *http.Request, body []byte, calls []EncodedCall, text string) {
	var req anthropicRequest
	json.Unmarshal(body, &req)
	stop := "end_turn"
	if len(calls) > 0 {
		stop = "tool_use"
	}
	if !req.Stream {
		var content []map[string]any
		for _, c := range calls {
			content = append(content, map[string]any{"type": "tool_use", "id": "toolu_" + c.ID, "name": c.Name, "input": c.Input})
		}
		if len(calls) == 0 {
			content = append(content, map[string]any{"type": "text", "text": text})
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"id": msgID(), "type": "message", "role": "assistant", "model": "fake", "content": content,
			"stop_reason": stop, "stop_sequence": nil,
			"usage": map[string]int{"input_tokens": 50, "output_tokens": 20},
		})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	ev := func(name string, data any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
	}
	ev("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": msgID(), "type": "message", "role": "assistant", "model": "fake", "content": []any{},
		"stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]int{"input_tokens": 50, "output_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
	}})
	for i, c := range calls {
		ev("content_block_start", map[string]any{"type": "content_block_start", "index": i,
			"content_block": map[string]any{"type": "tool_use", "id": "toolu_" + c.ID, "name": c.Name, "input": map[string]any{}}})
		in := string(c.Input)
		half := len(in) / 2
		for _, part := range []string{in[:half], in[half:]} {
			ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": part}})
		}
		ev("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	if len(calls) == 0 {
		ev("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "text", "text": ""}})
		ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "text_delta", "text": text}})
		ev("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	}
	ev("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]int{"output_tokens": 20}})
	ev("message_stop", map[string]any{"type": "message_stop"})
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}
