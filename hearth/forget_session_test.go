package hearth_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mnemo/mnemo/hearth"
	"github.com/mnemo/mnemo/hearth/jobs"
	"github.com/mnemo/mnemo/memory/journal"
)

// TestForgetSessionSummaryMadeAgain: a forget removes the session
// summary that covered the turn; the session_end job runs again at once
// over the session's turns that remain (the forgotten one not shown),
// writing the summary again at the same path; the session leaves the
// queue, so a restart does not run it a third time.
func TestForgetSessionSummaryMadeAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		v, j, dir := openVaultRoot(t)
		onlyJobs(t, dir, "session_summary")
		runs := make(chan hearth.JobRun, 8)
		model := &jobModel{reply: summaryReply()}
		state := t.TempDir()
		cfg := hearth.Config{Journal: j, Vault: v, Jobs: &hearth.JobsConfig{StateDir: state, SessionIdle: 10 * time.Minute, Model: model, Observe: func(r hearth.JobRun) { runs <- r }}}
		h, stop := startHearth(t, cfg)
		defer func() { stop() }()
		synctest.Wait()
		say(t, j, time.Now(), "Let us plan the garden for spring.")
		say(t, j, time.Now(), "The hidden allotment is at 7 Elm Street.")
		say(t, j, time.Now(), "Beans along the fence.")
		time.Sleep(11 * time.Minute)
		r := <-runs
		if r.Err != nil || len(r.Outcomes) != 1 || !strings.HasPrefix(r.Outcomes[0].Path, "summaries/threads/") {
			t.Fatalf("session run %+v", r)
		}
		path := r.Outcomes[0].Path
		var gone []string // the turn and its reply
		if err := j.Scan(t.Context(), func(rec journal.Record) error {
			if strings.Contains(rec.Text, "Elm Street") {
				gone = append(gone, rec.ID)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}

		before := time.Now()
		res, err := h.Forget(t.Context(), hearth.ForgetRequest{IDs: gone})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Derived.Removed) != 1 || res.Derived.Removed[0] != path {
			t.Fatalf("forget removed %v, want the session summary %s", res.Derived.Removed, path)
		}
		var again hearth.JobRun
		select {
		case again = <-runs:
		case <-time.After(time.Hour):
			t.Fatalf("the session's summary was not made again after the forget")
		}
		if waited := time.Since(before); waited > time.Minute {
			t.Errorf("made again after %v, want at once", waited)
		}
		if again.Err != nil || len(again.Outcomes) != 1 || again.Outcomes[0].Path != path || again.Outcomes[0].Decision != hearth.DecisionApplied {
			t.Fatalf("run after the forget %+v, want the summary at %s again", again, path)
		}
		model.mu.Lock()
		shown := model.shown[len(model.shown)-1]
		model.mu.Unlock()
		if strings.Contains(shown, "Elm Street") || strings.Contains(shown, gone[0]) || !strings.Contains(shown, "Beans along the fence") {
			t.Errorf("the run after the forget was shown:\n%s", shown)
		}
		b, _ := v.Read(path)
		if !strings.Contains(string(b), "4 records") {
			t.Errorf("summary made again:\n%s", b)
		}
		synctest.Wait() // the runner is done with the queue
		st, err := os.ReadFile(filepath.Join(state, jobs.StateFile))
		if err != nil || strings.Contains(string(st), `"redo"`) {
			t.Errorf("jobs state still queues the session (%v):\n%s", err, st)
		}
		stop()
		_, stop = startHearth(t, cfg)
		time.Sleep(time.Hour)
		select {
		case r := <-runs:
			t.Errorf("a restart ran %+v again", r)
		default:
		}
	})
}
