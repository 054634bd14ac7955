// Package mcptest gives narrowd's tests a minimal MCP server over HTTP,
// answered by hand rather than by the SDK, so that tests control exactly
// what a server sends.
package mcptest

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// RawServer answers MCP over streamable HTTP: initialize, then tools/list
// with tools, a JSON array sent as it is.
func RawServer(tools string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if r.Method != http.MethodPost || json.NewDecoder(r.Body).Decode(&req) != nil {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		if req.ID == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		result := `{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"raw","version":"1"}}`
		if req.Method == "tools/list" {
			result = `{"tools":` + tools + `}`
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, req.ID, result)
	})
}
