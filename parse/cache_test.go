package parse

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// cacheInputs is every text the analyzer's tests know, and the corpus.
func cacheInputs(t *testing.T) []string {
	in := allInputs()
	for _, e := range corpusEntries(t) {
		in = append(in, e.Command)
	}
	return in
}

// TestCacheMatchesAnalyze holds a cached analysis to the one Analyze
// gives, on the first lookup and on a hit, and checks that a hit is one.
func TestCacheMatchesAnalyze(t *testing.T) {
	t.Parallel()
	k, err := DefaultKnowledge()
	if err != nil {
		t.Fatal(err)
	}
	in := cacheInputs(t)
	c := NewCache(k, len(in))
	for _, src := range in {
		want := Analyze(src, k)
		first := c.Analyze(src)
		if !reflect.DeepEqual(first, want) {
			t.Fatalf("%q: cached analysis differs:\n got %+v\nwant %+v", src, first, want)
		}
		again := c.Analyze(src)
		if len(src) <= maxCachedText && again != first {
			t.Fatalf("%q: second lookup analyzed again", src)
		}
		if !reflect.DeepEqual(again, want) {
			t.Fatalf("%q: cache hit differs", src)
		}
	}
}

// TestCacheBounded: whatever is sent, the cache holds at most two
// generations, keeps a text that is in use, and never keeps long texts.
func TestCacheBounded(t *testing.T) {
	t.Parallel()
	k := syntaxKnowledge(t)
	const size = 8
	c := NewCache(k, size)
	hot := "git status"
	c.Analyze(hot)
	keptHot := c.Analyze(hot)
	for i := range 10 * size {
		c.Analyze(fmt.Sprintf("echo %d", i))
		if c.Analyze(hot) != keptHot {
			t.Fatalf("after %d other texts, a text looked up each time was analyzed again", i+1)
		}
		if n := len(c.cur) + len(c.old); n > 2*size {
			t.Fatalf("cache holds %d texts, more than %d", n, 2*size)
		}
	}
	if _, ok := c.cur["echo 0"]; ok {
		t.Fatal("the oldest text is still in the current generation")
	}
	if _, ok := c.old["echo 0"]; ok {
		t.Fatal("the oldest text was never dropped")
	}

	// Analyzed anew each time: two lookups give two analyses.
	analyzedTwice := func(c *Cache, src string) bool {
		first := c.Analyze(src)
		return first != c.Analyze(src)
	}
	if !analyzedTwice(c, "echo "+strings.Repeat("x", maxCachedText)) {
		t.Fatal("a long text was cached")
	}
	if !analyzedTwice(NewCache(k, 0), hot) {
		t.Fatal("a cache of size 0 cached")
	}
}

// TestCacheConcurrent looks texts up from many goroutines, for the race
// detector, through generation changes.
func TestCacheConcurrent(t *testing.T) {
	t.Parallel()
	k := syntaxKnowledge(t)
	in := allInputs()
	c := NewCache(k, 16)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				src := in[(g*31+i)%len(in)]
				if got, want := c.Analyze(src), Analyze(src, k); !reflect.DeepEqual(got, want) {
					t.Errorf("%q: concurrent cached analysis differs", src)
					return
				}
			}
		})
	}
	wg.Wait()
}

// BenchmarkCacheHit is a repeated command: a lookup instead of a parse.
func BenchmarkCacheHit(b *testing.B) {
	k := syntaxKnowledge(b)
	c := NewCache(k, 512)
	const src = `cd /work/app && git status --short && go test ./... 2>&1 | tail -n 20`
	c.Analyze(src)
	b.ReportAllocs()
	for b.Loop() {
		c.Analyze(src)
	}
}
