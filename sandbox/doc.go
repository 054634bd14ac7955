// Package sandbox will hold the environment narrowd establishes itself
// (spec §5 rule 4): its own no-network, write-confined `narrowd exec`,
// verified from outside before a command is released, and its own
// snapshot store behind `narrowd undo`. Evidence from here is
// "established" and may relax a label; the agent's own sandbox settings
// are only "host_asserted".
//
// Nothing here is built yet, so no call is narrowed on a sandbox or a
// snapshot, and the profile outcome "sandbox" is asked about instead.
package sandbox
