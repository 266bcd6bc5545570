package voicetest

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"sync"

	"github.com/coder/websocket"

	"github.com/mnemo/mnemo/voice"
)

type ev = map[string]any

// conn is one realtime session of the stand-in. Its reader handles client
// events; replies run in their own goroutine; a writer goroutine drains an
// unbounded queue so that the reader never waits on the client.
type conn struct {
	s      *Server
	ws     *websocket.Conn
	closed chan struct{}
	once   sync.Once

	outMu sync.Mutex
	out   []ev
	wake  chan struct{}
	seq   int

	mu        sync.Mutex
	ids       int
	updated   bool
	manual    bool
	silenceMS int
	convID    string
	resid     []byte
	audioMS   int
	speaking  bool
	quietMS   int
	userItem  string
	active    *response
	next      *Reply // reply for the committed manual turn
	afterCall *Reply
	items     map[string]agentItem
	lastUser  string
}

type response struct {
	id        string
	cancelled chan struct{}
	once      sync.Once
}

func (r *response) cancel() { r.once.Do(func() { close(r.cancelled) }) }

type agentItem struct {
	transcript string
	audioMS    int
}

func newConn(s *Server, ws *websocket.Conn) *conn {
	return &conn{s: s, ws: ws, closed: make(chan struct{}), wake: make(chan struct{}, 1),
		silenceMS: voice.DefaultSilenceMS, items: map[string]agentItem{}}
}

func (c *conn) shutdown() {
	c.once.Do(func() { close(c.closed) })
	c.ws.CloseNow()
}

func (c *conn) send(e ev) {
	c.outMu.Lock()
	c.seq++
	e["event_id"] = fmt.Sprintf("event_%d", c.seq)
	c.out = append(c.out, e)
	c.outMu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *conn) writer(ctx context.Context) {
	for {
		c.outMu.Lock()
		items := c.out
		c.out = nil
		c.outMu.Unlock()
		for _, e := range items {
			b, _ := json.Marshal(e)
			if err := c.ws.Write(ctx, websocket.MessageText, b); err != nil {
				return
			}
		}
		if len(items) == 0 {
			select {
			case <-c.wake:
			case <-c.closed:
				return
			}
		}
	}
}

func (c *conn) id(prefix string) string {
	c.ids++
	return fmt.Sprintf("%s_%d", prefix, c.ids)
}

func (c *conn) xai() bool { return c.s.opts.Dialect != voice.DialectOpenAI }

func (c *conn) serve(ctx context.Context, silent bool, resume string) {
	go c.writer(ctx)
	if !silent {
		c.open(resume)
	}
	for {
		_, b, err := c.ws.Read(ctx)
		if err != nil {
			return
		}
		c.s.mu.Lock()
		c.s.received = append(c.s.received, string(b))
		c.s.mu.Unlock()
		if silent {
			continue
		}
		c.handle(b)
	}
}

// open sends what a live session starts with, replaying a resumed
// conversation's history.
func (c *conn) open(resume string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	sess := ev{"id": c.id("sess"), "model": c.s.opts.Model, "instructions": "", "voice": "ara"}
	if c.xai() {
		sess["turn_detection"] = ev{"type": nil}
	} else {
		sess["type"] = "realtime"
		sess["object"] = "realtime.session"
		sess["output_modalities"] = []string{"audio"}
	}
	c.send(ev{"type": "session.created", "session": sess})
	if !c.xai() {
		return
	}
	c.s.mu.Lock()
	history, known := c.s.convs[resume]
	if resume == "" || !known {
		resume = "conv_" + randHex(6)
		c.s.convs[resume] = nil
	}
	c.convID = resume
	history = append([]json.RawMessage(nil), history...)
	c.s.mu.Unlock()
	c.send(ev{"type": "conversation.created", "conversation": ev{"id": c.convID, "object": "realtime.conversation"}, "previous_item_id": "0"})
	c.send(ev{"type": "ping", "timestamp": 1})
	for _, it := range history {
		c.send(ev{"type": "conversation.item.created", "item": it, "replayed": true})
	}
}

func (c *conn) remember(item ev) {
	if c.convID == "" {
		return
	}
	b, _ := json.Marshal(item)
	c.s.mu.Lock()
	c.s.convs[c.convID] = append(c.s.convs[c.convID], b)
	c.s.mu.Unlock()
}

type clientEvent struct {
	Type       string          `json:"type"`
	Audio      string          `json:"audio"`
	Session    json.RawMessage `json:"session"`
	ItemID     string          `json:"item_id"`
	AudioEndMS int             `json:"audio_end_ms"`
	Item       *struct {
		Type   string `json:"type"`
		CallID string `json:"call_id"`
		Output string `json:"output"`
	} `json:"item"`
}

type turnDetection struct {
	Type      *string `json:"type"`
	SilenceMS int     `json:"silence_duration_ms"`
}

func (c *conn) handle(b []byte) {
	var e clientEvent
	if err := json.Unmarshal(b, &e); err != nil {
		c.send(ev{"type": "error", "error": ev{"type": "invalid_event", "message": "invalid JSON"}})
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch e.Type {
	case "session.update":
		c.sessionUpdate(e.Session)
	case "input_audio_buffer.append":
		if !c.updated {
			c.s.mu.Lock()
			c.s.early++
			c.s.mu.Unlock()
		}
		pcm, err := base64.StdEncoding.DecodeString(e.Audio)
		if err != nil {
			c.send(ev{"type": "error", "error": ev{"type": "invalid_request_error", "message": "invalid audio"}})
			return
		}
		c.listen(pcm)
	case "input_audio_buffer.commit":
		item := c.id("item")
		c.send(ev{"type": "input_audio_buffer.committed", "item_id": item, "previous_item_id": nil})
		r := c.userTurn(item)
		c.next = &r
	case "response.create":
		switch {
		case c.active != nil:
			c.send(ev{"type": "error", "error": ev{"type": "invalid_request_error",
				"code": "conversation_already_has_active_response", "message": "Conversation already has an active response"}})
		case c.afterCall != nil:
			r := *c.afterCall
			c.afterCall = nil
			c.startReply(r, nil)
		case c.next != nil:
			r := *c.next
			c.next = nil
			c.startReply(r, nil)
		default:
			c.startReply(Reply{Transcript: "Yes."}, nil)
		}
	case "response.cancel":
		if c.active == nil {
			c.send(ev{"type": "error", "error": ev{"type": "invalid_request_error",
				"code": "response_cancel_not_active", "message": "Cancellation failed: no active response found"}})
			return
		}
		c.active.cancel()
	case "conversation.item.truncate":
		it, ok := c.items[e.ItemID]
		if !ok {
			c.send(ev{"type": "error", "error": ev{"type": "invalid_request_error", "message": "item not found: " + e.ItemID}})
			return
		}
		ms := max(0, min(e.AudioEndMS, it.audioMS))
		text := it.transcript[:len(it.transcript)*ms/max(1, it.audioMS)]
		c.s.mu.Lock()
		c.s.truncates = append(c.s.truncates, e.AudioEndMS)
		c.s.mu.Unlock()
		if c.s.opts.NoTruncated {
			return
		}
		c.send(ev{"type": "conversation.item.truncated", "item_id": e.ItemID, "content_index": 0, "audio_end_ms": ms, "transcript": text})
	case "conversation.item.create":
		if e.Item == nil {
			c.send(ev{"type": "error", "error": ev{"type": "invalid_request_error", "message": "missing item"}})
			return
		}
		if e.Item.Type == "function_call_output" {
			c.s.mu.Lock()
			c.s.outputs = append(c.s.outputs, e.Item.CallID+"="+e.Item.Output)
			c.s.mu.Unlock()
		}
		c.send(ev{"type": "conversation.item.added", "item": ev{"id": c.id("item"), "type": e.Item.Type}})
	default:
		c.send(ev{"type": "error", "error": ev{"type": "invalid_event", "message": "unknown event type: " + e.Type}})
	}
}

func (c *conn) sessionUpdate(raw json.RawMessage) {
	var s struct {
		TurnDetection *turnDetection `json:"turn_detection"`
		Audio         struct {
			Input struct {
				TurnDetection *turnDetection `json:"turn_detection"`
			} `json:"input"`
		} `json:"audio"`
	}
	_ = json.Unmarshal(raw, &s)
	td := s.TurnDetection
	if !c.xai() {
		td = s.Audio.Input.TurnDetection
	}
	c.manual = td == nil || td.Type == nil || *td.Type != "server_vad"
	if td != nil && td.SilenceMS > 0 {
		c.silenceMS = td.SilenceMS
	}
	if c.s.opts.HoldUpdated {
		go func() {
			select {
			case <-c.s.released:
			case <-c.closed:
				return
			}
			c.mu.Lock()
			defer c.mu.Unlock()
			c.sendUpdated()
		}()
		return
	}
	c.sendUpdated()
}

func (c *conn) sendUpdated() {
	c.updated = true
	echo := ev{"id": "sess", "model": c.s.opts.Model}
	if c.xai() {
		echo["turn_detection"] = ev{} // the live echo is not faithful
		echo["input_audio_format"] = "not specified"
	} else {
		echo["type"] = "realtime"
	}
	c.send(ev{"type": "session.updated", "session": echo})
}

// listen runs the energy VAD over 20 ms frames.
func (c *conn) listen(pcm []byte) {
	const frame = voice.SampleRate / 50 * 2
	c.resid = append(c.resid, pcm...)
	for len(c.resid) >= frame {
		f := c.resid[:frame]
		c.resid = c.resid[frame:]
		c.audioMS += 20
		if c.manual {
			continue
		}
		if rms(f) >= c.s.opts.SpeechRMS {
			c.quietMS = 0
			if !c.speaking {
				c.speaking = true
				c.userItem = c.id("item")
				c.send(ev{"type": "input_audio_buffer.speech_started", "audio_start_ms": c.audioMS - 20, "item_id": c.userItem})
				if c.active != nil {
					c.active.cancel() // the server cancels its own reply
				}
			}
			continue
		}
		if c.speaking {
			c.quietMS += 20
			if c.quietMS >= c.silenceMS {
				c.speaking = false
				c.send(ev{"type": "input_audio_buffer.speech_stopped", "audio_end_ms": c.audioMS, "item_id": c.userItem})
				c.send(ev{"type": "input_audio_buffer.committed", "item_id": c.userItem, "previous_item_id": "0"})
				r := c.userTurn(c.userItem)
				var again []ev
				if c.xai() { // .completed repeats, after the reply began
					again = append(again, c.completed(c.userItem, c.lastUser))
				}
				c.startReply(r, again)
			}
		}
	}
}

func rms(b []byte) float64 {
	var sum float64
	n := len(b) / 2
	for i := range n {
		v := float64(int16(binary.LittleEndian.Uint16(b[2*i:])))
		sum += v * v
	}
	return math.Sqrt(sum / float64(max(n, 1)))
}

func (c *conn) completed(item, text string) ev {
	return ev{"type": "conversation.item.input_audio_transcription.completed", "item_id": item, "content_index": 0, "transcript": text}
}

// userTurn sends the scripted transcription of a user item and returns
// the reply to give.
func (c *conn) userTurn(item string) Reply {
	c.s.mu.Lock()
	t := Turn{User: "hello", Reply: Reply{Transcript: "Yes."}}
	if c.s.turn < len(c.s.opts.Turns) {
		t = c.s.opts.Turns[c.s.turn]
	}
	c.s.turn++
	c.s.mu.Unlock()
	c.lastUser = t.User
	it := ev{"id": item, "type": "message", "role": "user", "status": "completed", "content": []ev{{"type": "input_audio", "transcript": t.User}}}
	c.send(ev{"type": "conversation.item.added", "item": it, "previous_item_id": "0"})
	c.remember(it)
	words := strings.Fields(t.User)
	if c.xai() {
		if len(words) > 1 {
			c.send(ev{"type": "conversation.item.input_audio_transcription.updated", "item_id": item, "transcript": words[0]})
		}
		c.send(ev{"type": "conversation.item.input_audio_transcription.updated", "item_id": item, "transcript": t.User})
		p := c.completed(item, t.User)
		p["status"] = "in_progress"
		c.send(p)
		c.send(c.completed(item, t.User))
	} else {
		for i, w := range words {
			if i > 0 {
				w = " " + w
			}
			c.send(ev{"type": "conversation.item.input_audio_transcription.delta", "item_id": item, "content_index": 0, "delta": w})
		}
		c.send(c.completed(item, t.User))
	}
	return t.Reply
}
