package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mnemo/mnemo/hearth/llm/llmtest"
)

// mnemo jobs against the real hearth: the shipped jobs are listed with
// their schedules and next runs, a job file that does not parse is shown
// with its error while the others stay, a run by hand says what it did
// or why it failed, and a job that does not exist is an error.
func TestJobsCommand(t *testing.T) {
	model := llmtest.NewOpenAI(t, "sk-test")
	root := filepath.Join(t.TempDir(), "root")
	// The daily job, disabled, runs only by hand: its catch-up at start
	// would otherwise race the test for the stand-in's replies. The
	// vault keeps a file that exists.
	if err := os.MkdirAll(filepath.Join(root, "jobs"), 0o700); err != nil {
		t.Fatal(err)
	}
	dailyYML := "schedule: daily at 05:00\nprompt: prompts/daily.system.md\ninputs: {turns: yesterday, notes: [knowledge]}\nenabled: false\n"
	if err := os.WriteFile(filepath.Join(root, "jobs", "daily.yml"), []byte(dailyYML), 0o600); err != nil {
		t.Fatal(err)
	}
	// The jobs follow the curator's switch, off by default in tests.
	d := startDaemon(t, root, "127.0.0.1:0", append(openaiEnv(model), "MNEMO_CURATOR=true"))

	r := runMnemo(t, d.Addr, token, "", "jobs")
	if r.code != 0 {
		t.Fatalf("jobs: %v", r)
	}
	for _, want := range []string{"daily at 05:00 (disabled)", "weekly on sunday at 06:00", "on session_end", "session_summary"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("jobs does not show %q:\n%s", want, r.stdout)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "jobs", "broken.yml"), []byte("schedule: hourly\nprompt: prompts/daily.system.md\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = runMnemo(t, d.Addr, token, "", "jobs")
	if r.code != 0 || !strings.Contains(r.stdout, "error: jobs/broken.yml: schedule") || !strings.Contains(r.stdout, "daily at 05:00") {
		t.Errorf("jobs with a bad file: %v", r)
	}
	// The stand-in's default answer is not the schema's JSON: the run
	// fails, writes nothing, and says it will be retried.
	r = runMnemo(t, d.Addr, token, "", "jobs", "run", "daily")
	if r.code == 0 || !strings.Contains(r.stderr, "daily failed (it will be retried)") {
		t.Errorf("jobs run daily, a bad reply: %v", r)
	}
	r = runMnemo(t, d.Addr, token, "", "jobs")
	if !strings.Contains(r.stdout, "failed:") || !strings.Contains(r.stdout, "daily failed (attempt 1") {
		t.Errorf("jobs after a failed run: %v", r)
	}
	model.Enqueue(llmtest.Reply{Chunks: []llmtest.Chunk{{Text: `{"ops":[],"questions":[]}`}}})
	r = runMnemo(t, d.Addr, token, "", "jobs", "run", "daily")
	if r.code != 0 || !strings.Contains(r.stdout, "daily ran daily:") {
		t.Errorf("jobs run daily: %v", r)
	}
	// (The weekly job may have asked too, at start: only the daily's count.)
	var daily []llmtest.RecordedRequest
	for _, q := range model.Requests() {
		if len(q.Messages) > 0 && strings.Contains(q.Messages[0].Content, "daily job of a personal memory") {
			daily = append(daily, q)
		}
	}
	if len(daily) != 2 || daily[1].Output == nil || !daily[1].Output.Strict {
		t.Errorf("the daily job's model requests: %d %+v", len(daily), daily)
	}
	r = runMnemo(t, d.Addr, token, "", "jobs")
	if !strings.Contains(r.stdout, " ok: 0 applied") {
		t.Errorf("jobs after a run: %v", r)
	}
	if r := runMnemo(t, d.Addr, token, "", "jobs", "run", "nope"); r.code == 0 || !strings.Contains(r.stderr, "not in jobs/") {
		t.Errorf("jobs run nope: %v", r)
	}
	if r := runMnemo(t, d.Addr, token, "", "jobs", "run", "broken"); r.code == 0 || !strings.Contains(r.stderr, "hourly") {
		t.Errorf("jobs run broken: %v", r)
	}
}
