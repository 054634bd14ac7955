// Package daemon is narrowd's resident service and its decision pipeline:
// the Unix socket and loopback HTTP listeners, peer checks, the hook
// protocol, session history, the audit log, Prometheus metrics, profile
// reload and systemd integration. Everything with a socket, a clock or a
// signal lives here. Its API is not stable.
//
// # Listeners
//
// The shim (`narrowd hook AGENT`) POSTs the agent's raw payload to
// /v1/hook/{agent} on the Unix socket and gets an [Envelope] back: the
// agent's reply (stdout, stderr, exit code) and the audit id; an optional
// event query parameter carries the hook's configured event (narrowd hook
// --event), which Copilot's camelCase payloads do not name. A payload
// with another agent's shape (Copilot and Cursor also run the hooks in
// .claude/settings.json) is judged and answered as the agent that sent
// it; one whose sender cannot be told is blocked. Claude
// Code's "type":"http" hooks POST to /hook/claude on the loopback HTTP
// listener and get Claude's JSON reply as a 200 body (Claude ignores
// status codes, so every block is in the body). /metrics is served on its
// own loopback listener from a private registry. Every connection must
// come from the daemon's own uid (SO_PEERCRED on the socket, the kernel's
// socket table for loopback TCP); others get 403 and are counted.
//
// # Abstain, then allow at the permission request
//
// A prompt is only avoided if the agent would have asked. Claude Code and
// Codex (PermissionRequest) and Copilot (permissionRequest) have a hook
// that fires exactly when they are about to ask a person. For them,
// narrowd gives no opinion at pre-tool time for a call it would allow
// (the agent's own rules run it, or it asks, and then narrowd hears the
// permission request), and answers allow at the permission request:
// narrowd_prompts_avoided_total counts those. Deny and ask verdicts are
// answered at pre-tool time as usual. Gemini and Cursor have no such
// hook: narrowd allows at pre-tool time and counts
// narrowd_prompts_avoided_estimate_total when the un-narrowed ceiling
// would not have been allowed. Config.AllowAtPreTool
// (abstain_for_permission_request = false, or serve --allow-at-pretool)
// turns the protocol off: allow at pre-tool time for every agent, counted
// only as estimates.
//
// # Durability
//
// A decision's audit record (audit.jsonl in the audit directory, rotated
// by size) is written before the reply is sent, so a killed daemon loses
// no record it answered for, and fsynced at most
// Config.AuditSyncWithin (10 ms) later: at once when the log is idle,
// and shared by the records of that interval under load. A crash of the
// machine can lose only that interval. AuditSyncBeforeAnswer (serve
// --audit-sync-within 0) fsyncs each record before its reply instead, at
// about a third of the daemon's throughput on a virtual disk. A record
// that cannot be written, or that the disk does not take within
// Config.AuditTimeout, turns the call into a blocking reply, and so does
// the first call after an fsync fails. Session
// history (sessions.jsonl in the state directory) is appended and fsynced
// on every post-tool event and replayed at start. A session is known only
// while its history is complete as far as narrowd can tell: one the shim
// handled without the daemon, or that was dropped to bound memory, reads
// as unknown, and unknown never relaxes. History begins when narrowd
// first sees a session, so calls made before the daemon ever ran are not
// in it.
package daemon
