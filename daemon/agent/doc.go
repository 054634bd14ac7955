// Package agent speaks each coding agent's hook protocol: it decodes a hook
// payload from Claude Code, Codex CLI, Gemini CLI, Copilot CLI or Cursor
// into a [rules.Call], and encodes a [rules.Decision] into the exact reply
// (stdout, stderr, exit code) that agent obeys.
//
// The one rule it keeps above all others: no agent may run a call because
// of how narrowd encoded ask or deny. Where an agent cannot ask a person
// (headless runs, Codex, Copilot, Cursor's preToolUse and beforeReadFile),
// ask becomes a deny whose reason tells the person how to approve. Each
// agent file records which reply blocks and where that was proven
// (research/real-clients.md, research/hooks.md).
//
// Decode is strict: the input is bounded by [MaxPayload], must be valid
// UTF-8, one JSON object without duplicate keys, without NUL characters
// and without unpaired surrogate escapes, and must not carry another
// agent's marks ([ErrAgentMismatch]; [Detect] then names the sender). A
// payload that does not decode gets [Fail], which blocks. The
// agent-facing reason in a reply is always separate from internal error
// text.
//
// It never holds policy, opens a socket or reads the environment. Its API
// is not stable.
package agent
