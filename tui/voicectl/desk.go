package voicectl

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/mnemo/mnemo/voice"
	"github.com/mnemo/mnemo/voice/audio"
)

// Hearth is what the desk needs from hearth. Credential is asked at every
// (re)connect, so that each attempt gets a fresh ephemeral token.
// Transcript and StopVoice must not wait for hearth's answer; RunTool
// waits for the tool's output.
type Hearth interface {
	voice.Credentials
	// Transcript stores one finished voice turn; its ItemID is the ref
	// echoed in the turn hearth stores.
	Transcript(ctx context.Context, t Turn) error
	// RunTool runs a tool the model called and returns its output for
	// the model (a failure is an output too: err is for the transport).
	RunTool(ctx context.Context, call voice.FunctionCall) (string, error)
	// StopVoice says the voice session ended.
	StopVoice(ctx context.Context) error
}

// Turn is a finished voice turn for hearth. Incomplete marks an agent
// item cut short whose heard text never came (the session closed first):
// Text is then what was known of it, the final text or the partial.
type Turn struct {
	Role, Text, ItemID string
	Incomplete         bool
}

// Streams are open audio streams.
type Streams interface{ Close() error }

// Device is a sound device the audio layer offers.
type Device struct {
	Name                        string
	Host                        string
	Inputs, Outputs             int
	DefaultInput, DefaultOutput bool
}

// Audio opens the sound card: it feeds c from the microphone and plays p
// on the speaker until the Streams are closed.
type Audio interface {
	Open(ctx context.Context, c *audio.Capture, p *audio.Player) (Streams, error)
	Devices(ctx context.Context) ([]Device, error)
}

// Roles of Partial and Final.
const (
	RoleUser  = "user"
	RoleAgent = "agent"
)

// State is what the voice session is doing, for the UI.
type State int

const (
	Off           State = iota
	Connecting          // asking hearth for a credential, opening the session
	Listening           // ready: the mic is open
	UserSpeaking        // the user's turn
	Thinking            // the user's turn ended; no reply audio yet
	AgentSpeaking       // reply audio is playing
	Reconnecting        // the connection dropped; resuming
	Failed              // the session ended with an error
)

var stateNames = [...]string{"off", "connecting", "listening", "you speaking", "thinking", "agent speaking", "reconnecting", "error"}

func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// Event is something the UI is told; see Desk.Next.
type Event interface{ event() }

// StateChanged: the session's state changed; Err says why for
// Reconnecting and Failed.
type StateChanged struct {
	State State
	Err   error
}

// Partial is the live text of an item so far (user or agent).
type Partial struct{ Role, ItemID, Text string }

// Final is an item's finished text, sent to hearth as a transcript with
// ItemID as its ref: the UI keeps showing it until hearth stores the turn.
type Final struct{ Role, ItemID, Text string }

// Dropped is an item that is not stored: nothing of it was heard.
type Dropped struct{ Role, ItemID string }

// Ended is the last event: the session is over; Err is nil when it was
// stopped.
type Ended struct{ Err error }

func (StateChanged) event() {}
func (Partial) event()      {}
func (Final) event()        {}
func (Dropped) event()      {}
func (Ended) event()        {}

// Config configures a Desk. Hearth and Audio are required.
type Config struct {
	Hearth Hearth
	Audio  Audio
	// Echo is how mic and speaker share the desk: audio.HalfDuplex (the
	// default) or audio.FullDuplex (headphones).
	Echo    audio.Mode
	Session voice.Options
	Player  audio.PlayerConfig // Gate and OnPlaying are the desk's
	Gate    audio.GateConfig   // Mode is Echo
	Capture audio.CaptureConfig
	Log     *slog.Logger
}

// Desk runs one voice session. Run it once; Stop ends it.
type Desk struct {
	cfg     Config
	log     *slog.Logger
	gate    *audio.Gate
	capture *audio.Capture
	player  *audio.Player
	out     outbox

	ctl      chan ctlMsg
	wake     chan struct{} // playback started or stopped
	playing  atomic.Bool
	manual   atomic.Bool // push-to-talk: the credential's VAD is manual
	talking  atomic.Bool // push-to-talk: the key is "down"
	minted   atomic.Int64
	refuse   atomic.Pointer[context.CancelCauseFunc] // ends Dial when hearth says no
	stop     chan struct{}
	stopOnce sync.Once

	// Owned by the loop.
	sess        *voice.Session
	state       State
	userSent    map[string]bool
	agentSent   map[string]bool
	interrupted map[string]bool   // cut short, the truncated text not yet in
	cutOrder    []string          // the interrupted items, in order
	known       map[string]string // agent items: the latest text, partial or final
	cut         map[string]bool   // flushed by barge-in: late audio is dropped
	queued      []string          // agent items written to the player since it was last idle
	held        []final           // agent finals waiting for playback to end
	calls       []*toolCall       // function calls of the response in flight
	wg          sync.WaitGroup
}

type final struct{ itemID, text string }

type toolCall struct {
	call voice.FunctionCall
	out  string
	done chan struct{}
}

type ctlMsg uint8

const ctlTalk ctlMsg = 1

// New returns a desk, idle until Run.
func New(cfg Config) *Desk {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	d := &Desk{
		cfg:         cfg,
		log:         cfg.Log,
		ctl:         make(chan ctlMsg, 16),
		wake:        make(chan struct{}, 1),
		stop:        make(chan struct{}),
		userSent:    make(map[string]bool),
		agentSent:   make(map[string]bool),
		interrupted: make(map[string]bool),
		known:       make(map[string]string),
		cut:         make(map[string]bool),
	}
	d.out.init()
	gc := cfg.Gate
	gc.Mode = cfg.Echo
	d.gate = audio.NewGate(gc)
	pc := cfg.Player
	pc.Gate = d.gate
	pc.OnPlaying = func(p bool) {
		// Called with the Player locked, from the socket reader or the
		// device: note it and wake the loop, never wait.
		d.playing.Store(p)
		select {
		case d.wake <- struct{}{}:
		default:
		}
	}
	d.player = audio.NewPlayer(pc)
	cc := cfg.Capture
	cc.Gate = d.gate
	d.capture = audio.NewCapture(cc)
	return d
}

// Next returns the next event for the UI, waiting for one; after Ended it
// returns ErrDone. It never holds up the session: events queue.
func (d *Desk) Next(ctx context.Context) (Event, error) { return d.out.next(ctx) }

// ErrDone: the session ended and every event was delivered.
var ErrDone = errors.New("voicectl: the session ended")

// Stop ends the session; Run returns soon after. It does not wait.
func (d *Desk) Stop() { d.stopOnce.Do(func() { close(d.stop) }) }

// Talk is the push-to-talk key. With manual turns the first press opens
// the mic and the second commits the turn; with server VAD it is barge-in:
// the agent stops and the mic opens even in half duplex. It does not wait.
func (d *Desk) Talk() {
	select {
	case d.ctl <- ctlTalk:
	default:
	}
}

// SetEcho switches between half duplex and full duplex (headphones).
func (d *Desk) SetEcho(m audio.Mode) { d.gate.SetMode(m) }

// Echo is the echo mode now.
func (d *Desk) Echo() audio.Mode { return d.gate.Mode() }

// PushToTalk reports whether turns are manual (hearth's VAD setting, known
// once the first credential arrived) and whether the mic is open now.
func (d *Desk) PushToTalk() (manual, talking bool) { return d.manual.Load(), d.talking.Load() }

// Levels are the microphone and speaker levels now, for the UI.
func (d *Desk) Levels() (in, out audio.Level) { return d.capture.Level(), d.player.Level() }

// deskCreds is the session's voice.Credentials: hearth's, watched.
type deskCreds struct{ d *Desk }

// Credential asks hearth, and notes whether turns are manual.
func (c deskCreds) Credential(ctx context.Context) (voice.Credential, voice.Settings, error) {
	d := c.d
	cred, s, err := d.cfg.Hearth.Credential(ctx)
	if err == nil {
		d.minted.Add(1)
		d.manual.Store(s.VAD.Mode == voice.VADManual)
	} else if IsNoProvider(err) {
		// Asking again will not help: stop connecting.
		if f := d.refuse.Load(); f != nil {
			(*f)(err)
		}
	}
	return cred, s, err
}

// Run opens the audio and the session and pumps until Stop, ctx ending or
// the session closing. It tells hearth the voice session ended (when a
// credential was minted) after the last transcript.
func (d *Desk) Run(ctx context.Context) (err error) {
	defer func() {
		if err != nil {
			d.setState(Failed, err)
		}
		d.out.push(Ended{Err: err})
		d.out.close()
	}()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-d.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	stopped := func() bool {
		select {
		case <-d.stop:
			return true
		default:
			return false
		}
	}
	d.setState(Connecting, nil)
	streams, err := d.cfg.Audio.Open(ctx, d.capture, d.player)
	if err != nil {
		return fmt.Errorf("open audio: %w", err)
	}
	defer func() {
		if cerr := streams.Close(); cerr != nil {
			d.log.Warn("close audio", "err", cerr)
		}
		d.capture.Close()
		cancel() // tool calls still waiting for hearth give up
		d.wg.Wait()
	}()
	defer func() {
		if d.minted.Load() > 0 {
			if serr := d.cfg.Hearth.StopVoice(context.WithoutCancel(ctx)); serr != nil {
				d.log.Warn("stop_voice not sent", "err", serr)
			}
		}
	}()
	dctx, refuse := context.WithCancelCause(ctx)
	defer refuse(nil)
	d.refuse.Store(&refuse)
	sess, err := voice.Dial(dctx, deskCreds{d}, d.cfg.Session)
	if err != nil {
		if cause := context.Cause(dctx); IsNoProvider(cause) {
			return cause // hearth's message, as is
		}
		if stopped() {
			return nil
		}
		return fmt.Errorf("voice: %w", err)
	}
	d.sess = sess
	d.wg.Go(func() { d.pumpMic(sess) })
	err = d.loop(ctx, sess)
	sess.Close()
	for range sess.Events() {
	}
	// What was cut and never truncated is stored as known, marked
	// incomplete; then what played to the end.
	d.storeCut(ctx)
	d.held = filterFinals(d.held, func(f final) bool { return !d.interrupted[f.itemID] })
	d.releaseAll(ctx)
	if stopped() {
		return nil
	}
	return err
}

func filterFinals(fs []final, keep func(final) bool) []final {
	out := fs[:0]
	for _, f := range fs {
		if keep(f) {
			out = append(out, f)
		}
	}
	return out
}

// pumpMic sends captured frames to the session: all of them with server
// VAD (the gate already dropped the agent's echo), only while the key is
// down with push-to-talk. The frames of one device buffer go as one
// append (Capture.Next).
func (d *Desk) pumpMic(sess *voice.Session) {
	for {
		f, _, ok := d.capture.Next()
		if !ok {
			return
		}
		if d.manual.Load() && !d.talking.Load() {
			continue
		}
		if err := sess.SendAudio(f); err != nil {
			if errors.Is(err, voice.ErrClosed) {
				return
			}
			d.log.Warn("mic audio not sent", "err", err)
		}
	}
}

func (d *Desk) loop(ctx context.Context, sess *voice.Session) error {
	events := sess.Events()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-events:
			if !ok {
				return nil
			}
			if c, closed := ev.(voice.Closed); closed {
				return c.Err
			}
			d.handle(ctx, ev)
		case <-d.wake:
			d.onPlaying(ctx)
		case c := <-d.ctl:
			if c == ctlTalk {
				d.talk()
			}
		}
	}
}

func (d *Desk) handle(ctx context.Context, ev voice.Event) {
	switch ev := ev.(type) {
	case voice.SessionReady:
		d.setState(Listening, nil)
		if d.playing.Load() {
			d.setState(AgentSpeaking, nil)
		}
	case voice.Reconnecting:
		d.setState(Reconnecting, ev.Err)
	case voice.SpeechStarted:
		if d.player.Replying() {
			d.bargeIn()
		}
		d.setState(UserSpeaking, nil)
	case voice.SpeechStopped:
		d.setState(Thinking, nil)
	case voice.UserTranscript:
		d.onUser(ctx, ev)
	case voice.AgentAudio:
		if d.cut[ev.ItemID] {
			// Queued before the session learnt of the barge-in.
			return
		}
		if n := len(d.queued); n == 0 || d.queued[n-1] != ev.ItemID {
			d.queued = append(d.queued, ev.ItemID)
		}
		d.player.Write(ev.ItemID, ev.PCM)
	case voice.AgentTranscript:
		d.onAgent(ctx, ev)
	case voice.FunctionCall:
		d.onCall(ctx, ev)
	case voice.ResponseDone:
		called := len(d.calls) > 0
		d.player.Finish()
		d.sendOutputs()
		d.release(ctx)
		if !called && d.state == Thinking && !d.player.Playing() {
			// A reply without audio: the floor is the user's again.
			d.setState(Listening, nil)
		}
	case voice.Error:
		d.log.Warn("voice provider error", "type", ev.Type, "code", ev.Code, "message", ev.Message, "recoverable", ev.Recoverable)
	}
}

func (d *Desk) onUser(ctx context.Context, ev voice.UserTranscript) {
	id := ev.ItemID
	if d.userSent[id] {
		return // .completed repeats
	}
	if !ev.Final {
		d.out.push(Partial{Role: RoleUser, ItemID: id, Text: ev.Text})
		return
	}
	d.userSent[id] = true
	d.store(ctx, RoleUser, id, ev.Text)
}

// onAgent keeps one transcript per agent item: the final text once it has
// played, or, after barge-in, the truncated text of what was heard.
func (d *Desk) onAgent(ctx context.Context, ev voice.AgentTranscript) {
	id := ev.ItemID
	if d.agentSent[id] {
		return
	}
	switch {
	case ev.Truncated:
		d.drop(id)
		d.store(ctx, RoleAgent, id, ev.Text)
	case d.interrupted[id]:
		// Cut short: the truncated final follows and replaces this; it is
		// kept only in case the session closes first.
		if ev.Final || d.known[id] == "" {
			d.known[id] = ev.Text
		}
	case !ev.Final:
		d.known[id] = ev.Text
		d.out.push(Partial{Role: RoleAgent, ItemID: id, Text: ev.Text})
	default:
		d.out.push(Partial{Role: RoleAgent, ItemID: id, Text: ev.Text})
		d.drop(id)
		d.held = append(d.held, final{id, ev.Text})
		d.release(ctx)
	}
}

// drop forgets a held final of id.
func (d *Desk) drop(id string) {
	d.held = filterFinals(d.held, func(f final) bool { return f.itemID != id })
}

// release stores the held agent finals once nothing is playing: until
// then the user may still cut them short.
func (d *Desk) release(ctx context.Context) {
	if d.player.Replying() {
		return // even between two pieces of it: the user may still cut it
	}
	d.releaseAll(ctx)
}

func (d *Desk) releaseAll(ctx context.Context) {
	held := d.held
	d.held = nil
	for _, f := range held {
		d.store(ctx, RoleAgent, f.itemID, f.text)
	}
}

// storeCut stores the items cut short whose truncated text never came
// (the session closed first): what is known of each, the final text or
// else the partial, marked incomplete.
func (d *Desk) storeCut(ctx context.Context) {
	order := d.cutOrder
	d.cutOrder = nil
	for _, id := range order {
		if !d.interrupted[id] || d.agentSent[id] {
			continue
		}
		d.storeTurn(ctx, Turn{Role: RoleAgent, ItemID: id, Text: d.known[id], Incomplete: true})
	}
}

// store sends one transcript to hearth, once per item.
func (d *Desk) store(ctx context.Context, role, id, text string) {
	d.storeTurn(ctx, Turn{Role: role, ItemID: id, Text: text})
}

func (d *Desk) storeTurn(ctx context.Context, t Turn) {
	sent := d.userSent
	if t.Role == RoleAgent {
		sent = d.agentSent
		delete(d.known, t.ItemID)
	}
	sent[t.ItemID] = true
	delete(d.interrupted, t.ItemID)
	if strings.TrimSpace(t.Text) == "" {
		d.out.push(Dropped{Role: t.Role, ItemID: t.ItemID})
		return
	}
	if err := d.cfg.Hearth.Transcript(ctx, t); err != nil {
		d.log.Warn("transcript not sent", "role", t.Role, "err", err)
	}
	d.out.push(Final{Role: t.Role, ItemID: t.ItemID, Text: t.Text})
}

// bargeIn stops playback at once and truncates the item being played at
// what was heard; its late deltas are dropped by the session. Items
// queued behind it were never heard: they are not stored, and their late
// audio is dropped.
func (d *Desk) bargeIn() {
	item, ms, ok := d.player.Flush()
	queued := d.queued
	d.queued = nil
	if !ok || item == "" {
		return
	}
	if i := slices.Index(queued, item); i >= 0 {
		for _, id := range queued[i+1:] {
			d.unheard(id)
		}
	}
	d.cut[item] = true
	if !d.agentSent[item] {
		d.interrupted[item] = true
		d.cutOrder = append(d.cutOrder, item)
		for _, f := range d.held {
			if f.itemID == item {
				d.known[item] = f.text
			}
		}
		d.drop(item)
	}
	if err := d.sess.InterruptItem(item, ms); err != nil {
		d.log.Warn("interrupt not sent", "err", err)
	}
}

// unheard: agent item id was flushed before any of it played. It is
// never stored (its text was not said to the user) and its late audio is
// dropped; the UI takes its partial down.
func (d *Desk) unheard(id string) {
	d.cut[id] = true
	if d.agentSent[id] {
		return
	}
	d.agentSent[id] = true
	delete(d.known, id)
	d.drop(id)
	d.out.push(Dropped{Role: RoleAgent, ItemID: id})
}

func (d *Desk) talk() {
	if d.sess == nil {
		return
	}
	if !d.manual.Load() {
		// Barge-in by key: half duplex hears nothing while the agent plays.
		d.gate.BargeIn()
		if d.player.Replying() {
			d.bargeIn()
			d.setState(Listening, nil)
		}
		return
	}
	if !d.talking.Load() {
		d.gate.BargeIn()
		if d.player.Replying() {
			d.bargeIn()
		}
		d.talking.Store(true)
		d.setState(UserSpeaking, nil)
		return
	}
	d.talking.Store(false)
	if err := d.sess.Commit(); err != nil {
		d.log.Warn("commit not sent", "err", err)
	}
	d.setState(Thinking, nil)
}

func (d *Desk) onPlaying(ctx context.Context) {
	if d.playing.Load() {
		if d.state != Reconnecting && d.state != Connecting {
			d.setState(AgentSpeaking, nil)
		}
		return
	}
	if !d.player.Playing() {
		d.queued = nil // all of it played
	}
	d.release(ctx)
	if d.state == AgentSpeaking {
		d.setState(Listening, nil)
	}
}

// onCall asks hearth to run a tool; the outputs of a response go to the
// session together once it is done.
func (d *Desk) onCall(ctx context.Context, c voice.FunctionCall) {
	tc := &toolCall{call: c, done: make(chan struct{})}
	d.calls = append(d.calls, tc)
	d.setState(Thinking, nil)
	d.wg.Go(func() {
		defer close(tc.done)
		out, err := d.cfg.Hearth.RunTool(ctx, c)
		if err != nil {
			d.log.Warn("voice tool call failed", "name", c.Name, "err", err)
			out = toolFailure(err)
		}
		tc.out = out
	})
}

// toolFailure is the output the model gets when hearth could not run a
// tool at all.
func toolFailure(err error) string {
	return fmt.Sprintf(`{"error":%q}`, "the tool could not be run: "+err.Error())
}

// sendOutputs answers the calls of the response that just ended: all
// outputs at once, then one response.create (Session.SendFunctionOutputs).
func (d *Desk) sendOutputs() {
	calls := d.calls
	d.calls = nil
	if len(calls) == 0 {
		return
	}
	sess := d.sess
	d.wg.Go(func() {
		outs := make([]voice.FunctionOutput, 0, len(calls))
		for _, c := range calls {
			<-c.done
			outs = append(outs, voice.FunctionOutput{CallID: c.call.CallID, Output: c.out})
		}
		if err := sess.SendFunctionOutputs(outs); err != nil && !errors.Is(err, voice.ErrClosed) {
			d.log.Warn("function outputs not sent", "err", err)
		}
	})
}

func (d *Desk) setState(s State, err error) {
	if s == d.state && err == nil {
		return
	}
	d.state = s
	d.out.push(StateChanged{State: s, Err: err})
}

// outbox is the unbounded queue of events for the UI: the desk never
// waits for the UI. Consecutive partials of one item collapse.
type outbox struct {
	mu     sync.Mutex
	q      []Event
	closed bool
	wake   chan struct{}
}

func (o *outbox) init() { o.wake = make(chan struct{}, 1) }

func (o *outbox) push(e Event) {
	o.mu.Lock()
	if p, ok := e.(Partial); ok && len(o.q) > 0 {
		if last, ok := o.q[len(o.q)-1].(Partial); ok && last.ItemID == p.ItemID && last.Role == p.Role {
			o.q[len(o.q)-1] = p
			o.mu.Unlock()
			return
		}
	}
	o.q = append(o.q, e)
	o.mu.Unlock()
	o.signal()
}

func (o *outbox) signal() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

func (o *outbox) close() {
	o.mu.Lock()
	o.closed = true
	o.mu.Unlock()
	o.signal()
}

func (o *outbox) next(ctx context.Context) (Event, error) {
	for {
		o.mu.Lock()
		if len(o.q) > 0 {
			e := o.q[0]
			o.q[0] = nil
			o.q = o.q[1:]
			o.mu.Unlock()
			return e, nil
		}
		closed := o.closed
		o.mu.Unlock()
		if closed {
			return nil, ErrDone
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-o.wake:
		}
	}
}
