package hearth

import (
	"context"
	"errors"
	"sync"
)

// Reasons a subscription ends, returned by Subscription.Run.
var (
	// ErrLagging: the subscriber fell behind (its queue overflowed its
	// frame or byte budget) and was cut off; it may subscribe again and
	// resync from the new snapshot.
	ErrLagging = errors.New("hearth: subscriber fell behind and was cut off")
	// ErrShuttingDown: hearth is stopping; what was queued was delivered.
	ErrShuttingDown = errors.New("hearth: shutting down")
	// ErrUnsubscribed: the subscription was closed by its owner.
	ErrUnsubscribed = errors.New("hearth: unsubscribed")
)

// WatchOptions say what a subscriber receives and how far it may fall
// behind.
type WatchOptions struct {
	// Classes are the event classes delivered; zero means ClassAll.
	Classes Class
	// Name identifies the subscriber in logs (a client's name, a door).
	Name string
	// MaxEvents bounds the events queued for the subscriber; default
	// 1024. Token text coalesces into the newest queued Token, so a
	// stream of tokens costs one slot while the subscriber is behind.
	MaxEvents int
	// MaxBytes bounds the bytes queued (see Cost); default 4 MiB.
	MaxBytes int64
	// Cost, when set, is what an event weighs against MaxBytes: a door
	// knows what it will write for it (its wire caps long texts). The
	// default is the text the event carries.
	Cost func(Event) int64
	// Conversation is the conversation followed ("": main): its turn
	// events reach the subscriber, other conversations' do not; events
	// that are no conversation's (notices, forgets, the vault's) reach
	// every subscriber. Subscribe fails with a *Problem with
	// CodeConversationNotFound for an unknown one.
	Conversation string
	// OnCut, when set, is called once when the subscription is cut off
	// (ErrLagging or ErrShuttingDown), under hearth's lock: it must not
	// block. A door uses it to unblock a writer stuck on a dead peer.
	OnCut func(reason error)
}

// Subscription is one subscriber's queue of events: the snapshot first,
// then every event of its classes in the order hearth published them.
// Events that must arrive are never dropped: a subscriber that cannot keep
// up is cut off as a whole, with ErrLagging, and nobody else waits for it.
type Subscription struct {
	h    *Hearth
	id   uint64
	opts WatchOptions
	conv string        // the conversation followed
	wake chan struct{} // capacity 1: the queue changed

	mu     sync.Mutex
	queue  []Event
	queued int64 // bytes, see size
	ended  error // why the subscription ended; nil while it runs
}

// maxTokenText bounds the text one coalesced Token carries.
const maxTokenText = 64 << 10

// Subscribe registers a subscriber and queues its snapshot as the first
// event, atomically with respect to every publication: no gap, no
// duplicate. The caller must Close the subscription when done with it.
// It fails with ErrShuttingDown once hearth is stopping.
func (h *Hearth) Subscribe(opts WatchOptions) (*Subscription, error) {
	if opts.Classes == 0 {
		opts.Classes = ClassAll
	}
	if opts.MaxEvents <= 0 {
		opts.MaxEvents = 1024
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = 4 << 20
	}
	if opts.Cost == nil {
		opts.Cost = Size
	}
	h.mu.Lock()
	closing := h.closing
	h.mu.Unlock()
	if closing {
		return nil, ErrShuttingDown
	}
	c, err := h.open(opts.Conversation)
	if err != nil {
		return nil, err
	}
	s := &Subscription{h: h, id: h.nextSub.Add(1), opts: opts, conv: c.id, wake: make(chan struct{}, 1)}
	h.mu.Lock()
	defer h.mu.Unlock()
	for c.unloaded { // it went idle meanwhile: load it again
		h.mu.Unlock()
		c, err = h.open(opts.Conversation)
		h.mu.Lock()
		if err != nil {
			return nil, err
		}
	}
	if h.closing {
		return nil, ErrShuttingDown
	}
	// The snapshot is the subscriber's starting state, bounded by
	// HistoryTurns: it is not weighed against the budget of what the
	// subscriber falls behind by.
	s.queue = append(s.queue, h.snapshotLocked(c))
	h.subs[s] = struct{}{}
	return s, nil
}

// Watch subscribes and delivers events to fn until ctx ends, fn fails or
// the subscription is cut off (see Subscription.Run).
func (h *Hearth) Watch(ctx context.Context, opts WatchOptions, fn func([]Event) error) error {
	s, err := h.Subscribe(opts)
	if err != nil {
		return err
	}
	defer s.Close()
	return s.Run(ctx, fn)
}

// Run delivers the queued events to fn in batches: everything queued at
// the moment, oldest first, so that a door can write a batch and flush
// once. It returns fn's error, ctx's, ErrLagging when the subscriber was
// cut off for falling behind (what was queued is dropped), or
// ErrShuttingDown after delivering everything queued before hearth
// stopped. Only one goroutine may call Run.
func (s *Subscription) Run(ctx context.Context, fn func([]Event) error) error {
	for {
		s.mu.Lock()
		batch, ended := s.queue, s.ended
		if errors.Is(ended, ErrLagging) || errors.Is(ended, ErrUnsubscribed) {
			batch = nil
		}
		s.queue, s.queued = nil, 0
		s.mu.Unlock()
		if len(batch) > 0 {
			if err := fn(batch); err != nil {
				return err
			}
			continue // more may have come while fn ran
		}
		if ended != nil {
			return ended
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-s.wake:
		}
	}
}

// Reply queues v for this subscriber alone, in order with its events: a
// door's answer to one of its requests. False when the subscription has
// ended (or just ended for falling behind).
func (s *Subscription) Reply(v any) bool {
	h := s.h
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.subs[s]; !ok {
		return false
	}
	if !s.push(&Reply{Value: v}) {
		h.cutLocked(s, ErrLagging)
		return false
	}
	return true
}

// Close unsubscribes; Run returns ErrUnsubscribed.
func (s *Subscription) Close() {
	h := s.h
	h.mu.Lock()
	delete(h.subs, s)
	h.pokeLocked(s.conv)
	h.mu.Unlock()
	s.end(ErrUnsubscribed)
}

// push queues ev; false when that puts the subscriber over its budget.
func (s *Subscription) push(ev Event) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended != nil {
		return true
	}
	n := s.opts.Cost(ev)
	if t, ok := ev.(*Token); ok && len(s.queue) > 0 {
		// Lossless coalescing: the text joins the newest queued token.
		if last, ok := s.queue[len(s.queue)-1].(*Token); ok && len(last.Text)+len(t.Text) <= maxTokenText {
			s.queue[len(s.queue)-1] = &Token{Text: last.Text + t.Text}
			s.queued += n
			return s.queued <= s.opts.MaxBytes
		}
	}
	if len(s.queue) >= s.opts.MaxEvents {
		return false
	}
	s.queue = append(s.queue, ev)
	s.queued += n
	s.signal()
	return s.queued <= s.opts.MaxBytes
}

func (s *Subscription) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// end records why the subscription ended, once, and wakes Run.
func (s *Subscription) end(why error) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended != nil {
		return false
	}
	s.ended = why
	s.signal()
	return true
}

// publishLocked queues ev to every subscriber of its class. A subscriber
// that cannot take it is cut off; it resubscribes and resyncs.
func (h *Hearth) publishLocked(ev Event) {
	for s := range h.subs {
		if s.opts.Classes&ev.Class() == 0 {
			continue
		}
		if !s.push(ev) {
			h.cutLocked(s, ErrLagging)
		}
	}
}

// publishToLocked is publishLocked to the subscribers of conversation
// conv alone: its turn events.
func (h *Hearth) publishToLocked(conv string, ev Event) {
	for s := range h.subs {
		if s.conv != conv || s.opts.Classes&ev.Class() == 0 {
			continue
		}
		if !s.push(ev) {
			h.cutLocked(s, ErrLagging)
		}
	}
}

func (h *Hearth) publishTo(conv string, ev Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.publishToLocked(conv, ev)
}

// Conversation is the conversation s follows.
func (s *Subscription) Conversation() string { return s.conv }

func (h *Hearth) publish(ev Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.publishLocked(ev)
}

// cutLocked ends s for why and counts it.
func (h *Hearth) cutLocked(s *Subscription, why error) {
	delete(h.subs, s)
	h.pokeLocked(s.conv)
	if !s.end(why) {
		return
	}
	if errors.Is(why, ErrLagging) {
		h.dropped++
		h.log.Warn("dropping client: it fell behind", "subscriber", s.id, "name", s.opts.Name)
	}
	if s.opts.OnCut != nil {
		s.opts.OnCut(why)
	}
}
