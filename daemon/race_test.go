//go:build race

package daemon

// raceEnabled: the race detector slows the engine several times over,
// so bounds on time are not checked under it.
const raceEnabled = true
