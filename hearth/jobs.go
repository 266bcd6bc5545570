package hearth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/mnemo/mnemo/hearth/curator"
	"github.com/mnemo/mnemo/hearth/jobs"
	"github.com/mnemo/mnemo/hearth/llm"
	"github.com/mnemo/mnemo/internal/backoff"
	"github.com/mnemo/mnemo/memory/journal"
	"github.com/mnemo/mnemo/memory/vault"
)

// JobsConfig turns on the job runner: the jobs of the vault's registry
// (jobs/<name>.yml; see hearth/jobs) run on their schedules, off the
// reply path, in their own goroutine and with their own model calls.
// What a job makes goes through Propose as author job:<name>.
type JobsConfig struct {
	// StateDir holds the runner's record (jobs.state.json) and the
	// replies staged for a run in progress (jobs.staged/); required.
	StateDir string
	// Model is the jobs' model; nil: the turn's (Config.Models).
	Model     Model
	ModelName string
	// Retry paces the retries of a failed run; zero: 1 min to 1 h.
	Retry backoff.Policy
	// SessionIdle ends a session after this long without a record; zero:
	// 30 min. A session cut by a stop ends at the next start.
	SessionIdle time.Duration
	// Observe, when set, is told of every run, finished or failed.
	Observe func(JobRun)
}

// JobRun is what one run of a job did.
type JobRun struct {
	Job, Key  string
	Attempt   int
	Outcomes  []ProposalOutcome
	Rejected  []curator.Rejection
	Questions []string
	Err       error // nil: finished
}

// JobStatus is a job as `mnemo jobs` lists it.
type JobStatus struct {
	Name     string
	Schedule string // as written; "" for a file that does not parse
	Enabled  bool
	Last     *jobs.Run
	Next     time.Time // zero for an event job or a disabled one
	Error    string    // why the file does not parse
}

// JobsHealth is the runner in a health report.
type JobsHealth struct {
	Jobs, Failing, Bad int
	Runs               int // runs finished since start
	LastError          string
}

type jobRequest struct {
	name  string
	reply chan jobReply
}

type jobReply struct {
	run JobRun
	err error
}

type jobsState struct {
	cfg  JobsConfig
	runs chan jobRequest
	// wake asks the runner to look at once: a forget removed a summary
	// (see forgetJobs).
	wake chan struct{}
	// stopped is closed when the runner ends (or never started).
	stopped chan struct{}

	mu      sync.Mutex
	st      *jobs.State
	retryAt map[string]time.Time
	health  JobsHealth
}

func newJobsState(cfg *JobsConfig) *jobsState {
	if cfg == nil {
		return nil
	}
	s := &jobsState{cfg: *cfg, runs: make(chan jobRequest), wake: make(chan struct{}, 1), stopped: make(chan struct{}), retryAt: map[string]time.Time{}}
	if s.cfg.Retry == (backoff.Policy{}) {
		s.cfg.Retry = backoff.Policy{Initial: time.Minute, Max: time.Hour, JitterBelow: 0.1, JitterAbove: 0.1}
	}
	if s.cfg.SessionIdle <= 0 {
		s.cfg.SessionIdle = 30 * time.Minute
	}
	return s
}

// ErrNoJob is RunJob's error for a name the registry does not have.
var ErrNoJob = errors.New("no such job")

// RunJob runs the job name now, over its current period (a daily job:
// yesterday; an event job: the session so far), whether or not that
// period already ran, and returns what it did.
func (h *Hearth) RunJob(ctx context.Context, name string) (JobRun, error) {
	s := h.jobs
	if s == nil || h.cfg.Vault == nil {
		return JobRun{}, &Problem{Code: CodeUnavailable, Message: "this hearth runs no jobs"}
	}
	req := jobRequest{name: name, reply: make(chan jobReply, 1)}
	select {
	case s.runs <- req:
	case <-s.stopped:
		return JobRun{}, &Problem{Code: CodeShuttingDown, Message: "the job runner has stopped"}
	case <-ctx.Done():
		return JobRun{}, ctx.Err()
	}
	select {
	case r := <-req.reply:
		return r.run, r.err
	case <-ctx.Done():
		return JobRun{}, ctx.Err()
	}
}

// Jobs lists the registry with each job's last and next run; files that
// do not parse are listed with their error.
func (h *Hearth) Jobs() ([]JobStatus, error) {
	s := h.jobs
	if s == nil || h.cfg.Vault == nil {
		return nil, &Problem{Code: CodeUnavailable, Message: "this hearth runs no jobs"}
	}
	js, bad, err := jobs.Load(h.cfg.Vault.Dir())
	if err != nil {
		return nil, err
	}
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []JobStatus
	for _, j := range js {
		st := JobStatus{Name: j.Name, Schedule: j.Schedule.String(), Enabled: j.Enabled}
		if s.st != nil {
			if r, ok := s.st.Last[j.Name]; ok {
				st.Last = &r
			}
		}
		if j.Enabled {
			st.Next = j.Schedule.Next(now)
			if at, ok := s.retryAt[j.Name]; ok {
				st.Next = at
			}
		}
		out = append(out, st)
	}
	for _, e := range bad {
		name, _, _ := strings.Cut(strings.TrimPrefix(e.Error(), jobs.Dir+"/"), ".yml")
		out = append(out, JobStatus{Name: name, Error: e.Error()})
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Name < out[b].Name })
	return out, nil
}

// JobsHealth reports the runner; nil when it is off.
func (h *Hearth) JobsHealth() *JobsHealth {
	s := h.jobs
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.health
	return &r
}

// startJobs runs the jobs until ctx ends; done waits for the runner.
func (h *Hearth) startJobs(ctx context.Context) (done func()) {
	s := h.jobs
	if s == nil || h.cfg.Vault == nil {
		return func() {}
	}
	started := false
	defer func() {
		if !started {
			close(s.stopped)
		}
	}()
	st, err := jobs.LoadState(s.cfg.StateDir)
	if err == nil && st.SessionCursor == "" {
		// A new record starts at the journal's newest: turning jobs on
		// does not summarise the whole past as one session.
		var last []journal.Record
		if last, err = h.cfg.Journal.Tail(1); err == nil && len(last) == 1 {
			st.SessionCursor = last[0].ID
			err = st.Save(s.cfg.StateDir)
		}
	}
	if err != nil {
		h.log.Error("jobs: no state; jobs are off", "err", err)
		return func() {}
	}
	s.mu.Lock()
	s.st = st
	s.mu.Unlock()
	finished := make(chan struct{})
	started = true
	go func() {
		defer close(finished)
		defer close(s.stopped)
		h.runJobs(ctx)
	}()
	return func() { <-finished }
}

// runJobs is the runner's loop: run what is due, sleep until the next
// thing is, or until the owner asks for a run.
func (h *Hearth) runJobs(ctx context.Context) {
	s := h.jobs
	for {
		wait := h.jobsDue(ctx)
		if ctx.Err() != nil {
			return
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		case <-s.wake:
			t.Stop()
		case req := <-s.runs:
			t.Stop()
			run, err := h.jobNow(ctx, req.name)
			req.reply <- jobReply{run, err}
		}
	}
}

// jobsDue runs every job whose period has not finished (and whose retry
// is due), and the session_end jobs of a session that ended. It returns
// how long to wait before looking again.
func (h *Hearth) jobsDue(ctx context.Context) time.Duration {
	s := h.jobs
	js, bad, err := jobs.Load(h.cfg.Vault.Dir())
	if err != nil {
		h.log.Warn("jobs: registry unreadable", "err", err)
	}
	for _, e := range bad {
		h.log.Warn("jobs: job file refused; the others run", "err", e)
	}
	now := time.Now()
	wait := s.cfg.SessionIdle
	s.mu.Lock()
	s.health.Jobs, s.health.Bad = len(js), len(bad)
	s.mu.Unlock()
	var session []*jobs.Job
	for _, j := range js {
		if !j.Enabled {
			continue
		}
		if j.Schedule.Kind == jobs.Event {
			session = append(session, j)
			continue
		}
		if ctx.Err() != nil {
			return 0
		}
		h.catchUp(ctx, j, now)
		next := j.Schedule.Next(now)
		s.mu.Lock()
		if at, ok := s.retryAt[j.Name]; ok && at.Before(next) {
			next = at
		}
		s.mu.Unlock()
		wait = min(wait, max(next.Sub(time.Now()), 0))
	}
	if len(session) > 0 && ctx.Err() == nil {
		if w := h.sessionEnd(ctx, session, now); w > 0 {
			wait = min(wait, w)
		}
		if ctx.Err() == nil {
			h.redoSessions(ctx, session, now)
		}
	}
	return max(wait, time.Second)
}

// catchUp runs every period of j missed, up to jobs.CatchUp of them,
// oldest first: the latest always, an older one only when it has turns
// (else it is marked finished: there is nothing to summarise). One scan
// of the journal covers them all; a failed run stops the rest until its
// retry.
func (h *Hearth) catchUp(ctx context.Context, j *jobs.Job, now time.Time) {
	s := h.jobs
	dues := j.Schedule.Missed(now, jobs.CatchUp(j.Schedule.Kind))
	if len(dues) == 0 {
		return
	}
	latest := dues[len(dues)-1]
	s.mu.Lock()
	retry, retrying := s.retryAt[j.Name]
	var todo []time.Time
	for _, due := range dues {
		period, _, _ := j.Schedule.Period(due)
		if !s.st.Finished(j.Name, jobs.Key(j.Name, period)) {
			todo = append(todo, due)
		}
	}
	s.mu.Unlock()
	if len(todo) == 0 || retrying && now.Before(retry) {
		return
	}
	_, from, _ := j.Schedule.Period(todo[0])
	_, _, to := j.Schedule.Period(todo[len(todo)-1])
	recs, err := h.periodRecords(ctx, j, from, to)
	if err != nil {
		h.log.Warn("jobs: journal unreadable", "job", j.Name, "err", err)
		return
	}
	for _, due := range todo {
		if ctx.Err() != nil {
			return
		}
		period, pf, pt := j.Schedule.Period(due)
		var in []journal.Record
		for _, r := range recs {
			if !r.TS.Before(pf) && r.TS.Before(pt) {
				in = append(in, r)
			}
		}
		key := jobs.Key(j.Name, period)
		if len(in) == 0 && !due.Equal(latest) {
			s.mu.Lock()
			s.st.Finish(j.Name, key)
			err := s.st.Save(s.cfg.StateDir)
			s.mu.Unlock()
			if err != nil {
				h.log.Error("jobs: state not saved", "err", err)
			}
			continue
		}
		if h.runJob(ctx, j, key, period, due, in).Err != nil {
			return
		}
	}
}

// periodRecords are the turns of the journal in [from, to).
func (h *Hearth) periodRecords(ctx context.Context, j *jobs.Job, from, to time.Time) ([]journal.Record, error) {
	if j.Inputs.Turns == "none" {
		return nil, nil
	}
	var recs []journal.Record
	err := h.cfg.Journal.ScanAfter(ctx, "", func(r journal.Record) error {
		if r.IsTurn() && !r.TS.Before(from) && r.TS.Before(to) {
			recs = append(recs, r)
		}
		return nil
	})
	return recs, err
}

// sessionEnd runs the session_end jobs over the records after the
// session cursor once the newest of them is SessionIdle old, or was
// written before this hearth started (a stop ended that session). It
// returns when to look again (0: nothing waits).
func (h *Hearth) sessionEnd(ctx context.Context, js []*jobs.Job, now time.Time) time.Duration {
	s := h.jobs
	s.mu.Lock()
	cursor := s.st.SessionCursor
	s.mu.Unlock()
	var recs []journal.Record
	if err := h.cfg.Journal.ScanAfter(ctx, cursor, func(r journal.Record) error {
		if r.IsTurn() {
			recs = append(recs, r)
		}
		return nil
	}); err != nil {
		h.log.Warn("jobs: journal unreadable", "err", err)
		return 0
	}
	if len(recs) == 0 {
		return 0
	}
	last := recs[len(recs)-1]
	if idle := now.Sub(last.TS); idle < s.cfg.SessionIdle && !last.TS.Before(h.started) {
		return s.cfg.SessionIdle - idle
	}
	ok := true
	for _, j := range js {
		key := jobs.Key(j.Name, recs[0].ID)
		s.mu.Lock()
		done := s.st.Finished(j.Name, key)
		retry, retrying := s.retryAt[j.Name]
		s.mu.Unlock()
		if done {
			continue
		}
		if retrying && now.Before(retry) {
			ok = false
			continue
		}
		if h.runJob(ctx, j, key, recs[0].ID, last.TS, recs).Err != nil {
			ok = false
		}
	}
	if !ok {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.SessionCursor = last.ID
	if err := s.st.Save(s.cfg.StateDir); err != nil {
		h.log.Error("jobs: state not saved", "err", err)
	}
	return 0
}

// redoSessions runs the session_end jobs again over each session whose
// summary a forget removed (State.Redo), from the turns of its span that
// remain; a session with none left needs no summary. A span leaves the
// queue once every job has run over it; a failed run keeps it until its
// retry.
func (h *Hearth) redoSessions(ctx context.Context, js []*jobs.Job, now time.Time) {
	s := h.jobs
	s.mu.Lock()
	redo := slices.Clone(s.st.Redo)
	s.mu.Unlock()
	var done []jobs.Span
	for _, sp := range redo {
		after := ""
		if len(sp.From) == 26 { // from the start of its millisecond: only the shards that can hold it
			after = sp.From[:10] + strings.Repeat("0", 16)
		}
		var recs []journal.Record
		if err := h.cfg.Journal.ScanAfter(ctx, after, func(r journal.Record) error {
			if r.IsTurn() && r.ID >= sp.From && r.ID <= sp.To {
				recs = append(recs, r)
			}
			return nil
		}); err != nil {
			h.log.Warn("jobs: journal unreadable", "err", err)
			return
		}
		ok := true
		for _, j := range js {
			if len(recs) == 0 {
				break
			}
			key := jobs.Key(j.Name, recs[0].ID)
			s.mu.Lock()
			finished := s.st.Finished(j.Name, key)
			retry, retrying := s.retryAt[j.Name]
			s.mu.Unlock()
			switch {
			case finished:
			case retrying && now.Before(retry):
				ok = false
			case h.runJob(ctx, j, key, recs[0].ID, recs[len(recs)-1].TS, recs).Err != nil:
				ok = false
			}
		}
		if ok {
			if len(recs) > 0 {
				h.log.Info("jobs: a session's summary made again without the turns forgotten", "from", recs[0].ID, "turns", len(recs))
			}
			done = append(done, sp)
		}
	}
	if len(done) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.Redo = slices.DeleteFunc(s.st.Redo, func(sp jobs.Span) bool { return slices.Contains(done, sp) })
	if err := s.st.Save(s.cfg.StateDir); err != nil {
		h.log.Error("jobs: state not saved", "err", err)
	}
}

// jobNow runs name at once over its current period.
func (h *Hearth) jobNow(ctx context.Context, name string) (JobRun, error) {
	js, bad, err := jobs.Load(h.cfg.Vault.Dir())
	if err != nil {
		return JobRun{}, err
	}
	for _, e := range bad {
		if strings.HasPrefix(e.Error(), jobs.Dir+"/"+name+".yml:") {
			return JobRun{}, &Problem{Code: CodeConfigInvalid, Message: e.Error()}
		}
	}
	for _, j := range js {
		if j.Name != name {
			continue
		}
		now := time.Now()
		if j.Schedule.Kind == jobs.Event {
			h.jobs.mu.Lock()
			cursor := h.jobs.st.SessionCursor
			h.jobs.mu.Unlock()
			var recs []journal.Record
			if err := h.cfg.Journal.ScanAfter(ctx, cursor, func(r journal.Record) error {
				if r.IsTurn() {
					recs = append(recs, r)
				}
				return nil
			}); err != nil {
				return JobRun{}, err
			}
			if len(recs) == 0 {
				return JobRun{Job: name}, &Problem{Code: CodeBadRequest, Message: "no session to summarise: nothing was said since the last summary"}
			}
			run := h.runJob(ctx, j, jobs.Key(j.Name, recs[0].ID), recs[0].ID, now, recs)
			return run, run.Err
		}
		due := j.Schedule.Last(now)
		period, from, to := j.Schedule.Period(due)
		recs, err := h.periodRecords(ctx, j, from, to)
		if err != nil {
			return JobRun{}, err
		}
		run := h.runJob(ctx, j, jobs.Key(j.Name, period), period, due, recs)
		return run, run.Err
	}
	return JobRun{}, &Problem{Code: CodeBadRequest, Message: fmt.Sprintf("%s: %q is not in jobs/", ErrNoJob, name)}
}

// staged is a run's reply, decoded and saved before anything is
// proposed, with the proposals already proposed: a run cut short (a
// failure, a crash) resumes from it without asking the model again, so
// nothing is proposed twice.
type staged struct {
	Key       string              `json:"key"`
	Proposals []vault.Proposal    `json:"proposals"`
	Questions []vault.Question    `json:"questions"`
	Rejected  []curator.Rejection `json:"rejected"`
	Done      []string            `json:"done"` // ids proposed
}

func stagedName(key string) string {
	return strings.NewReplacer(":", "_", "/", "_").Replace(key) + ".json"
}

// runJob runs j once over recs as key, records the outcome, and on
// failure schedules the retry.
func (h *Hearth) runJob(ctx context.Context, j *jobs.Job, key, period string, due time.Time, recs []journal.Record) JobRun {
	s := h.jobs
	s.mu.Lock()
	prev := s.st.Last[j.Name]
	attempt := 1
	if prev.Key == key && prev.Result == "failed" {
		attempt = prev.Attempts + 1
	}
	s.mu.Unlock()
	started := time.Now()
	run := h.doJob(ctx, j, key, period, due, recs)
	run.Attempt = attempt
	rec := jobs.Run{Key: key, Started: started, Finished: time.Now(), Result: "ok", Attempts: attempt}
	for _, o := range run.Outcomes {
		switch o.Decision {
		case DecisionApplied:
			rec.Applied++
		case DecisionQueued:
			rec.Queued++
		default:
			rec.Rejected++
		}
	}
	rec.Rejected += len(run.Rejected)
	s.mu.Lock()
	if run.Err != nil {
		rec.Result, rec.Error, rec.Finished = "failed", run.Err.Error(), time.Time{}
		s.retryAt[j.Name] = time.Now().Add(s.cfg.Retry.Delay(attempt))
		s.health.LastError = j.Name + ": " + run.Err.Error()
		h.log.Warn("job failed; it will be retried", "job", j.Name, "key", key, "attempt", attempt, "err", run.Err, "retry_at", s.retryAt[j.Name])
	} else {
		delete(s.retryAt, j.Name)
		s.st.Finish(j.Name, key)
		s.health.Runs++
		h.log.Info("job finished", "job", j.Name, "key", key, "records", len(recs), "applied", rec.Applied, "queued", rec.Queued, "rejected", rec.Rejected, "questions", len(run.Questions))
	}
	s.st.Last[j.Name] = rec
	s.health.Failing = len(s.retryAt)
	err := s.st.Save(s.cfg.StateDir)
	s.mu.Unlock()
	if err != nil {
		h.log.Error("jobs: state not saved", "err", err)
	}
	if s.cfg.Observe != nil {
		s.cfg.Observe(run)
	}
	return run
}

// summaryPath is where j's summary of period goes.
func summaryPath(j *jobs.Job, period string, due time.Time) string {
	switch j.Schedule.Kind {
	case jobs.Daily:
		return "summaries/daily/" + period + ".md"
	case jobs.Weekly:
		return "summaries/weekly/" + period + ".md"
	}
	return "summaries/threads/" + due.Format(time.DateOnly) + "-" + strings.ToLower(period) + ".md"
}

// doJob stages j's reply (or resumes a staged one) and proposes it.
func (h *Hearth) doJob(ctx context.Context, j *jobs.Job, key, period string, due time.Time, recs []journal.Record) JobRun {
	s := h.jobs
	run := JobRun{Job: j.Name, Key: key}
	dir := filepath.Join(s.cfg.StateDir, "jobs.staged")
	name := stagedName(key)
	var st staged
	resumed := false
	b, err := os.ReadFile(filepath.Join(dir, name))
	switch {
	case err == nil:
		if err := json.Unmarshal(b, &st); err != nil || st.Key != key {
			h.log.Warn("jobs: staged run unreadable; asking again", "key", key, "err", err)
			st = staged{}
		}
		resumed = st.Key != ""
	case !errors.Is(err, os.ErrNotExist):
		run.Err = fmt.Errorf("staged run: %w", err)
		return run
	}
	if st.Key == "" {
		if st, err = h.stageJob(ctx, j, key, period, due, recs); err != nil {
			run.Err = err
			return run
		}
		if err := writeStaged(dir, name, &st); err != nil {
			run.Err = err
			return run
		}
	}
	run.Rejected = st.Rejected
	// The staged proposals are carried out together: what policy applies
	// is one vault commit, all of it or none; a run resumed from its
	// stage carries out only what the ledger and the inbox do not hold
	// already. (Done is what a stage of an older hearth proposed one by
	// one.)
	var todo []vault.Proposal
	for _, p := range st.Proposals {
		if !slices.Contains(st.Done, p.ID) {
			todo = append(todo, p)
		}
	}
	if len(todo) > 0 {
		outs, err := h.ProposeBatch(ctx, todo, fmt.Sprintf("job %s, run %s", j.Name, key), resumed)
		if err != nil {
			run.Err = fmt.Errorf("propose: %w", err)
			return run
		}
		run.Outcomes = outs
	}
	for _, q := range st.Questions {
		path, err := vault.SaveQuestion(h.cfg.Vault.Dir(), &q)
		if err != nil {
			h.log.Warn("jobs: question not saved", "job", j.Name, "err", err)
			continue
		}
		run.Questions = append(run.Questions, path)
	}
	if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		h.log.Warn("jobs: staged run not removed", "key", key, "err", err)
	}
	return run
}

func writeStaged(dir, name string, st *staged) error {
	b, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("staged run: %w", err)
	}
	if err := writeFileDurable(dir, name, b); err != nil {
		return fmt.Errorf("staged run: %w", err)
	}
	return nil
}

// maxJobNotes bounds the notes a job is shown.
const maxJobNotes = 200

// stageJob asks the model and decodes its reply; nothing is written.
func (h *Hearth) stageJob(ctx context.Context, j *jobs.Job, key, period string, due time.Time, recs []journal.Record) (staged, error) {
	s := h.jobs
	prompt, err := h.cfg.Vault.Read(j.Prompt)
	if err != nil || len(strings.TrimSpace(string(prompt))) == 0 {
		return staged{}, fmt.Errorf("prompt %s missing or unreadable (%v)", j.Prompt, err)
	}
	summary := summaryPath(j, period, due)
	var b strings.Builder
	fmt.Fprintf(&b, "Job %s, run %s. Write the summary as a create of %s", j.Name, key, summary)
	if cur, _ := h.cfg.Vault.Read(summary); cur != nil {
		fmt.Fprintf(&b, " (it exists: update it instead)")
	}
	b.WriteString(".\n\n")
	if len(recs) == 0 {
		b.WriteString("No conversation in this period.\n")
	} else {
		b.WriteString(curator.Message(h.conv.id, recs, 0))
	}
	shown := 0
	for _, prefix := range j.Inputs.Notes {
		notes, err := h.cfg.Vault.List(ctx, vault.ListFilter{Prefix: prefix + "/"})
		if err != nil {
			return staged{}, fmt.Errorf("notes %s: %w", prefix, err)
		}
		if len(notes) > maxJobNotes {
			notes = notes[len(notes)-maxJobNotes:]
		}
		if len(notes) > 0 {
			fmt.Fprintf(&b, "\n## Notes in %s/\n", prefix)
		}
		for _, n := range notes {
			if n.Err != "" {
				continue
			}
			fmt.Fprintf(&b, "- %s: %q (%s, %s, tags %s, updated %s)\n", n.Path, n.Title, n.Type, n.Status, strings.Join(n.Tags, ","), n.UpdatedAt.Format(time.DateOnly))
			shown++
		}
	}
	if len(recs) == 0 && shown == 0 {
		return staged{Key: key}, nil // nothing to read: no model call
	}
	model := s.cfg.Model
	if model == nil {
		m, err := h.model()
		if err != nil {
			return staged{}, err
		}
		model = m
	}
	req := llm.Request{
		Model: s.cfg.ModelName,
		Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: string(prompt)},
			{Role: llm.RoleUser, Content: b.String()},
		},
		Output: &llm.OutputSchema{Name: curator.SchemaName, Schema: curator.Schema, Strict: true},
	}
	resp, err := model.Stream(ctx, req, func(string) {})
	if err != nil {
		return staged{}, fmt.Errorf("job model: %w", err)
	}
	res, err := curator.Decode([]byte(resp.Text), curator.Input{
		Thread: h.conv.id, Records: recs, Read: h.cfg.Vault.Read, Author: j.Author(),
		Now: func() time.Time { return due.UTC() },
	})
	if err != nil {
		return staged{}, fmt.Errorf("job reply refused: %w", err)
	}
	for _, r := range res.Rejected {
		h.log.Warn("jobs: op rejected", "job", j.Name, "index", r.Index, "op", r.Op, "path", r.Path, "why", r.Why)
	}
	if len(recs) > 0 {
		coverPeriod(res.Proposals, summary, h.conv.id, recs[0].ID, recs[len(recs)-1].ID)
	}
	// Ids are fixed now, so a resumed run writes the same files again
	// rather than new ones.
	for i := range res.Proposals {
		if res.Proposals[i].ID == "" {
			res.Proposals[i].ID = vault.NewProposalID()
		}
	}
	for i := range res.Questions {
		if res.Questions[i].ID == "" {
			res.Questions[i].ID = vault.NewQuestionID()
		}
	}
	return staged{Key: key, Proposals: res.Proposals, Questions: res.Questions, Rejected: res.Rejected}, nil
}

// coverPeriod makes the summary a run writes (a whole note at path) cite
// the first and the last record of its period as well as what the model
// cited: a forget of any record between them reaches it
// (forget_derived.go).
func coverPeriod(ps []vault.Proposal, path, thread, first, last string) {
	for i := range ps {
		p := &ps[i]
		if p.Path != path || p.Content == "" {
			continue
		}
		n, err := vault.ParseNote(p.Path, []byte(p.Content))
		if err != nil {
			continue
		}
		for _, id := range []string{first, last} {
			if !slices.ContainsFunc(n.Sources, func(s vault.Source) bool { return s.Turn == id }) {
				n.Sources = append(n.Sources, vault.Source{Thread: thread, Turn: id})
			}
			if !slices.ContainsFunc(p.Sources, func(s vault.Source) bool { return s.Turn == id }) {
				p.Sources = append(p.Sources, vault.Source{Thread: thread, Turn: id})
			}
		}
		p.Content = string(n.Format())
	}
}
