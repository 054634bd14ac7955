// Package install edits coding agents' hook settings so that they call
// narrowd, and renders narrowd's systemd user units.
//
// Every edit merges: the settings file is read as ordered JSON, narrowd's
// hook entries are added or updated in place, and every other key, hook
// entry and unknown field is kept. An edit is idempotent, keeps a backup of
// the file it changes, and replaces the file atomically. A file that is not
// valid JSON is refused and never written. [Uninstall] removes exactly the
// entries [Install] adds.
//
// The package reads no environment: the caller passes the home directory,
// the binary path and the clock in a [Config]. It never runs the agents,
// systemctl or any other program. Its API is not stable.
package install
