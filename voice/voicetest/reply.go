package voicetest

import (
	"encoding/binary"
	"strings"

	"github.com/mnemo/mnemo/voice"
)

// deltaMS is the audio length of one reply delta.
const deltaMS = 100

// ReplySample is the value of the k-th sample of any scripted reply: a
// ramp, so that a test can check audio arrived whole and in order.
func ReplySample(k int) int16 { return int16(k % 20000) }

// startReply begins a response; c.mu is held. extra events follow
// response.created.
func (c *conn) startReply(r Reply, extra []ev) {
	resp := &response{id: c.id("resp"), cancelled: make(chan struct{})}
	c.active = resp
	c.send(ev{"type": "response.created", "response": ev{"id": resp.id, "object": "realtime.response", "status": "in_progress", "output": []ev{}}})
	for _, e := range extra {
		c.send(e)
	}
	if r.Call != nil && r.Transcript == "" && r.AudioMS == 0 {
		c.callReply(resp, r, 0, nil)
		return
	}
	if r.AudioMS <= 0 {
		r.AudioMS = 600
	}
	item := c.id("item")
	c.items[item] = agentItem{transcript: r.Transcript, audioMS: r.AudioMS}
	it := ev{"id": item, "type": "message", "role": "assistant", "status": "in_progress", "content": []ev{}}
	c.send(ev{"type": "response.output_item.added", "response_id": resp.id, "output_index": 0, "item": it})
	c.send(ev{"type": "conversation.item.added", "item": it, "previous_item_id": "0"})
	c.send(ev{"type": "response.content_part.added", "response_id": resp.id, "item_id": item, "output_index": 0, "content_index": 0, "part": ev{"type": "audio"}})
	done := ev{"id": item, "type": "message", "role": "assistant", "status": "completed", "content": []ev{{"type": "audio", "transcript": r.Transcript}}}
	c.remember(done)
	go c.stream(resp, r, item, done)
}

func (c *conn) name(n string) string {
	if !c.s.opts.OldNames {
		return n
	}
	n = strings.Replace(n, "response.output_audio_transcript.", "response.audio_transcript.", 1)
	return strings.Replace(n, "response.output_audio.", "response.audio.", 1)
}

// stream sends the reply audio faster than real time, interleaved with the
// transcript, until done or cancelled.
func (c *conn) stream(resp *response, r Reply, item string, done ev) {
	n := max(1, r.AudioMS/deltaMS)
	words := strings.Fields(r.Transcript)
	per := voice.SampleRate * deltaMS / 1000
	delta := func(i int) {
		b := make([]byte, 2*per)
		for j := range per {
			binary.LittleEndian.PutUint16(b[2*j:], uint16(ReplySample(i*per+j)))
		}
		c.send(ev{"type": c.name("response.output_audio.delta"), "response_id": resp.id, "item_id": item,
			"output_index": 0, "content_index": 0, "delta": b64(b), "audio_duration_ms": deltaMS})
		lo, hi := i*len(words)/n, (i+1)*len(words)/n
		if hi > lo && i < n {
			text := strings.Join(words[lo:hi], " ")
			if lo > 0 {
				text = " " + text
			}
			c.send(ev{"type": c.name("response.output_audio_transcript.delta"), "response_id": resp.id, "item_id": item, "delta": text})
		}
	}
	cancelled := func(i int) {
		for k := range r.LateDeltas {
			delta(i + k)
		}
		c.finish(resp, "cancelled", nil)
	}
	for i := range n {
		if r.HoldAfter > 0 && i == r.HoldAfter {
			select {
			case <-resp.cancelled:
			case <-c.closed:
				return
			}
		}
		select {
		case <-resp.cancelled:
			cancelled(i)
			return
		case <-c.closed:
			return
		default:
		}
		delta(i)
	}
	c.send(ev{"type": c.name("response.output_audio_transcript.done"), "response_id": resp.id, "item_id": item, "transcript": r.Transcript})
	c.send(ev{"type": "response.content_part.done", "response_id": resp.id, "item_id": item, "part": ev{"type": "audio", "transcript": r.Transcript}})
	c.send(ev{"type": c.name("response.output_audio.done"), "response_id": resp.id, "item_id": item})
	c.send(ev{"type": "response.output_item.done", "response_id": resp.id, "item": done})
	if r.Call != nil {
		// Spoken words, then a function call, in one response.
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.active == resp {
			c.callReply(resp, r, 1, []ev{done})
		}
		return
	}
	c.finish(resp, "completed", []ev{done})
}

// finish ends a response; the server is free for response.create before
// the client can read response.done.
func (c *conn) finish(resp *response, status string, output []ev) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.active == resp {
		c.active = nil
	}
	if output == nil {
		output = []ev{}
	}
	c.send(ev{"type": "response.done", "response": ev{"id": resp.id, "object": "realtime.response", "status": status, "output": output},
		"usage": ev{"total_tokens": 10}})
}

// callReply ends a response with a function call item at index out,
// after the items before (a reply that speaks, then calls); c.mu is held.
func (c *conn) callReply(resp *response, r Reply, out int, before []ev) {
	item, call := c.id("item"), c.id("call")
	it := ev{"id": item, "type": "function_call", "status": "in_progress", "call_id": call, "name": r.Call.Name, "arguments": ""}
	c.send(ev{"type": "response.output_item.added", "response_id": resp.id, "output_index": out, "item": it})
	c.send(ev{"type": "response.function_call_arguments.delta", "response_id": resp.id, "item_id": item, "call_id": call, "delta": r.Call.Arguments})
	c.send(ev{"type": "response.function_call_arguments.done", "response_id": resp.id, "item_id": item, "call_id": call, "name": r.Call.Name, "arguments": r.Call.Arguments})
	done := ev{"id": item, "type": "function_call", "status": "completed", "call_id": call, "name": r.Call.Name, "arguments": r.Call.Arguments}
	c.send(ev{"type": "response.output_item.done", "response_id": resp.id, "output_index": out, "item": done})
	output := append(before, done)
	then := Reply{Transcript: "Done."}
	if r.Then != nil {
		then = *r.Then
	}
	finish := func() {
		c.afterCall = &then
		c.active = nil
		c.send(ev{"type": "response.done", "response": ev{"id": resp.id, "status": "completed", "output": output}})
	}
	if r.HoldAfter == 0 {
		finish()
		return
	}
	go func() {
		select {
		case <-c.s.released:
		case <-c.closed:
			return
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		finish()
	}()
}
