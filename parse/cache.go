package parse

import (
	"strings"
	"sync"
)

// Cache remembers the analyses of recent shell texts. Analyze is a pure
// function of the text and the table, and agents send the same commands
// again and again (git status, the test command, ls), so a daemon that
// judges one call after another need not parse each again.
//
// The analyses it returns are shared between callers: they must not be
// modified.
//
// It holds at most about 2×size texts in two generations: once the
// current one is full it becomes the old one and the oldest is dropped,
// so texts in use stay and memory stays bounded whatever is sent.
type Cache struct {
	k    *Knowledge
	size int

	mu       sync.Mutex
	cur, old map[string]*Analysis
}

// maxCachedText bounds the texts kept: a long script is rarely sent
// twice and would cost more memory than its parse costs time.
const maxCachedText = 1024

// NewCache returns a cache of analyses made with k. A size below 1
// caches nothing.
func NewCache(k *Knowledge, size int) *Cache {
	return &Cache{k: k, size: size, cur: map[string]*Analysis{}}
}

// Analyze returns Analyze(src, k), from the cache when src was analyzed
// recently. The result must not be modified.
func (c *Cache) Analyze(src string) *Analysis {
	if c.size < 1 || len(src) > maxCachedText {
		return Analyze(src, c.k)
	}
	c.mu.Lock()
	a, ok := c.cur[src]
	if !ok {
		if a, ok = c.old[src]; ok {
			c.keep(src, a)
		}
	}
	c.mu.Unlock()
	if ok {
		return a
	}
	a = Analyze(src, c.k)
	// A copy: src may be part of a larger string the cache must not pin.
	key := strings.Clone(src)
	c.mu.Lock()
	c.keep(key, a)
	c.mu.Unlock()
	return a
}

// keep adds src to the current generation, starting a new one when it is
// full. c.mu is held.
func (c *Cache) keep(src string, a *Analysis) {
	if len(c.cur) >= c.size {
		c.old, c.cur = c.cur, make(map[string]*Analysis, c.size)
	}
	c.cur[src] = a
}
