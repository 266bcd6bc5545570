package ipc

import "time"

// Messages of the vault's job runner (DESIGN.md "Jobs").
const (
	TypeJobs      = "jobs"       // client
	TypeJobList   = "job_list"   // hearth
	TypeJobRun    = "job_run"    // client (owner)
	TypeJobResult = "job_result" // hearth
)

// Jobs asks for the vault's jobs with their last and next runs.
// Answered by JobList with Ref.
//
//	{"type":"jobs","ref":"j1"}
type Jobs struct {
	Ref string `json:"ref,omitempty"`
}

// JobList answers Jobs, by name.
//
//	{"type":"job_list","ref":"j1","jobs":[{"name":"daily","schedule":"daily at 05:00","enabled":true,"next_run":"…"}]}
type JobList struct {
	Ref  string    `json:"ref,omitempty"`
	Jobs []JobInfo `json:"jobs"`
}

// JobInfo is one job. Error is why its file does not parse (then it
// does not run); LastError why its last run failed (it is retried).
type JobInfo struct {
	Name     string    `json:"name"`
	Schedule string    `json:"schedule,omitempty"`
	Enabled  bool      `json:"enabled"`
	LastKey  string    `json:"last_key,omitempty"` // the period last run, daily:2026-11-25
	LastRun  time.Time `json:"last_run,omitzero"`
	Result   string    `json:"result,omitempty"` // ok | failed
	Attempts int       `json:"attempts,omitempty"`
	Applied  int       `json:"applied,omitempty"`
	Queued   int       `json:"queued,omitempty"`
	Rejected int       `json:"rejected,omitempty"`
	// LastError is why the last run failed.
	LastError string    `json:"last_error,omitempty"`
	NextRun   time.Time `json:"next_run,omitzero"`
	Error     string    `json:"error,omitempty"`
}

// JobRun asks hearth to run a job now, over its current period (owner).
// Answered by JobResult with Ref once the run ends.
//
//	{"type":"job_run","ref":"j2","name":"daily"}
type JobRun struct {
	Ref  string `json:"ref,omitempty"`
	Name string `json:"name"`
}

// JobResult is what a run did: its proposals by what policy decided,
// the questions it asked, and Error when it failed (it is retried).
//
//	{"type":"job_result","ref":"j2","name":"daily","key":"daily:2026-11-25","applied":1,"queued":1}
type JobResult struct {
	Ref       string `json:"ref,omitempty"`
	Name      string `json:"name"`
	Key       string `json:"key,omitempty"`
	Applied   int    `json:"applied,omitempty"`
	Queued    int    `json:"queued,omitempty"`
	Rejected  int    `json:"rejected,omitempty"`
	Questions int    `json:"questions,omitempty"`
	Error     string `json:"error,omitempty"`
}

// JobsHealth is the job runner in a health report.
type JobsHealth struct {
	Jobs      int    `json:"jobs"`
	Failing   int    `json:"failing,omitempty"`
	Bad       int    `json:"bad,omitempty"` // files that do not parse
	Runs      int    `json:"runs"`          // runs finished since start
	LastError string `json:"last_error,omitempty"`
}

func (*Jobs) Type() string      { return TypeJobs }
func (*JobList) Type() string   { return TypeJobList }
func (*JobRun) Type() string    { return TypeJobRun }
func (*JobResult) Type() string { return TypeJobResult }

func newJobsMsg(typ string) Msg {
	switch typ {
	case TypeJobs:
		return new(Jobs)
	case TypeJobList:
		return new(JobList)
	case TypeJobRun:
		return new(JobRun)
	case TypeJobResult:
		return new(JobResult)
	}
	return newProviderMsg(typ)
}
