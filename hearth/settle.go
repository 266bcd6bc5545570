package hearth

import "context"

// Settled returns when every message and transcript accepted before the
// call, in any conversation, has been handled and its events published, or when ctx ends. A
// door uses it to finish a client that has said all it will say (a
// half-closed connection) without cutting off the answers it asked for.
func (h *Hearth) Settled(ctx context.Context) error {
	h.mu.Lock()
	ch := h.settled
	h.mu.Unlock()
	if ch == nil {
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// answered counts one request of c's as handled: its events are published.
func (h *Hearth) answered(*conversation) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.asked--; h.asked == 0 {
		close(h.settled)
		h.settled = nil
	}
}
