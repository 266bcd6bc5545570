// Package telemetry keeps hearth's Prometheus metrics: request latency
// per door and route (per message type on the NDJSON door), model calls
// and tokens, retrieval hit rate, tool durations, dropped subscribers and
// authentication failures. Its metrics live on a registry the daemon
// makes and passes in (no globals); the HTTP door serves it at /metrics.
//
// A nil *Metrics records nothing, so that a door or a test without
// telemetry needs no checks.
package telemetry

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mnemo/mnemo/hearth"
)

// Metrics are hearth's metrics on one registry.
type Metrics struct {
	reg *prometheus.Registry

	requests     *prometheus.HistogramVec // door, route, status
	modelCalls   *prometheus.CounterVec   // model, outcome
	tokens       *prometheus.CounterVec   // direction
	searches     prometheus.Counter
	searchHits   prometheus.Counter // searches with at least one hit
	tools        *prometheus.HistogramVec
	authFailures *prometheus.CounterVec // door
}

// Latency buckets, seconds: 100 µs to 60 s (a turn streams for long).
var buckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// New registers hearth's metrics on reg, with the Go runtime's and the
// process's.
func New(reg *prometheus.Registry) *Metrics {
	m := &Metrics{
		reg: reg,
		requests: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "mnemo_request_duration_seconds", Buckets: buckets,
			Help: "Requests answered by each door, by route (HTTP) or message type (NDJSON), and status.",
		}, []string{"door", "route", "status"}),
		modelCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mnemo_model_calls_total", Help: "Replies of the model: ok, or the problem's code.",
		}, []string{"model", "outcome"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mnemo_model_tokens_total", Help: "Tokens the provider counted, in (prompt) and out (reply).",
		}, []string{"direction"}),
		searches: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mnemo_retrieval_searches_total", Help: "Memory searches asked by the doors.",
		}),
		searchHits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mnemo_retrieval_searches_hit_total", Help: "Memory searches that found at least one hit (hit rate: this / searches).",
		}),
		tools: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "mnemo_tool_duration_seconds", Buckets: buckets,
			Help: "Tool calls: the companion's (source agent) and other agents' over MCP (source mcp), by outcome.",
		}, []string{"source", "tool", "outcome"}),
		authFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mnemo_auth_failures_total", Help: "Credentials refused (missing, wrong, revoked), by door.",
		}, []string{"door"}),
	}
	reg.MustRegister(m.requests, m.modelCalls, m.tokens, m.searches, m.searchHits, m.tools, m.authFailures)
	return m
}

// Registry is where the metrics are (what /metrics gathers).
func (m *Metrics) Registry() *prometheus.Registry {
	if m == nil {
		return nil
	}
	return m.reg
}

// Request records a request a door answered: status is the HTTP
// status, or on the NDJSON door ok or forbidden. A message's time is its
// handling by the door (a turn's reply streams after).
func (m *Metrics) Request(door, route, status string, d time.Duration) {
	if m == nil {
		return
	}
	m.requests.WithLabelValues(door, route, status).Observe(d.Seconds())
}

// Search records a memory search and whether it found anything.
func (m *Metrics) Search(hits int) {
	if m == nil {
		return
	}
	m.searches.Inc()
	if hits > 0 {
		m.searchHits.Inc()
	}
}

// Tool records a tool call: source is "agent" (the companion's) or
// "mcp" (another agent's over the MCP door).
func (m *Metrics) Tool(source, name, outcome string, d time.Duration) {
	if m == nil {
		return
	}
	m.tools.WithLabelValues(source, name, outcome).Observe(d.Seconds())
}

// AuthFailure records a refused credential at door.
func (m *Metrics) AuthFailure(door string) {
	if m == nil {
		return
	}
	m.authFailures.WithLabelValues(door).Inc()
}

// Core is what Watch needs of hearth's core.
type Core interface {
	Subscribe(opts hearth.WatchOptions) (*hearth.Subscription, error)
	Health() hearth.Health
}

// Watch records what the core does (model calls, tokens, its tools'
// durations) from its events until ctx ends or the core stops, and
// exposes the subscribers the core dropped for lagging. It subscribes
// before it returns, so nothing the core does after Watch is missed.
func (m *Metrics) Watch(ctx context.Context, core Core) (wait func() error, err error) {
	m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "mnemo_dropped_subscribers_total", Help: "Subscribers the core cut off because they lagged.",
	}, func() float64 { return float64(core.Health().Dropped) }))
	const classes = hearth.ClassTurns | hearth.ClassProblems
	sub, err := core.Subscribe(hearth.WatchOptions{Name: "telemetry", Classes: classes})
	if err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() {
		for {
			err := sub.Run(ctx, func(evs []hearth.Event) error {
				for _, ev := range evs {
					m.observe(ev)
				}
				return nil
			})
			sub.Close()
			if errors.Is(err, hearth.ErrLagging) {
				// Counted as dropped like any other; come back, having
				// missed what was queued.
				if sub, err = core.Subscribe(hearth.WatchOptions{Name: "telemetry", Classes: classes}); err == nil {
					continue
				}
			}
			if errors.Is(err, context.Canceled) || errors.Is(err, hearth.ErrShuttingDown) {
				err = nil
			}
			done <- err
			return
		}
	}()
	return func() error { return <-done }, nil
}

func (m *Metrics) observe(ev hearth.Event) {
	switch e := ev.(type) {
	case *hearth.ReplyDone:
		m.modelCalls.WithLabelValues(e.Model, "ok").Inc()
		if e.Usage != nil {
			m.tokens.WithLabelValues("in").Add(float64(e.Usage.InputTokens))
			m.tokens.WithLabelValues("out").Add(float64(e.Usage.OutputTokens))
		}
	case *hearth.ToolOutcome:
		if t := e.Record.Tool; t != nil {
			outcome := "ok"
			if t.Error != "" {
				outcome = "error"
			}
			m.Tool("agent", t.Name, outcome, time.Duration(t.DurationMS)*time.Millisecond)
		}
	case *hearth.Problem:
		switch e.Code {
		case hearth.CodeProviderError, hearth.CodeContextOverflow:
			m.modelCalls.WithLabelValues("", e.Code).Inc()
		}
	}
}
