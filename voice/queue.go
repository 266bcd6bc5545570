package voice

import "sync"

// queue is the unbounded, ordered hand-off from the socket reader to the
// consumer: the reader never waits for a slow consumer and no event (audio
// above all) is dropped. Audio arrives faster than real time, so the
// consumer's playback buffer must take it anyway; the queue only decouples.
type queue struct {
	mu     sync.Mutex
	items  []Event
	closed bool
	wake   chan struct{} // 1-buffered
	out    chan Event
}

func newQueue() *queue {
	q := &queue{wake: make(chan struct{}, 1), out: make(chan Event)}
	go q.pump()
	return q
}

func (q *queue) push(ev Event) {
	q.mu.Lock()
	if !q.closed {
		q.items = append(q.items, ev)
	}
	q.mu.Unlock()
	q.signal()
}

// close delivers what is queued, then closes out.
func (q *queue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.signal()
}

func (q *queue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *queue) pump() {
	defer close(q.out)
	for {
		q.mu.Lock()
		items, closed := q.items, q.closed
		q.items = nil
		q.mu.Unlock()
		for _, ev := range items {
			q.out <- ev
		}
		if len(items) == 0 {
			if closed {
				return
			}
			<-q.wake
		}
	}
}
