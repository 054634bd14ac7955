// Package mcp finds the MCP tools the agents can call and what each one
// is, so that labels can bind to (key, def_hash) as spec §1 asks. No
// agent passes an MCP tool's definition to its hooks (research/hooks.md
// §0), so narrowd reads each agent's MCP server configuration, project
// and user level ([Locate]), connects to every server as an MCP client
// with the official Go SDK over stdio, streamable HTTP or SSE ([Lister]),
// runs tools/list with pagination, and hashes each tool entry exactly as
// the server sent it ([rules.DefHash]).
//
// A server is untrusted input. Listing is bounded in time, bytes, pages
// and tools: a server that hangs, answers garbage or lists too many tools
// fails discovery, and its tools stay unlabelled, which never allows by
// default. Stdio servers are started through a [Launcher]; the default
// one gives them no network (a new user and network namespace), because
// a repository's .mcp.json is a repository program and narrowd never runs
// those unconfined.
//
// The [Registry] keeps what was found and notices drift: when a tool's
// definition changes, its key keeps the old labels only in history, the
// tool is unlabelled from the next call on, and the drift is counted. A
// description is data: nothing here reads it for meaning.
//
// Agents name MCP tools in their own way (Claude Code and Codex
// mcp__server__tool, Gemini CLI mcp_server_tool, Copilot CLI
// server-tool, Cursor MCP:tool); [Registry.Resolve] maps the name an
// agent sent to a key only through the tools discovered from that
// agent's own configuration, never by splitting the name on a guess.
package mcp
