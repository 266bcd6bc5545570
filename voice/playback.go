package voice

import "sync"

// Playback follows what the speaker has actually played, per item, so that
// barge-in truncates at the heard point (InterruptPlayback). It owns no
// device: the audio path calls Add as reply audio is queued and Advance as
// samples reach the speaker. Safe for concurrent use.
type Playback struct {
	mu    sync.Mutex
	items []playItem
}

type playItem struct {
	id              string
	samples, played int
}

// Add queues reply audio.
func (p *Playback) Add(a AgentAudio) { p.Queue(a.ItemID, len(a.PCM)/2) }

// Queue queues n samples of itemID. More of the item last queued adds to
// it, even when all of it queued so far has played: a reply's audio comes
// in pieces, and the speaker can catch up between two of them.
func (p *Playback) Queue(itemID string, n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if k := len(p.items); k > 0 && p.items[k-1].id == itemID {
		p.items[k-1].samples += n
		return
	}
	p.items = append(p.items, playItem{id: itemID, samples: n})
	p.trim()
}

// Advance records n samples played and returns the items that finished:
// played through, with another item queued after them. The last item
// queued stays, played through or not, since more of it may come.
func (p *Playback) Advance(n int) (finished []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for n > 0 && len(p.items) > 0 {
		it := &p.items[0]
		step := min(n, it.samples-it.played)
		it.played += step
		n -= step
		if len(p.items) == 1 {
			break
		}
		finished = append(finished, p.trim()...)
	}
	return finished
}

// trim drops the items played through that have another queued after
// them, and returns their ids.
func (p *Playback) trim() (done []string) {
	for len(p.items) > 1 && p.items[0].played >= p.items[0].samples {
		done = append(done, p.items[0].id)
		p.items = p.items[1:]
	}
	return done
}

// Heard is the item now playing, or the last one played when its audio
// ran out before more of it came, and the milliseconds of it played; ok
// is false when nothing was queued since the last Flush.
func (p *Playback) Heard() (itemID string, ms int, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.items) == 0 {
		return "", 0, false
	}
	it := p.items[0]
	return it.id, it.played * 1000 / SampleRate, true
}

// Flush forgets every item: a barge-in cut them, or the reply ended.
func (p *Playback) Flush() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.items = nil
}
