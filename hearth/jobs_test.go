package hearth_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mnemo/mnemo/hearth"
	"github.com/mnemo/mnemo/hearth/jobs"
	"github.com/mnemo/mnemo/hearth/llm"
	"github.com/mnemo/mnemo/internal/backoff"
	"github.com/mnemo/mnemo/memory/journal"
	"github.com/mnemo/mnemo/memory/vault"
)

// jobModel is a job's model in process: reply makes the answer from what
// the job was shown (the user message); fail fails the first calls.
type jobModel struct {
	reply func(msg string) string
	mu    sync.Mutex
	calls int
	fail  int
	shown []string
}

func (m *jobModel) Name() string  { return "stand-in" }
func (m *jobModel) Model() string { return "jobs" }
func (m *jobModel) Stream(ctx context.Context, req llm.Request, _ func(string)) (llm.Response, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	msg := req.Messages[len(req.Messages)-1].Content
	m.shown = append(m.shown, msg)
	if m.calls <= m.fail {
		return llm.Response{}, errors.New("stand-in: model down")
	}
	if req.Output == nil || !req.Output.Strict {
		return llm.Response{}, errors.New("a job asks for the strict schema")
	}
	return llm.Response{Text: m.reply(msg)}, nil
}

func (m *jobModel) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls
}

var (
	shownID     = regexp.MustCompile(`(?m)^\[([0-9A-Z]{26})\] (?:user|agent):`)
	summaryPath = regexp.MustCompile(`as a create of (\S+?\.md)`)
)

// summaryReply creates the summary the job was asked for, citing the
// records shown, and adds extra ops.
func summaryReply(extra ...string) func(string) string {
	return func(msg string) string {
		ids := shownID.FindAllStringSubmatch(msg, -1)
		p := summaryPath.FindStringSubmatch(msg)
		if len(ids) == 0 || p == nil {
			return `{"ops":[],"questions":[]}`
		}
		src := fmt.Sprintf("%q", ids[0][1])
		ops := []string{fmt.Sprintf(`{"op":"create","path":%q,"title":"Summary","body":"%d records were said that day, the garden among them.","note_type":"summary","tags":["summary"],"confidence":0.9,"patch":null,"reason":"the period's summary","sources":[%s],"risk":"low","domains":[],"inferred":false,"supersedes":[],"contradicts":false}`, p[1], len(ids), src)}
		for _, e := range extra {
			ops = append(ops, strings.ReplaceAll(e, "$SRC", src))
		}
		return `{"ops":[` + strings.Join(ops, ",") + `],"questions":[{"text":"Is the allotment still on Elm Street?","reason":"the day's talk left it open","sources":[` + src + `]}]}`
	}
}

// commits lists the vault's commits as "author|subject", newest first.
func commits(t *testing.T, dir string) []string {
	t.Helper()
	out, err := exec.Command("git", "-C", dir, "log", "--format=%an|%s").Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

func countPrefix(ss []string, prefix string) int {
	n := 0
	for _, s := range ss {
		if strings.HasPrefix(s, prefix) {
			n++
		}
	}
	return n
}

// onlyJobs leaves in the vault's registry the default jobs named.
func onlyJobs(t *testing.T, dir string, names ...string) {
	t.Helper()
	keep := map[string]bool{}
	for _, n := range names {
		keep[n+".yml"] = true
	}
	ents, err := os.ReadDir(filepath.Join(dir, jobs.Dir))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !keep[e.Name()] {
			os.Remove(filepath.Join(dir, jobs.Dir, e.Name()))
		}
	}
}

// say appends a user turn and its reply at ts.
func say(t *testing.T, j *journal.Journal, ts time.Time, text string) {
	t.Helper()
	for _, r := range []journal.Record{{Role: "user", Text: text, TS: ts, Mode: "text"}, {Role: "agent", Text: "Noted: " + text, TS: ts.Add(time.Second), Mode: "text"}} {
		if _, err := j.Append(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
}

// startHearth runs a hearth with the job runner until the returned stop.
func startHearth(t *testing.T, cfg hearth.Config) (*hearth.Hearth, func()) {
	t.Helper()
	h, err := hearth.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); h.Run(ctx) }()
	return h, func() { cancel(); <-done }
}

// TestJobsDailyCatchUpIdempotent: a run missed while hearth was stopped
// happens at start; the next is on schedule; a restart runs no finished
// period again; running it by hand again writes nothing twice.
func TestJobsDailyCatchUpIdempotent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		v, j, dir := openVaultRoot(t)
		onlyJobs(t, dir, "daily")
		// The bubble's clock starts at 2000-01-01 00:00 UTC: the last 05:00
		// run due covers 1999-12-30, and was missed.
		day := time.Date(1999, 12, 30, 10, 0, 0, 0, time.UTC)
		say(t, j, day, "The tomatoes moved to the allotment on Elm Street.")
		say(t, j, day.Add(time.Hour), "I water them every morning before work.")
		say(t, j, day.AddDate(0, 0, 1), "The beans came up.")
		model := &jobModel{reply: summaryReply()}
		runs := make(chan hearth.JobRun, 8)
		state := t.TempDir()
		cfg := hearth.Config{Journal: j, Vault: v, Jobs: &hearth.JobsConfig{StateDir: state, Model: model, Observe: func(r hearth.JobRun) { runs <- r }}}
		h, stop := startHearth(t, cfg)
		r := <-runs
		if r.Err != nil || r.Key != "daily:1999-12-30" || len(r.Outcomes) != 1 || r.Outcomes[0].Decision != hearth.DecisionApplied || len(r.Questions) != 1 {
			t.Fatalf("catch-up run %+v", r)
		}
		b, _ := v.Read("summaries/daily/1999-12-30.md")
		if !strings.Contains(string(b), "4 records were said") {
			t.Errorf("summary:\n%s", b)
		}
		// At 05:00 the next period runs.
		time.Sleep(5*time.Hour + time.Minute)
		r = <-runs
		if r.Err != nil || r.Key != "daily:1999-12-31" || len(r.Outcomes) != 1 {
			t.Fatalf("scheduled run %+v", r)
		}
		st, err := h.Jobs()
		if err != nil || len(st) != 1 || st[0].Last == nil || st[0].Last.Result != "ok" || !st[0].Next.Equal(time.Date(2000, 1, 2, 5, 0, 0, 0, time.UTC)) {
			t.Errorf("jobs %+v %v", st, err)
		}
		stop()
		calls := model.count()
		// A restart finds both periods finished: no run, no call.
		h, stop = startHearth(t, cfg)
		synctest.Wait()
		if model.count() != calls {
			t.Errorf("a restart ran a finished period again (%d calls, want %d)", model.count(), calls)
		}
		// Run by hand: the period runs again, and the summary is not
		// written twice (a create over an existing note is refused).
		r, err = h.RunJob(t.Context(), "daily")
		<-runs
		if err != nil || len(r.Outcomes) != 0 || len(r.Rejected) != 1 {
			t.Errorf("run again: %+v %v", r, err)
		}
		stop()
		if n := countPrefix(commits(t, dir), "job:daily|"); n != 2 {
			t.Errorf("%d commits by job:daily, want 2: %v", n, commits(t, dir))
		}
		if _, err := h.RunJob(t.Context(), "nope"); err == nil {
			t.Error("a job that does not exist ran")
		}
	})
}

// TestJobsCatchUpEveryMissedPeriod: a start after days stopped runs every
// missed daily period that has turns, oldest first, within the last
// seven; older ones and empty ones are not sent to the model.
func TestJobsCatchUpEveryMissedPeriod(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		v, j, dir := openVaultRoot(t)
		onlyJobs(t, dir, "daily")
		// The bubble's clock starts at 2000-01-01 00:00 UTC: the dues
		// missed are 1999-12-25 … 12-31 05:00 (periods 12-24 … 12-30).
		for _, day := range []int{20, 26, 27, 30} {
			say(t, j, time.Date(1999, 12, day, 10, 0, 0, 0, time.UTC), fmt.Sprintf("On the %dth the beans grew.", day))
		}
		model := &jobModel{reply: summaryReply()}
		runs := make(chan hearth.JobRun, 16)
		cfg := hearth.Config{Journal: j, Vault: v, Jobs: &hearth.JobsConfig{StateDir: t.TempDir(), Model: model, Observe: func(r hearth.JobRun) { runs <- r }}}
		_, stop := startHearth(t, cfg)
		var keys []string
		for range 3 {
			r := <-runs
			if r.Err != nil || len(r.Outcomes) != 1 {
				t.Fatalf("run %+v", r)
			}
			keys = append(keys, r.Key)
		}
		synctest.Wait()
		stop()
		if want := []string{"daily:1999-12-26", "daily:1999-12-27", "daily:1999-12-30"}; strings.Join(keys, ",") != strings.Join(want, ",") {
			t.Errorf("runs %q, want %q", keys, want)
		}
		if model.count() != 3 {
			t.Errorf("%d model calls, want 3", model.count())
		}
		for _, day := range []string{"1999-12-26", "1999-12-27", "1999-12-30"} {
			if b, _ := v.Read("summaries/daily/" + day + ".md"); b == nil {
				t.Errorf("no summary of %s", day)
			}
		}
		// A restart runs none of them again.
		_, stop = startHearth(t, cfg)
		synctest.Wait()
		stop()
		if model.count() != 3 {
			t.Errorf("a restart ran a period again: %d calls", model.count())
		}
		select {
		case r := <-runs:
			t.Errorf("a restart ran %+v", r)
		default:
		}
	})
}

// batchVault fails the first batches: before any of it is written
// (nothing applied, as vault.ApplyBatch guarantees when a write fails
// part way), or after it was written and committed (a run cut short
// before it could note that).
type batchVault struct {
	hearth.Vault
	mu                    sync.Mutex
	failBefore, failAfter int
	batches               int // batches applied
}

func (f *batchVault) ApplyBatch(ctx context.Context, ps []*vault.Proposal, subject string) (vault.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failBefore > 0 {
		f.failBefore--
		return vault.Result{}, errors.New("disk on fire: nothing applied")
	}
	res, err := f.Vault.(hearth.BatchVault).ApplyBatch(ctx, ps, subject)
	f.batches++
	if err == nil && f.failAfter > 0 {
		f.failAfter--
		return res, errors.New("cut short after the commit")
	}
	return res, err
}

const allotmentOp = `{"op":"create","path":"knowledge/projects/allotment.md","title":"Allotment","body":"The tomatoes grow at the allotment on Elm Street.","note_type":"project","tags":["garden"],"confidence":0.9,"patch":null,"reason":"said twice yesterday","sources":[$SRC],"risk":"low","domains":[],"inferred":false,"supersedes":[],"contradicts":false}`

// jobFilesOnce checks that the daily run's two files are written,
// committed in one commit by job:daily, and ledgered once each.
func jobFilesOnce(t *testing.T, v *vault.Vault, dir string) {
	t.Helper()
	cs := commits(t, dir)
	if n := countPrefix(cs, "job:daily|vault: job daily, run daily:1999-12-30"); n != 1 {
		t.Errorf("commits %v: want the run's batch once", cs)
	}
	es, _, err := vault.ReadLedger(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"summaries/daily/1999-12-30.md", "knowledge/projects/allotment.md"} {
		if b, _ := v.Read(p); b == nil {
			t.Errorf("%s not written", p)
		}
		n := 0
		for _, e := range es {
			if e.Path == p {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%s ledgered %d times, want once", p, n)
		}
	}
}

// TestJobsFailureRetry: a model that fails leaves nothing written; a
// batch the vault could not apply leaves nothing of it, and the retry,
// after the backoff, resumes from the staged reply without asking the
// model again and applies all of it; a run cut short after its batch was
// committed applies nothing twice.
func TestJobsFailureRetry(t *testing.T) {
	tests := []struct {
		name                  string
		modelFails            int
		failBefore, failAfter int
		calls                 int // model calls in all
	}{
		{"model down", 2, 0, 0, 3},
		{"batch fails", 0, 1, 0, 1},
		{"cut short after the commit", 0, 0, 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				v, j, dir := openVaultRoot(t)
				onlyJobs(t, dir, "daily")
				say(t, j, time.Date(1999, 12, 30, 10, 0, 0, 0, time.UTC), "The tomatoes moved to the allotment on Elm Street.")
				model := &jobModel{reply: summaryReply(allotmentOp), fail: tt.modelFails}
				runs := make(chan hearth.JobRun, 8)
				retry := backoff.Policy{Initial: time.Minute, Max: time.Hour}
				bv := &batchVault{Vault: v, failBefore: tt.failBefore, failAfter: tt.failAfter}
				_, stop := startHearth(t, hearth.Config{Journal: j, Vault: bv,
					Jobs: &hearth.JobsConfig{StateDir: t.TempDir(), Model: model, Retry: retry, Observe: func(r hearth.JobRun) { runs <- r }}})
				defer stop()
				start := time.Now()
				var r hearth.JobRun
				for attempt := 1; ; attempt++ {
					r = <-runs
					if r.Attempt != attempt {
						t.Fatalf("run %+v, want attempt %d", r, attempt)
					}
					if r.Err == nil {
						break
					}
					if tt.failAfter == 0 {
						for _, p := range []string{"summaries/daily/1999-12-30.md", "knowledge/projects/allotment.md"} {
							if b, _ := v.Read(p); b != nil {
								t.Fatalf("a failed run wrote %s", p)
							}
						}
					}
				}
				// Backoff: 1 min, then 2 min.
				if got, want := time.Since(start), retry.Delay(1)+retry.Delay(2)*time.Duration(min(1, tt.modelFails/2)); got != want && tt.modelFails > 0 {
					t.Errorf("retried after %v, want %v", got, want)
				}
				if model.count() != tt.calls {
					t.Errorf("%d model calls, want %d", model.count(), tt.calls)
				}
				if len(r.Outcomes) != 2 || r.Outcomes[0].Decision != hearth.DecisionApplied || r.Outcomes[1].Decision != hearth.DecisionApplied {
					t.Errorf("outcomes %+v", r.Outcomes)
				}
				if bv.batches != 1 {
					t.Errorf("%d batches applied, want 1", bv.batches)
				}
				jobFilesOnce(t, v, dir)
			})
		})
	}
}

// TestJobsCrashBetweenStageAndApply: a run whose reply was staged but
// whose batch never applied (the process died) is applied, exactly once,
// at the next start, from the stage (no second model call); a run that
// died after its batch committed applies nothing again.
func TestJobsCrashBetweenStageAndApply(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		failBefore, failAfter int
	}{{"before the apply", 1 << 20, 0}, {"after the commit", 0, 1}} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				v, j, dir := openVaultRoot(t)
				onlyJobs(t, dir, "daily")
				say(t, j, time.Date(1999, 12, 30, 10, 0, 0, 0, time.UTC), "The tomatoes moved to the allotment on Elm Street.")
				model := &jobModel{reply: summaryReply(allotmentOp)}
				runs := make(chan hearth.JobRun, 8)
				state := t.TempDir()
				cfg := hearth.Config{Journal: j, Vault: &batchVault{Vault: v, failBefore: tc.failBefore, failAfter: tc.failAfter},
					Jobs: &hearth.JobsConfig{StateDir: state, Model: model, Observe: func(r hearth.JobRun) { runs <- r }}}
				_, stop := startHearth(t, cfg)
				if r := <-runs; r.Err == nil {
					t.Fatalf("first run %+v, want it cut short", r)
				}
				stop() // dies before the retry
				cfg.Vault = v
				_, stop = startHearth(t, cfg)
				defer stop()
				if r := <-runs; r.Err != nil || r.Attempt != 2 || len(r.Outcomes) != 2 {
					t.Fatalf("resumed run %+v", r)
				}
				if model.count() != 1 {
					t.Errorf("%d model calls, want 1 (the stage is reused)", model.count())
				}
				jobFilesOnce(t, v, dir)
			})
		})
	}
}

// TestJobsBadFile: a job file that does not parse is listed with its
// error; the others still run.
func TestJobsBadFile(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		v, j, dir := openVaultRoot(t)
		onlyJobs(t, dir, "daily")
		if err := os.WriteFile(filepath.Join(dir, jobs.Dir, "broken.yml"), []byte("schedule: hourly\nprompt: prompts/daily.system.md\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		say(t, j, time.Date(1999, 12, 30, 10, 0, 0, 0, time.UTC), "The tomatoes moved to the allotment on Elm Street.")
		runs := make(chan hearth.JobRun, 8)
		h, stop := startHearth(t, hearth.Config{Journal: j, Vault: v, Jobs: &hearth.JobsConfig{StateDir: t.TempDir(), Model: &jobModel{reply: summaryReply()}, Observe: func(r hearth.JobRun) { runs <- r }}})
		defer stop()
		if r := <-runs; r.Err != nil || r.Job != "daily" {
			t.Fatalf("run %+v", r)
		}
		st, err := h.Jobs()
		if err != nil || len(st) != 2 || st[0].Name != "broken" || !strings.Contains(st[0].Error, "jobs/broken.yml: schedule") {
			t.Fatalf("jobs %+v %v", st, err)
		}
		if hl := h.JobsHealth(); hl == nil || hl.Bad != 1 || hl.Jobs != 1 || hl.Runs != 1 {
			t.Errorf("health %+v", hl)
		}
		if _, err := h.RunJob(t.Context(), "broken"); err == nil || !strings.Contains(err.Error(), "hourly") {
			t.Errorf("run broken: %v", err)
		}
	})
}

// TestJobsSessionEnd: the session summary runs once a session has been
// idle for SessionIdle, and once for a session a stop ended.
func TestJobsSessionEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		v, j, dir := openVaultRoot(t)
		onlyJobs(t, dir, "session_summary")
		runs := make(chan hearth.JobRun, 8)
		cfg := hearth.Config{Journal: j, Vault: v, Jobs: &hearth.JobsConfig{StateDir: t.TempDir(), SessionIdle: 10 * time.Minute, Model: &jobModel{reply: summaryReply()}, Observe: func(r hearth.JobRun) { runs <- r }}}
		_, stop := startHearth(t, cfg)
		synctest.Wait()
		say(t, j, time.Now(), "Let us plan the garden for spring.")
		time.Sleep(5 * time.Minute)
		say(t, j, time.Now(), "Beans along the fence.")
		synctest.Wait()
		select {
		case r := <-runs:
			t.Fatalf("ran while the session went on: %+v", r)
		default:
		}
		time.Sleep(11 * time.Minute)
		r := <-runs
		if r.Err != nil || !strings.HasPrefix(r.Key, "session_summary:") || len(r.Outcomes) != 1 || !strings.HasPrefix(r.Outcomes[0].Path, "summaries/threads/") {
			t.Fatalf("session run %+v", r)
		}
		b, _ := v.Read(r.Outcomes[0].Path)
		if !strings.Contains(string(b), "4 records") {
			t.Errorf("summary:\n%s", b)
		}
		// A session cut by a stop is summarised at the next start.
		say(t, j, time.Now(), "And peas.")
		stop()
		_, stop = startHearth(t, cfg)
		defer stop()
		if r := <-runs; r.Err != nil || len(r.Outcomes) != 1 || r.Key == "" {
			t.Fatalf("run after restart %+v", r)
		}
	})
}
