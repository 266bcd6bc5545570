package hearth

import (
	"bufio"
	"net"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/mnemo/mnemo/ipc"
)

// maxTokenFrame bounds the text of one coalesced token frame.
const maxTokenFrame = 64 << 10

// client is one authenticated connection and its outgoing queue.
//
// Frames that must arrive (turns, done, status, errors) go through out in
// order. Token text is lossless but coalescable: while out is full, or
// while earlier tokens still wait, new token text is appended to toks and
// leaves as one larger token frame when the writer catches up. So a burst
// of tokens never overflows a client that reads at a sane pace, and toks
// is always newer than everything in out.
//
// A client is dropped (and reconnects to resync) when out overflows or when
// more than budget bytes wait for it: a stuck client costs bounded memory
// and never slows the others.
type client struct {
	id     uint64
	name   string
	nc     net.Conn
	out    chan []byte
	wake   chan struct{} // signalled when toks becomes non-empty
	budget int64
	grace  time.Duration // how long a dropped client's writer may still block
	queued atomic.Int64  // bytes in out and toks

	mu   sync.Mutex
	toks []byte

	kickOnce sync.Once
	kicked   chan struct{}
	why      *ipc.Error // set before kicked is closed
}

func newClient(id uint64, name string, nc net.Conn, frames, budget int, grace time.Duration) *client {
	return &client{
		id:     id,
		name:   name,
		nc:     nc,
		out:    make(chan []byte, frames),
		wake:   make(chan struct{}, 1),
		budget: int64(budget),
		grace:  grace,
		kicked: make(chan struct{}),
	}
}

// send queues a frame that must be delivered; false means the client
// cannot keep up and must be dropped.
func (c *client) send(frame []byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.isKicked() {
		return true
	}
	if len(c.toks) > 0 && !c.flushToksLocked() {
		return false
	}
	return c.pushLocked(frame)
}

// sendToken queues streamed text; frame is s already encoded as a token.
func (c *client) sendToken(s string, frame []byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.isKicked() {
		return true
	}
	if len(c.toks) == 0 {
		select {
		case c.out <- frame:
			return c.queued.Add(int64(len(frame))) <= c.budget
		default:
		}
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
	c.toks = append(c.toks, s...)
	return c.queued.Add(int64(len(s))) <= c.budget
}

func (c *client) pushLocked(frame []byte) bool {
	select {
	case c.out <- frame:
		return c.queued.Add(int64(len(frame))) <= c.budget
	default:
		return false
	}
}

// flushToksLocked moves the waiting token text into out, in frames.
func (c *client) flushToksLocked() bool {
	for len(c.toks) > 0 {
		part := c.takeToksLocked()
		frame, err := ipc.Encode(&ipc.Token{Content: string(part)})
		if err != nil || !c.pushLocked(frame) {
			return false
		}
	}
	return true
}

// takeToksLocked removes up to maxTokenFrame bytes of token text, cut on a
// rune boundary.
func (c *client) takeToksLocked() []byte {
	n := len(c.toks)
	if n > maxTokenFrame {
		n = maxTokenFrame
		for n > 0 && !utf8.RuneStart(c.toks[n]) {
			n--
		}
	}
	part := make([]byte, n)
	copy(part, c.toks)
	c.toks = c.toks[:copy(c.toks, c.toks[n:])]
	c.queued.Add(-int64(n))
	return part
}

// pendingTokens returns token text to write next, if out is drained.
func (c *client) pendingTokens() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.out) > 0 || len(c.toks) == 0 {
		return nil
	}
	return c.takeToksLocked()
}

func (c *client) isKicked() bool {
	select {
	case <-c.kicked:
		return true
	default:
		return false
	}
}

// kick ends the connection after telling the client why; a nil why closes
// it without a word (the client left).
func (c *client) kick(why *ipc.Error) {
	c.kickOnce.Do(func() {
		c.why = why
		close(c.kicked)
		// Unblock a writer stuck on a peer that stopped reading, leaving a
		// peer that resumes soon the time to read why it was dropped.
		c.nc.SetWriteDeadline(time.Now().Add(c.grace))
	})
}

// writeLoop writes queued frames, flushing whenever nothing more is
// waiting, so bursts go out in few syscalls without holding a frame back.
func (c *client) writeLoop() {
	bw := bufio.NewWriterSize(c.nc, 32<<10)
	write := func(frame []byte) bool {
		if _, err := bw.Write(frame); err != nil {
			c.nc.Close()
			return false
		}
		return true
	}
	for {
		if c.isKicked() {
			c.farewell(bw)
			return
		}
		select {
		case frame := <-c.out:
			c.queued.Add(-int64(len(frame)))
			if !write(frame) {
				return
			}
			continue
		default:
		}
		if part := c.pendingTokens(); part != nil {
			frame, err := ipc.Encode(&ipc.Token{Content: string(part)})
			if err == nil && !write(frame) {
				return
			}
			continue
		}
		if err := bw.Flush(); err != nil {
			c.nc.Close()
			return
		}
		select {
		case frame := <-c.out:
			c.queued.Add(-int64(len(frame)))
			if !write(frame) {
				return
			}
		case <-c.wake:
		case <-c.kicked:
			c.farewell(bw)
			return
		}
	}
}

// farewell writes what must still go out and the reason, then closes.
func (c *client) farewell(bw *bufio.Writer) {
	defer c.nc.Close()
	if c.why == nil {
		return
	}
	c.nc.SetWriteDeadline(time.Now().Add(time.Second))
	if c.why.Code != ipc.CodeSlowClient { // a slow client gets just the reason
	drain:
		for {
			select {
			case frame := <-c.out:
				bw.Write(frame)
			default:
				break drain
			}
		}
		c.mu.Lock()
		toks := c.toks
		c.toks = nil
		c.mu.Unlock()
		if len(toks) > 0 {
			if frame, err := ipc.Encode(&ipc.Token{Content: string(toks)}); err == nil {
				bw.Write(frame)
			}
		}
	}
	if line, err := ipc.Encode(c.why); err == nil {
		bw.Write(line)
	}
	bw.Flush()
}
