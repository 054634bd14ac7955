// Package e2e drives the real agent CLIs (Claude Code, Codex, Gemini CLI,
// Copilot CLI), installed from npm at pinned versions, against a scripted
// fake model server on 127.0.0.1, with narrowd installed into each client
// by `narrowd install` and a real `narrowd serve` answering its hooks. The
// package has only tests; they skip with one loud line when npm or its
// registry is missing, and fail instead when CI or NARROWD_E2E_REQUIRE=1
// is set.
package e2e
