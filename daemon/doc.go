// Package daemon is narrowd's resident service and its decision pipeline:
// the Unix socket and loopback HTTP listeners, peer checks, the hook
// protocol, session history, the audit log, Prometheus metrics, profile
// reload and systemd integration. Everything with a socket, a clock or a
// signal lives here. Its API is not stable.
package daemon
