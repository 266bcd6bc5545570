package wire

import (
	"context"
	"time"

	"github.com/mnemo/mnemo/hearth"
	"github.com/mnemo/mnemo/ipc"
)

// JobsCore is what the jobs messages need from the core; a core without
// it answers them unavailable. *hearth.Hearth implements it.
type JobsCore interface {
	Jobs() ([]hearth.JobStatus, error)
	RunJob(ctx context.Context, name string) (hearth.JobRun, error)
	JobsHealth() *hearth.JobsHealth
}

// jobTimeout bounds a run asked for by hand: a model call and its
// proposals.
const jobTimeout = 10 * time.Minute

func (s *Session) jobsCore(ref string) JobsCore {
	jc, ok := s.core.(JobsCore)
	if !ok {
		s.reply(&ipc.Error{Code: ipc.CodeUnavailable, Message: "this hearth runs no jobs", Ref: ref})
		return nil
	}
	return jc
}

// jobs lists the vault's jobs.
func (s *Session) jobs(m *ipc.Jobs) {
	jc := s.jobsCore(m.Ref)
	if jc == nil {
		return
	}
	st, err := jc.Jobs()
	if err != nil {
		s.refuse(err, m.Ref)
		return
	}
	s.reply(JobList(m.Ref, st))
}

// JobList is the jobs on the wire.
func JobList(ref string, st []hearth.JobStatus) *ipc.JobList {
	out := &ipc.JobList{Ref: ref, Jobs: make([]ipc.JobInfo, 0, len(st))}
	for _, j := range st {
		w := ipc.JobInfo{Name: j.Name, Schedule: j.Schedule, Enabled: j.Enabled, NextRun: j.Next, Error: j.Error}
		if l := j.Last; l != nil {
			w.LastKey, w.LastRun, w.Result, w.Attempts = l.Key, l.Started, l.Result, l.Attempts
			w.Applied, w.Queued, w.Rejected, w.LastError = l.Applied, l.Queued, l.Rejected, l.Error
		}
		out.Jobs = append(out.Jobs, w)
	}
	return out
}

// jobRun runs a job now, off the caller's goroutine; once asked it
// completes even when the client leaves.
func (s *Session) jobRun(m *ipc.JobRun) {
	if m.Name == "" {
		s.reply(&ipc.Error{Code: ipc.CodeBadRequest, Message: "job_run: name the job", Ref: m.Ref})
		return
	}
	jc := s.jobsCore(m.Ref)
	if jc == nil {
		return
	}
	s.wg.Go(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(s.ctx), jobTimeout)
		defer cancel()
		run, err := jc.RunJob(ctx, m.Name)
		if err != nil && run.Key == "" {
			s.refuse(err, m.Ref)
			return
		}
		s.reply(JobResult(m.Ref, run))
	})
}

// JobResult is a run on the wire.
func JobResult(ref string, run hearth.JobRun) *ipc.JobResult {
	r := &ipc.JobResult{Ref: ref, Name: run.Job, Key: run.Key, Questions: len(run.Questions), Rejected: len(run.Rejected)}
	for _, o := range run.Outcomes {
		switch o.Decision {
		case hearth.DecisionApplied:
			r.Applied++
		case hearth.DecisionQueued:
			r.Queued++
		default:
			r.Rejected++
		}
	}
	if run.Err != nil {
		r.Error = run.Err.Error()
	}
	return r
}
