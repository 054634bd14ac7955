package e2e

// The Gemini API dialect of the fake model, as Gemini CLI uses it
// (real-clients.md §2): POST /v1beta/models/MODEL:streamGenerateContent
// ?alt=sse for the main loop, answered with server-sent events of
// GenerateContentResponse JSON, and POST …:generateContent for side
// queries such as the CLI's model router, which wants a JSON complexity
// score.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// gemini is the Gemini API dialect.
type gemini struct{}

// HandleGemini serves the Gemini API on m; GOOGLE_GEMINI_BASE_URL is
// m.URL().
func (m *FakeModel) HandleGemini() {
	m.Handle("POST /v1beta/models/{call}", gemini{})
}

type geminiRequest struct {
	Contents []struct {
		Role  string `json:"role"`
		Parts []struct {
			Text             string          `json:"text"`
			FunctionCall     json.RawMessage `json:"functionCall"`
			FunctionResponse *struct {
				ID       string                     `json:"id"`
				Name     string                     `json:"name"`
				Response map[string]json.RawMessage `json:"response"`
			} `json:"functionResponse"`
		} `json:"parts"`
	} `json:"contents"`
	GenerationConfig struct {
		ResponseJSONSchema json.RawMessage `json:"responseJsonSchema"`
	} `json:"generationConfig"`
}

// Decode implements Dialect: the prompt is the user turns' text, the turn
// the number of model turns with a functionCall, the results the
// functionResponse parts (an "error" response is a refused or failed
// call). A side query that asks for JSON output (the model router) names
// no scenario, so it is recorded apart from the scenario's requests and
// gets no tool call.
func (gemini) Decode(body []byte) (Decoded, error) {
	var req geminiRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return Decoded{}, fmt.Errorf("generateContent request: %w", err)
	}
	var d Decoded
	if len(req.GenerationConfig.ResponseJSONSchema) > 0 {
		return d, nil
	}
	for _, c := range req.Contents {
		called := false
		for _, p := range c.Parts {
			switch {
			case len(p.FunctionCall) > 0:
				called = true
			case p.FunctionResponse != nil:
				res := ToolResult{ID: p.FunctionResponse.ID}
				if e, ok := p.FunctionResponse.Response["error"]; ok {
					res.Text, res.IsError = jsonText(e), true
				} else {
					res.Text = jsonText(p.FunctionResponse.Response["output"])
				}
				d.Results = append(d.Results, res)
			case c.Role == "user" && p.Text != "":
				d.Prompt += p.Text + "\n"
			}
		}
		if c.Role == "model" && called {
			d.Turn++
		}
	}
	return d, nil
}

// jsonText is a JSON string's value, or the raw JSON of anything else.
func jsonText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// Write implements Dialect. The main loop gets one SSE event with every
// call as a functionCall part (or the text); a side query gets a plain
// JSON response whose text satisfies the router's schema (the score must
// be an integer ≥ 1).
func (gemini) Write(w http.ResponseWriter, r *http.Request, _ []byte, calls []EncodedCall, text string) {
	if !strings.HasSuffix(r.PathValue("call"), ":streamGenerateContent") {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(geminiResponse([]any{map[string]any{
			"text": `{"complexity_reasoning":"a scripted test","complexity_score":1}`}}))
		return
	}
	var parts []any
	for _, c := range calls {
		parts = append(parts, map[string]any{"functionCall": map[string]any{
			"id": "call_" + c.ID, "name": c.Name, "args": c.Input}})
	}
	if len(calls) == 0 {
		parts = append(parts, map[string]any{"text": text})
	}
	w.Header().Set("Content-Type", "text/event-stream")
	b, _ := json.Marshal(geminiResponse(parts))
	fmt.Fprintf(w, "data: %s\r\n\r\n", b)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// geminiResponse is a GenerateContentResponse with one candidate.
func geminiResponse(parts []any) map[string]any {
	return map[string]any{
		"candidates": []any{map[string]any{
			"content":      map[string]any{"role": "model", "parts": parts},
			"finishReason": "STOP",
			"index":        0,
		}},
		"usageMetadata": map[string]any{"promptTokenCount": 50, "candidatesTokenCount": 20, "totalTokenCount": 70},
	}
}
