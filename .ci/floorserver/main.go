// Command floorserver is the throughput floor for .ci/bench-hook.sh: an
// HTTP/1.1 keep-alive server that reads each request and answers a fixed
// empty 200, judging nothing. Driven by .ci/loadgen exactly as narrowd's
// HTTP hook is, it shows how many exchanges per second this machine allows
// at all with the load generator on the same cores, so the daemon's figure
// can be read against it. With -fsync FILE it also appends each request's
// line to FILE and fsyncs before answering, sharing one fsync among the
// requests that arrive meanwhile, as narrowd's audit does. With -line N
// each appended line is N bytes long, the request padded or cut: on a
// virtual disk every byte fsynced costs the writer CPU, so the floor for
// narrowd is the one with lines as long as its audit records.
//
//	go run ./.ci/floorserver -addr 127.0.0.1:PORT [-fsync FILE [-line BYTES]]
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"strconv"
	"sync"
)

const reply = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "loopback address to listen on")
	fsyncPath := flag.String("fsync", "", "append and fsync each request to this file before answering")
	lineSize := flag.Int("line", 0, "with -fsync, append lines of this many bytes (0: the request as it came)")
	flag.Parse()
	var j *journal
	if *fsyncPath != "" {
		f, err := os.OpenFile(*fsyncPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			log.Fatal(err)
		}
		j = newJournal(f)
		j.lineSize = *lineSize
	}
	l, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(l.Addr())
	for {
		c, err := l.Accept()
		if err != nil {
			log.Fatal(err)
		}
		go serve(c, j)
	}
}

func serve(c net.Conn, j *journal) {
	defer c.Close()
	r := bufio.NewReader(c)
	var body []byte
	for {
		length := -1
		for {
			line, err := r.ReadSlice('\n')
			if err != nil {
				return
			}
			line = bytes.TrimRight(line, "\r\n")
			if len(line) == 0 {
				break
			}
			if k, v, ok := bytes.Cut(line, []byte(":")); ok && bytes.EqualFold(k, []byte("content-length")) {
				if length, err = strconv.Atoi(string(bytes.TrimSpace(v))); err != nil {
					return
				}
			}
		}
		if length < 0 || length > 1<<20 {
			return
		}
		if cap(body) < length {
			body = make([]byte, length, length+1)
		}
		body = body[:length]
		if _, err := io.ReadFull(r, body); err != nil {
			return
		}
		if j != nil {
			if err := j.append(append(body, '\n')); err != nil {
				return
			}
		}
		if _, err := io.WriteString(c, reply); err != nil {
			return
		}
	}
}

// journal is a minimal group commit: appends wait for the batch they
// joined to be written and fsynced.
type journal struct {
	f        *os.File
	lineSize int
	mu       sync.Mutex
	cur      *batch
	busy     bool
}

type batch struct {
	buf  []byte
	done chan struct{}
	err  error
}

func newJournal(f *os.File) *journal { return &journal{f: f, cur: &batch{done: make(chan struct{})}} }

func (j *journal) append(line []byte) error {
	j.mu.Lock()
	b := j.cur
	if j.lineSize > 0 {
		// The request on one line, cut or padded with spaces.
		body := line[:len(line)-1]
		for i := range j.lineSize - 1 {
			c := byte(' ')
			if i < len(body) && body[i] != '\n' {
				c = body[i]
			}
			b.buf = append(b.buf, c)
		}
		b.buf = append(b.buf, '\n')
	} else {
		b.buf = append(b.buf, line...)
	}
	lead := !j.busy
	if lead {
		j.busy = true
	}
	j.mu.Unlock()
	if lead {
		j.flush()
	}
	<-b.done
	return b.err
}

// flush writes batches until none is waiting.
func (j *journal) flush() {
	for {
		j.mu.Lock()
		b := j.cur
		if len(b.buf) == 0 {
			j.busy = false
			j.mu.Unlock()
			return
		}
		j.cur = &batch{done: make(chan struct{})}
		j.mu.Unlock()
		_, b.err = j.f.Write(b.buf)
		if b.err == nil {
			b.err = j.f.Sync()
		}
		close(b.done)
	}
}
