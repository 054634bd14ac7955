package daemon

import (
	"bytes"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/narrowd/narrowd/daemon/hookclient"
)

func TestAdmission(t *testing.T) {
	a := &admission{slots: make(chan struct{}, 2), heavy: make(chan struct{}, 1), wait: time.Second}
	r1, ok1 := a.admit(10, time.Time{})
	r2, ok2 := a.admit(10, time.Time{})
	if !ok1 || !ok2 {
		t.Fatal("free slots refused")
	}
	// Full: a call whose client gives up soon is shed at once.
	t0 := time.Now()
	if _, ok := a.admit(10, time.Now().Add(admitMargin+50*time.Millisecond)); ok {
		t.Fatal("a call admitted past the slots")
	}
	if d := time.Since(t0); d > 5*time.Second {
		t.Errorf("shedding took %v", d)
	}
	// A slot freed while a call waits is taken.
	go func() { time.Sleep(20 * time.Millisecond); r1() }()
	r3, ok := a.admit(10, time.Now().Add(time.Minute))
	if !ok {
		t.Fatal("a freed slot was not taken")
	}
	r2()
	r3()
	// One heavy call at a time, and it holds an ordinary slot too.
	h1, ok := a.admit(heavyPayload+1, time.Time{})
	if !ok || len(a.slots) != 1 {
		t.Fatalf("heavy call: %v, %d slots held", ok, len(a.slots))
	}
	if _, ok := a.admit(heavyPayload+1, time.Now().Add(admitMargin)); ok {
		t.Fatal("a second heavy call admitted")
	}
	if r, ok := a.admit(10, time.Time{}); !ok {
		t.Fatal("an ordinary call refused beside a heavy one")
	} else {
		r()
	}
	h1()
	if len(a.slots) != 0 || len(a.heavy) != 0 {
		t.Fatalf("slots not released: %d, %d", len(a.slots), len(a.heavy))
	}
}

// TestBurstAnswered releases 1,000 calls at once (200 under the race
// detector, which slows everything several times over), half on the
// socket as the shim sends them and half on the Claude HTTP hook: every
// one is answered, and (outside the race detector) none is blocked for
// load alone.
func TestBurstAnswered(t *testing.T) {
	if testing.Short() {
		t.Skip("a burst of 1,000 calls")
	}
	d := startDaemon(t, nil)
	payload := claudePayload("PreToolUse", "burst", "Bash", map[string]any{"command": "ls -la"})
	n := 1000
	if raceEnabled {
		n = 200
	}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		failed  []string
		blocked int
	)
	start := make(chan struct{})
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: n}}
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			var out []byte
			var err error
			if i%2 == 0 {
				var r hookclient.Reply
				r, err = hookclient.Ask(d.socket, time.Now().Add(3*time.Second), hookclient.Request{Agent: "claude", Payload: payload})
				out = append(r.Stdout, r.Stderr...)
			} else {
				var resp *http.Response
				resp, err = hc.Post(d.httpURL+"/hook/claude", "application/json", bytes.NewReader(payload))
				if err == nil {
					out, err = io.ReadAll(resp.Body)
					resp.Body.Close()
				}
			}
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				failed = append(failed, err.Error())
			case bytes.Contains(out, []byte("overloaded")) || bytes.Contains(out, []byte("could not record")):
				blocked++
			}
		}()
	}
	close(start)
	wg.Wait()
	t.Logf("%d calls: %d unanswered, %d blocked for load", n, len(failed), blocked)
	if len(failed) > 0 {
		t.Errorf("%d calls got no answer, e.g. %s", len(failed), failed[0])
	}
	if blocked > 0 && !raceEnabled {
		t.Errorf("%d calls blocked for load alone", blocked)
	}
}
