package hearth_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mnemo/mnemo/hearth"
	"github.com/mnemo/mnemo/hearth/llm"
	"github.com/mnemo/mnemo/memory/journal"
)

// This file is a transport of its own, in test code: it drives the core
// only through its commands and Watch, proving that nothing in the core
// depends on NDJSON or any other door.

// stepModel streams the chunks the test feeds it, one per step, and ends
// its reply when the channel closes.
type stepModel struct{ chunks chan string }

func (m *stepModel) Name() string  { return "step" }
func (m *stepModel) Model() string { return "step-1" }
func (m *stepModel) Stream(ctx context.Context, _ llm.Request, onText func(string)) (llm.Response, error) {
	var all strings.Builder
	for {
		select {
		case <-ctx.Done():
			return llm.Response{}, context.Cause(ctx)
		case c, ok := <-m.chunks:
			if !ok {
				return llm.Response{Text: all.String(), Model: "step-1"}, nil
			}
			all.WriteString(c)
			onText(c)
		}
	}
}

type fixed struct{ m hearth.Model }

func (f fixed) Resolve() (hearth.Model, error) { return f.m, nil }

// countingJournal counts appends, to match them with published records.
type countingJournal struct {
	*journal.Journal
	mu  sync.Mutex
	ids []string
}

func (j *countingJournal) Append(ctx context.Context, r journal.Record) (journal.Record, error) {
	r, err := j.Journal.Append(ctx, r)
	if err == nil {
		j.mu.Lock()
		j.ids = append(j.ids, r.ID)
		j.mu.Unlock()
	}
	return r, err
}

func (j *countingJournal) appended() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]string(nil), j.ids...)
}

type core struct {
	h       *hearth.Hearth
	j       *countingJournal
	model   *stepModel
	cancel  context.CancelFunc
	stopped chan struct{}
}

func startCore(t *testing.T) *core {
	t.Helper()
	jj, err := journal.Open(t.TempDir(), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	j := &countingJournal{Journal: jj}
	m := &stepModel{chunks: make(chan string)}
	h, err := hearth.New(hearth.Config{Journal: j, Models: fixed{m}, ShutdownGrace: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &core{h: h, j: j, model: m, cancel: cancel, stopped: make(chan struct{})}
	go func() {
		defer close(c.stopped)
		h.Run(ctx)
	}()
	t.Cleanup(func() {
		c.stop()
		jj.Close()
	})
	return c
}

func (c *core) stop() {
	c.cancel()
	<-c.stopped
}

// recorder is a subscriber that keeps everything it is given; wait blocks
// until an event satisfies cond.
type recorder struct {
	mu     sync.Mutex
	cond   *sync.Cond
	events []hearth.Event
	err    error
	done   bool
}

func newRecorder() *recorder {
	r := &recorder{}
	r.cond = sync.NewCond(&r.mu)
	return r
}

func (r *recorder) watch(t *testing.T, h *hearth.Hearth, opts hearth.WatchOptions) {
	t.Helper()
	sub, err := h.Subscribe(opts)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer sub.Close()
		err := sub.Run(context.Background(), func(evs []hearth.Event) error {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.events = append(r.events, evs...)
			r.cond.Broadcast()
			return nil
		})
		r.mu.Lock()
		r.err, r.done = err, true
		r.cond.Broadcast()
		r.mu.Unlock()
	}()
}

func (r *recorder) waitFor(t *testing.T, cond func(hearth.Event) bool) {
	t.Helper()
	deadline := time.AfterFunc(10*time.Second, func() {
		r.mu.Lock()
		r.done = true
		r.cond.Broadcast()
		r.mu.Unlock()
	})
	defer deadline.Stop()
	r.mu.Lock()
	defer r.mu.Unlock()
	for seen := 0; ; {
		for ; seen < len(r.events); seen++ {
			if cond(r.events[seen]) {
				return
			}
		}
		if r.done {
			t.Fatalf("subscription ended (%v) before the awaited event; got %s", r.err, kinds(r.events))
		}
		r.cond.Wait()
	}
}

// waitText waits until the reply text the subscriber saw is want.
func (r *recorder) waitText(t *testing.T, want string) {
	t.Helper()
	r.waitFor(t, func(hearth.Event) bool { return text(r.events) == want })
}

func (r *recorder) waitEnd(t *testing.T) error {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for !r.done {
		r.cond.Wait()
	}
	return r.err
}

func (r *recorder) snapshot() []hearth.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]hearth.Event(nil), r.events...)
}

func kinds(evs []hearth.Event) string {
	var b []string
	for _, e := range evs {
		b = append(b, strings.TrimPrefix(fmt.Sprintf("%T", e), "*hearth."))
	}
	return strings.Join(b, " ")
}

func isDone(e hearth.Event) bool { _, ok := e.(*hearth.ReplyDone); return ok }

func isIdle(e hearth.Event) bool {
	s, ok := e.(*hearth.StateChanged)
	return ok && s.State == hearth.StateIdle
}

// text is the reply as a subscriber saw it: the snapshot's pending text
// and every token after it.
func text(evs []hearth.Event) string {
	var b strings.Builder
	for _, e := range evs {
		switch e := e.(type) {
		case *hearth.Snapshot:
			b.WriteString(e.Pending)
		case *hearth.Token:
			b.WriteString(e.Text)
		}
	}
	return b.String()
}

func TestWatchTwoSubscribersOneSlow(t *testing.T) {
	c := startCore(t)
	fast := newRecorder()
	fast.watch(t, c.h, hearth.WatchOptions{Name: "fast"})

	// The slow subscriber never returns from its first batch until the
	// end: its small queue overflows and it is cut off, alone.
	release := make(chan struct{})
	slowSub, err := c.h.Subscribe(hearth.WatchOptions{Name: "slow", MaxEvents: 4})
	if err != nil {
		t.Fatal(err)
	}
	slowErr := make(chan error, 1)
	go func() {
		defer slowSub.Close()
		slowErr <- slowSub.Run(context.Background(), func([]hearth.Event) error { <-release; return nil })
	}()

	if err := c.h.Send("r1", "hello"); err != nil {
		t.Fatal(err)
	}
	want := ""
	for i := range 50 {
		chunk := fmt.Sprintf("chunk %d; ", i)
		want += chunk
		c.model.chunks <- chunk
		// Interleave must-deliver events so that tokens cannot simply
		// coalesce into one slot.
		if i%10 == 0 {
			c.h.Announce(hearth.Notice{Code: hearth.CodeConfigInvalid, Message: fmt.Sprint("notice ", i)})
		}
	}
	close(c.model.chunks)
	fast.waitFor(t, isIdle)
	close(release)
	if err := <-slowErr; !errors.Is(err, hearth.ErrLagging) {
		t.Errorf("slow subscriber ended with %v, want ErrLagging", err)
	}

	evs := fast.snapshot()
	if got := text(evs); got != want {
		t.Errorf("fast subscriber's reply text = %q, want %q", got, want)
	}
	var order []string
	for _, e := range evs {
		switch e := e.(type) {
		case *hearth.Snapshot:
			order = append(order, "snapshot")
		case *hearth.TurnStored:
			order = append(order, "turn:"+e.Record.Role+":"+e.Ref)
		case *hearth.StateChanged:
			order = append(order, "state:"+e.State)
		case *hearth.ReplyDone:
			order = append(order, "done:"+e.Record.Text[:7])
		}
	}
	if diff := cmp.Diff([]string{"snapshot", "turn:user:r1", "state:thinking", "done:chunk 0", "state:idle"}, order[:min(5, len(order))]); diff != "" {
		t.Errorf("event order (-want +got):\n%s", diff)
	}
	if h := c.h.Health(); h.Dropped != 1 || h.Subscribers != 1 {
		t.Errorf("health: dropped %d, subscribers %d; want 1 and 1", h.Dropped, h.Subscribers)
	}
}

func TestWatchMidReplyNoGapNoDuplicate(t *testing.T) {
	c := startCore(t)
	first := newRecorder()
	first.watch(t, c.h, hearth.WatchOptions{})
	if err := c.h.Send("", "go"); err != nil {
		t.Fatal(err)
	}
	c.model.chunks <- "one "
	c.model.chunks <- "two "
	first.waitText(t, "one two ")

	// Joins mid-reply: its snapshot holds what streamed so far.
	late := newRecorder()
	late.watch(t, c.h, hearth.WatchOptions{})
	c.model.chunks <- "three"
	close(c.model.chunks)
	late.waitFor(t, isDone)

	evs := late.snapshot()
	snap, ok := evs[0].(*hearth.Snapshot)
	if !ok {
		t.Fatalf("first event is %T, want *hearth.Snapshot", evs[0])
	}
	if snap.Pending != "one two " || snap.State != hearth.StateThinking {
		t.Errorf("snapshot pending %q state %q, want %q thinking", snap.Pending, snap.State, "one two ")
	}
	if got := text(evs); got != "one two three" {
		t.Errorf("late subscriber's text = %q, want %q", got, "one two three")
	}
}

func TestWatchClassesAndReplies(t *testing.T) {
	c := startCore(t)
	turnsOnly := newRecorder()
	sub, err := c.h.Subscribe(hearth.WatchOptions{Classes: hearth.ClassTurns})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer sub.Close()
		err := sub.Run(context.Background(), func(evs []hearth.Event) error {
			turnsOnly.mu.Lock()
			defer turnsOnly.mu.Unlock()
			turnsOnly.events = append(turnsOnly.events, evs...)
			turnsOnly.cond.Broadcast()
			return nil
		})
		turnsOnly.mu.Lock()
		turnsOnly.err, turnsOnly.done = err, true
		turnsOnly.cond.Broadcast()
		turnsOnly.mu.Unlock()
	}()
	if !sub.Reply("pong") {
		t.Fatal("Reply on a live subscription returned false")
	}
	if err := c.h.Send("", "hi"); err != nil {
		t.Fatal(err)
	}
	c.model.chunks <- "hey"
	close(c.model.chunks)
	turnsOnly.waitFor(t, isDone)
	var got []string
	for _, e := range turnsOnly.snapshot() {
		got = append(got, strings.TrimPrefix(fmt.Sprintf("%T", e), "*hearth."))
	}
	if diff := cmp.Diff([]string{"Snapshot", "Reply", "TurnStored", "ReplyDone"}, got); diff != "" {
		t.Errorf("a ClassTurns subscriber got (-want +got):\n%s", diff)
	}
}

// Every committed record is published exactly once, whichever path wrote
// it: messages, transcripts, replies and memories the agent kept.
func TestEveryRecordPublishedOnce(t *testing.T) {
	c := startCore(t)
	r := newRecorder()
	r.watch(t, c.h, hearth.WatchOptions{})
	if err := c.h.AddTranscript("v", "user", "spoken words"); err != nil {
		t.Fatal(err)
	}
	if err := c.h.Send("m", "typed words"); err != nil {
		t.Fatal(err)
	}
	close(c.model.chunks) // an empty reply: nothing to store but the error
	if _, err := c.h.Keep(context.Background(), "fact", "the owner likes tea"); err != nil {
		t.Fatal(err)
	}
	r.waitFor(t, func(e hearth.Event) bool {
		ts, ok := e.(*hearth.TurnStored)
		return ok && ts.Record.Text == "the owner likes tea"
	})
	c.stop()
	r.waitEnd(t)

	var published []string
	for _, e := range r.snapshot() {
		switch e := e.(type) {
		case *hearth.TurnStored:
			published = append(published, e.Record.ID)
		case *hearth.ToolOutcome:
			published = append(published, e.Record.ID)
		case *hearth.ReplyDone:
			published = append(published, e.Record.ID)
		}
	}
	if diff := cmp.Diff(c.j.appended(), published); diff != "" {
		t.Errorf("records appended vs published (-appended +published):\n%s", diff)
	}
}

func TestShutdownDeliversThenEnds(t *testing.T) {
	c := startCore(t)
	r := newRecorder()
	r.watch(t, c.h, hearth.WatchOptions{})
	if err := c.h.Send("", "hello"); err != nil {
		t.Fatal(err)
	}
	c.model.chunks <- "partial"
	r.waitFor(t, func(e hearth.Event) bool { _, ok := e.(*hearth.Token); return ok })
	go close(c.model.chunks) // the turn in flight finishes within the grace
	c.stop()
	if err := r.waitEnd(t); !errors.Is(err, hearth.ErrShuttingDown) {
		t.Errorf("subscription ended with %v, want ErrShuttingDown", err)
	}
	evs := r.snapshot()
	if !isDone(evs[len(evs)-2]) {
		t.Errorf("events before the end: %s; want the reply's done, then idle", kinds(evs))
	}
	var p *hearth.Problem
	if err := c.h.Send("late", "too late"); !errors.As(err, &p) || p.Code != hearth.CodeShuttingDown {
		t.Errorf("Send after shutdown = %v, want a shutting_down problem", err)
	}
	if _, err := c.h.Subscribe(hearth.WatchOptions{}); !errors.Is(err, hearth.ErrShuttingDown) {
		t.Errorf("Subscribe after shutdown = %v, want ErrShuttingDown", err)
	}
}

// A snapshot bigger than the byte budget is a subscriber's starting state,
// not a sign that it fell behind.
func TestBigSnapshotIsNotLagging(t *testing.T) {
	c := startCore(t)
	if err := c.h.AddTranscript("", "user", strings.Repeat("long words ", 1000)); err != nil {
		t.Fatal(err)
	}
	seen := newRecorder()
	seen.watch(t, c.h, hearth.WatchOptions{})
	seen.waitFor(t, func(e hearth.Event) bool { _, ok := e.(*hearth.TurnStored); return ok })

	sub, err := c.h.Subscribe(hearth.WatchOptions{MaxBytes: 1024})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	c.h.Announce(hearth.Notice{Code: hearth.CodeConfigInvalid, Message: "a small event"})
	var got []hearth.Event
	ctx, cancel := context.WithCancel(context.Background())
	err = sub.Run(ctx, func(evs []hearth.Event) error {
		got = append(got, evs...)
		if len(got) >= 2 {
			cancel()
		}
		return nil
	})
	if errors.Is(err, hearth.ErrLagging) || len(got) != 2 {
		t.Errorf("Run = %v after %s; want the snapshot and the notice", err, kinds(got))
	}
}

// The snapshot lists what this hearth offers: search only with memory.
func TestFeatures(t *testing.T) {
	c := startCore(t)
	r := newRecorder()
	r.watch(t, c.h, hearth.WatchOptions{})
	r.waitFor(t, func(hearth.Event) bool { return true })
	snap := r.snapshot()[0].(*hearth.Snapshot)
	if diff := cmp.Diff([]string{"cancel", "confirm", "conversations", "forget", "health", "history_query", "tools", "transcript"}, snap.Features); diff != "" {
		t.Errorf("features of a hearth without memory (-want +got):\n%s", diff)
	}
}
