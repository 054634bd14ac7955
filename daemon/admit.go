package daemon

import (
	"runtime"
	"time"
)

// Admission control. A burst of thousands of calls, all judged at once
// on two cores, made every one of them slow: records timed out and
// calls whose clients had left were still judged. Judging is bounded
// instead: a few calls at a time, and only one or two large payloads
// (which cost the most) so that a hostile session cannot hold every
// slot. A call that cannot get a slot before its client would give up
// is shed at once, with a blocking reply, rather than judged too late.
type admission struct {
	slots chan struct{}
	heavy chan struct{}
	// wait bounds how long a call without a deadline waits for a slot:
	// the HTTP hook's client sends none, and waits up to its hook
	// timeout (Claude's default is a minute).
	wait time.Duration
}

// heavyPayload is the payload size above which a call takes a heavy
// slot as well: ordinary calls are a few hundred bytes.
const heavyPayload = 64 << 10

// admitMargin is how long before its client's deadline a call must get
// its slot: it still has to be judged, recorded and sent back.
const admitMargin = 500 * time.Millisecond

func newAdmission() *admission {
	n := runtime.GOMAXPROCS(0)
	return &admission{
		slots: make(chan struct{}, 4*n),
		heavy: make(chan struct{}, max(1, n/2)),
		wait:  30 * time.Second,
	}
}

// admit takes the slots a call of size bytes needs, waiting until the
// client's deadline less admitMargin (or a.wait without one). It returns
// the release, or false when the call must be shed.
func (a *admission) admit(size int, deadline time.Time) (release func(), ok bool) {
	limit := time.Now().Add(a.wait)
	if !deadline.IsZero() {
		limit = deadline.Add(-admitMargin)
	}
	var timer *time.Timer
	take := func(c chan struct{}) bool {
		select {
		case c <- struct{}{}:
			return true
		default:
		}
		d := time.Until(limit)
		if d <= 0 {
			return false
		}
		if timer == nil {
			timer = time.NewTimer(d)
		}
		select {
		case c <- struct{}{}:
			return true
		case <-timer.C:
			return false
		}
	}
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	if size > heavyPayload {
		if !take(a.heavy) {
			return nil, false
		}
		if !take(a.slots) {
			<-a.heavy
			return nil, false
		}
		return func() { <-a.slots; <-a.heavy }, true
	}
	if !take(a.slots) {
		return nil, false
	}
	return func() { <-a.slots }, true
}
