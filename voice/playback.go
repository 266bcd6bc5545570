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

// Queue queues n samples of itemID.
func (p *Playback) Queue(itemID string, n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if k := len(p.items); k > 0 && p.items[k-1].id == itemID {
		p.items[k-1].samples += n
		return
	}
	p.items = append(p.items, playItem{id: itemID, samples: n})
}

// Advance records n samples played and returns the items that finished.
func (p *Playback) Advance(n int) (finished []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for n > 0 && len(p.items) > 0 {
		it := &p.items[0]
		step := min(n, it.samples-it.played)
		it.played += step
		n -= step
		if it.played >= it.samples {
			finished = append(finished, it.id)
			p.items = p.items[1:]
		}
	}
	return finished
}

// Heard is the item now playing and the milliseconds of it played; ok is
// false when nothing is left to play.
func (p *Playback) Heard() (itemID string, ms int, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.items) == 0 {
		return "", 0, false
	}
	it := p.items[0]
	return it.id, it.played * 1000 / SampleRate, true
}

// Flush drops what is queued but unplayed.
func (p *Playback) Flush() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.items = nil
}
