package hearth_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mnemo/mnemo/hearth"
	"github.com/mnemo/mnemo/hearth/jobs"
	"github.com/mnemo/mnemo/hearth/llm"
	"github.com/mnemo/mnemo/hearth/llm/llmtest"
	"github.com/mnemo/mnemo/memory/journal"
	"github.com/mnemo/mnemo/memory/vault"
)

// standInJob is the job's model through the real OpenAI adapter and the
// stand-in server: each call enqueues the reply made from what it shows.
type standInJob struct {
	*llm.OpenAI
	srv   *llmtest.Server
	reply func(string) string
}

func (m *standInJob) Stream(ctx context.Context, req llm.Request, onText func(string)) (llm.Response, error) {
	m.srv.Enqueue(llmtest.Reply{Chunks: []llmtest.Chunk{{Text: m.reply(req.Messages[len(req.Messages)-1].Content)}}})
	return m.OpenAI.Stream(ctx, req, onText)
}

const gardenNote = `---
id: 01JDQ000000000000000000N01
title: Garden
type: project
confidence: 0.8
---
The tomatoes grow on the balcony.
`

// Golden daily ops beside the summary: a contradiction of the garden note
// (queued for the owner) and a preference (queued: prefs are reviewed).
var goldenOps = []string{
	`{"op":"create","path":"knowledge/projects/allotment.md","title":"Allotment","body":"The tomatoes grow at the allotment on Elm Street, no longer on the balcony.","note_type":"project","tags":["garden"],"confidence":0.9,"patch":null,"reason":"said again and again yesterday","sources":[$SRC],"risk":"low","domains":[],"inferred":false,"supersedes":["knowledge/projects/garden.md"],"contradicts":true}`,
	`{"op":"create","path":"knowledge/prefs/coffee.md","title":"Coffee","body":"Takes coffee black, no sugar.","note_type":"preference","tags":["food"],"confidence":0.9,"patch":null,"reason":"said yesterday","sources":[$SRC],"risk":"low","domains":[],"inferred":false,"supersedes":[],"contradicts":false}`,
}

// thousandTurns opens a root whose journal holds n turns yesterday (local
// time) and the garden note, the daily job alone in its registry.
func thousandTurns(tb testing.TB, n int) (*vault.Vault, *journal.Journal, string) {
	var v *vault.Vault
	var j *journal.Journal
	var dir string
	switch t := tb.(type) {
	case *testing.T:
		v, j, dir = openVaultRoot(t)
		onlyJobs(t, dir, "daily")
	case *testing.B:
		v, j, dir = openVaultRootB(t)
		os.Remove(filepath.Join(dir, "jobs", "weekly.yml"))
		os.Remove(filepath.Join(dir, "jobs", "session_summary.yml"))
	}
	if err := os.WriteFile(filepath.Join(dir, "knowledge", "projects", "garden.md"), []byte(gardenNote), 0o600); err != nil {
		tb.Fatal(err)
	}
	now := time.Now()
	y := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, now.Location()).AddDate(0, 0, -1)
	step := 24 * time.Hour / time.Duration(n+1)
	for i := range n {
		ts := y.Add(time.Duration(i) * step)
		for _, r := range []journal.Record{
			{Role: "user", Text: fmt.Sprintf("Turn %d: the tomatoes are at the allotment on Elm Street now.", i), TS: ts, Mode: "text"},
			{Role: "agent", Text: "Noted.", TS: ts.Add(time.Second), Mode: "text"},
		} {
			if _, err := j.Append(context.Background(), r); err != nil {
				tb.Fatal(err)
			}
		}
	}
	return v, j, dir
}

// TestJobsDailyGolden: 1,000 scripted turns yesterday; the daily job at
// start (the 05:00 run was missed) writes the day's summary, and policy
// queues the contradiction and the preference it proposes.
func TestJobsDailyGolden(t *testing.T) {
	v, j, dir := thousandTurns(t, 1000)
	srv := llmtest.NewOpenAI(t, "sk-jobs")
	model := &standInJob{OpenAI: llm.NewOpenAI(llm.Config{Provider: llm.ProviderOpenAI, Model: "jobs", BaseURL: srv.BaseURL(), APIKey: "sk-jobs"}, nil), srv: srv, reply: summaryReply(goldenOps...)}
	runs := make(chan hearth.JobRun, 4)
	h, stop := startHearth(t, hearth.Config{Journal: j, Vault: v, Jobs: &hearth.JobsConfig{StateDir: t.TempDir(), Model: model, Observe: func(r hearth.JobRun) { runs <- r }}})
	defer stop()
	var r hearth.JobRun
	select {
	case r = <-runs:
	case <-time.After(60 * time.Second):
		t.Fatal("the daily job did not run")
	}
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	day := time.Now().AddDate(0, 0, -1).Format(time.DateOnly)
	want := []struct{ path, decision, why string }{
		{"summaries/daily/" + day + ".md", hearth.DecisionApplied, ""},
		{"knowledge/projects/allotment.md", hearth.DecisionQueued, "contradict"},
		{"knowledge/prefs/coffee.md", hearth.DecisionQueued, "prefs"},
	}
	if r.Key != "daily:"+day || len(r.Outcomes) != len(want) || len(r.Questions) != 1 || len(r.Rejected) != 0 {
		t.Fatalf("run %+v", r)
	}
	for i, w := range want {
		if o := r.Outcomes[i]; o.Path != w.path || o.Decision != w.decision || !strings.Contains(o.Why, w.why) {
			t.Errorf("outcome %d: %+v, want %+v", i, o, w)
		}
	}
	b, err := v.Read("summaries/daily/" + day + ".md")
	if err != nil {
		t.Fatal(err)
	}
	n, err := vault.ParseNote("summary", b)
	if err != nil {
		t.Fatal(err)
	}
	if n.Title != "Summary" || !strings.Contains(string(n.Body), "2000 records were said that day") || len(n.Sources) != 2 {
		// The record it cited (the day's first) and the day's last: the
		// summary covers the whole period, and a forget of any of it
		// reaches it.
		t.Errorf("summary note %+v", n)
	}
	if cs := commits(t, dir); countPrefix(cs, "job:daily|") != 1 {
		t.Errorf("commits %v", cs)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 || !strings.Contains(reqs[0].Messages[1].Content, "knowledge/projects/garden.md") {
		t.Errorf("requests %d; the job was not shown the notes", len(reqs))
	}
	if hl := h.JobsHealth(); hl == nil || hl.Runs != 1 || hl.Failing != 0 {
		t.Errorf("health %+v", hl)
	}
}

// BenchmarkDailyJob1000 is the daily job over 1,000 turns with the
// stand-in model: from hearth's start to the run's end (read the day from
// the journal, one model call, decode, three proposals through policy).
func BenchmarkDailyJob1000(b *testing.B) {
	srv := llmtest.NewOpenAI(b, "sk-jobs")
	model := &standInJob{OpenAI: llm.NewOpenAI(llm.Config{Provider: llm.ProviderOpenAI, Model: "jobs", BaseURL: srv.BaseURL(), APIKey: "sk-jobs"}, nil), srv: srv, reply: summaryReply(goldenOps...)}
	for range b.N {
		b.StopTimer()
		v, j, _ := thousandTurns(b, 1000)
		runs := make(chan hearth.JobRun, 4)
		h, err := hearth.New(hearth.Config{Journal: j, Vault: v, Jobs: &hearth.JobsConfig{StateDir: b.TempDir(), Model: model, Observe: func(r hearth.JobRun) { runs <- r }}})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		b.StartTimer()
		go func() { defer close(done); h.Run(ctx) }()
		r := <-runs
		b.StopTimer()
		cancel()
		<-done
		if r.Err != nil || len(r.Outcomes) != 3 {
			b.Fatalf("run %+v", r)
		}
	}
}

// Golden weekly ops beside the summary: a duplicate deprecated (queued:
// deprecations are reviewed) and a stale volatile note's confidence
// lowered (a patch of a project note: applied).
var weeklyOps = []string{
	`{"op":"deprecate","path":"knowledge/projects/garden-copy.md","title":null,"body":null,"note_type":null,"tags":null,"confidence":null,"patch":null,"reason":"a duplicate of knowledge/projects/garden.md","sources":[$SRC],"risk":"low","domains":[],"inferred":false,"supersedes":[],"contradicts":false}`,
	`{"op":"update","path":"knowledge/projects/balcony.md","title":null,"body":null,"note_type":null,"tags":null,"confidence":0.3,"patch":{"body_append":null,"tags_add":["stale"],"confirmed":null},"reason":"not confirmed for months and the plants moved","sources":[$SRC],"risk":"low","domains":[],"inferred":false,"supersedes":[],"contradicts":false}`,
}

// TestJobsWeeklyGolden: turns over last week and three notes; the weekly
// job at start writes the week's summary, deprecates the duplicate
// (queued for the owner) and lowers the stale note's confidence, the
// applied ones in one commit.
func TestJobsWeeklyGolden(t *testing.T) {
	v, j, dir := openVaultRoot(t)
	onlyJobs(t, dir, "weekly")
	js, bad, err := jobs.Load(dir)
	if err != nil || len(bad) != 0 || len(js) != 1 {
		t.Fatalf("registry %v %v %v", js, bad, err)
	}
	due := js[0].Schedule.Last(time.Now())
	period, from, _ := js[0].Schedule.Period(due)
	notes := map[string]string{
		"knowledge/projects/garden.md":      gardenNote,
		"knowledge/projects/garden-copy.md": strings.Replace(gardenNote, "N01", "N02", 1),
		"knowledge/projects/balcony.md":     strings.Replace(strings.Replace(gardenNote, "N01", "N03", 1), "title: Garden", "title: Balcony", 1),
	}
	for p, c := range notes {
		if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(p)), []byte(c), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for d := range 7 {
		say(t, j, from.AddDate(0, 0, d).Add(10*time.Hour), fmt.Sprintf("Day %d: the tomatoes are at the allotment, not on the balcony.", d))
	}
	srv := llmtest.NewOpenAI(t, "sk-jobs")
	model := &standInJob{OpenAI: llm.NewOpenAI(llm.Config{Provider: llm.ProviderOpenAI, Model: "jobs", BaseURL: srv.BaseURL(), APIKey: "sk-jobs"}, nil), srv: srv, reply: summaryReply(weeklyOps...)}
	runs := make(chan hearth.JobRun, 4)
	_, stop := startHearth(t, hearth.Config{Journal: j, Vault: v, Jobs: &hearth.JobsConfig{StateDir: t.TempDir(), Model: model, Observe: func(r hearth.JobRun) { runs <- r }}})
	defer stop()
	var r hearth.JobRun
	select {
	case r = <-runs:
	case <-time.After(60 * time.Second):
		t.Fatal("the weekly job did not run")
	}
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	want := []struct{ path, decision, why string }{
		{"summaries/weekly/" + period + ".md", hearth.DecisionApplied, ""},
		{"knowledge/projects/garden-copy.md", hearth.DecisionQueued, "retiring a note"},
		{"knowledge/projects/balcony.md", hearth.DecisionApplied, ""},
	}
	if r.Key != "weekly:"+period || len(r.Outcomes) != len(want) || len(r.Questions) != 1 || len(r.Rejected) != 0 {
		t.Fatalf("run %+v", r)
	}
	for i, w := range want {
		if o := r.Outcomes[i]; o.Path != w.path || o.Decision != w.decision || !strings.Contains(o.Why, w.why) {
			t.Errorf("outcome %d: %+v, want %+v", i, o, w)
		}
	}
	b, _ := v.Read("summaries/weekly/" + period + ".md")
	n, err := vault.ParseNote("summary", b)
	if err != nil || n.Type != "summary" || !strings.Contains(string(n.Body), "14 records were said") || len(n.Sources) != 2 {
		t.Errorf("weekly summary %+v %v", n, err)
	}
	b, _ = v.Read("knowledge/projects/balcony.md")
	if n, err := vault.ParseNote("balcony", b); err != nil || n.Confidence != 0.3 || !slices.Contains(n.Tags, "stale") {
		t.Errorf("stale note %+v %v", n, err)
	}
	if b, _ := v.Read("knowledge/projects/garden-copy.md"); !strings.Contains(string(b), "status: active") && strings.Contains(string(b), "deprecated") {
		t.Errorf("a queued deprecation was applied:\n%s", b)
	}
	if cs := commits(t, dir); countPrefix(cs, "job:weekly|vault: job weekly, run weekly:"+period) != 1 {
		t.Errorf("commits %v: want the run's batch once", cs)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 || !strings.Contains(reqs[0].Messages[1].Content, "knowledge/projects/garden-copy.md") || !strings.Contains(reqs[0].Messages[0].Content, "week") {
		t.Errorf("requests %d; the job was not shown the notes or its prompt", len(reqs))
	}
}
