package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/mnemo/mnemo/ipc"
)

// jobsUsage is mnemo jobs' help.
const jobsUsage = `usage: mnemo jobs [run NAME]
  List the vault's jobs (jobs/*.yml): schedule, last run and its result,
  errors, next run. mnemo jobs run NAME runs one now over its current
  period (the owner only) and says what it proposed.`

// jobsCmd lists the jobs, or runs one.
func jobsCmd(ctx context.Context, addr string, opts ipc.DialOptions, args []string, w io.Writer) error {
	fs := flag.NewFlagSet("jobs", flag.ContinueOnError)
	fs.SetOutput(w)
	fs.Usage = func() { fmt.Fprintln(w, jobsUsage) }
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	var msg ipc.Msg
	ref := newRef()
	switch a := fs.Args(); {
	case len(a) == 0:
		msg = &ipc.Jobs{Ref: ref}
	case len(a) == 2 && a[0] == "run":
		msg = &ipc.JobRun{Ref: ref, Name: a[1]}
	default:
		return usageError{errors.New(jobsUsage)}
	}
	conn, err := ipc.Dial(ctx, addr, opts)
	if err != nil {
		return err
	}
	defer conn.Close()
	return request(ctx, conn, msg, ref, "this hearth runs no jobs: upgrade it", func(m ipc.Msg) (bool, error) {
		switch m := m.(type) {
		case *ipc.JobList:
			if m.Ref == ref {
				printJobs(w, m.Jobs, time.Now())
				return true, nil
			}
		case *ipc.JobResult:
			if m.Ref == ref {
				fmt.Fprintf(w, "%s ran %s: %d applied, %d queued for review, %d rejected, %d questions\n",
					m.Name, m.Key, m.Applied, m.Queued, m.Rejected, m.Questions)
				if m.Error != "" {
					return true, fmt.Errorf("%s failed (it will be retried): %s", m.Name, m.Error)
				}
				return true, nil
			}
		}
		return false, nil
	})
}

func printJobs(w io.Writer, jobs []ipc.JobInfo, now time.Time) {
	if len(jobs) == 0 {
		fmt.Fprintln(w, "no jobs (the vault's jobs/ folder is empty)")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSCHEDULE\tLAST RUN\tRESULT\tNEXT RUN")
	when := func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.Local().Format("2006-01-02 15:04")
	}
	for _, j := range jobs {
		if j.Error != "" {
			fmt.Fprintf(tw, "%s\t(invalid)\t-\t-\t-\n", j.Name)
			continue
		}
		sched := j.Schedule
		if !j.Enabled {
			sched += " (disabled)"
		}
		result := "-"
		if j.Result != "" {
			result = fmt.Sprintf("%s %s: %d applied, %d queued, %d rejected", j.LastKey, j.Result, j.Applied, j.Queued, j.Rejected)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", j.Name, sched, when(j.LastRun), result, when(j.NextRun))
	}
	tw.Flush()
	for _, j := range jobs {
		switch {
		case j.Error != "":
			fmt.Fprintf(w, "error: %s\n", j.Error)
		case j.LastError != "":
			fmt.Fprintf(w, "%s failed (attempt %d, retried at the next run): %s\n", j.Name, j.Attempts, j.LastError)
		}
	}
}
