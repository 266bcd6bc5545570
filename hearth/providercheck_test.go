package hearth_test

import (
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mnemo/mnemo/hearth"
	"github.com/mnemo/mnemo/hearth/llm"
	"github.com/mnemo/mnemo/memory/journal"
)

// checkModel streams text, then holds the call open until its context
// ends (a model that would go on talking); with err set it fails at once.
type checkModel struct {
	text string
	err  error
	cut  chan error // the cause the call was ended with
}

func (m *checkModel) Name() string  { return "openai" }
func (m *checkModel) Model() string { return "stand-in" }
func (m *checkModel) Stream(ctx context.Context, req llm.Request, onText func(string)) (llm.Response, error) {
	if m.err != nil {
		return llm.Response{}, m.err
	}
	if len(req.Messages) != 1 || req.Tools != nil {
		return llm.Response{}, errors.New("a check sends one message and no tools")
	}
	onText(m.text)
	<-ctx.Done()
	m.cut <- context.Cause(ctx)
	return llm.Response{}, &llm.Error{Provider: "openai", Err: ctx.Err()}
}

type noModels struct{}

func (noModels) Resolve() (hearth.Model, error) {
	return nil, errors.New("no model provider is configured: set XAI_API_KEY")
}

func newCheckCore(t *testing.T, models hearth.Models) *hearth.Hearth {
	t.Helper()
	j, err := journal.Open(t.TempDir(), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	h, err := hearth.New(hearth.Config{Journal: j, Models: models})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestCheckProvider: the check says whether the model answered and, when
// not, what kind of failure it was with the fix, never the provider's
// text; an answering model is cut off at its first text.
func TestCheckProvider(t *testing.T) {
	const secret = "sk-SECRET-in-the-body"
	body := errors.New("provider said: bad key " + secret)
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	for _, tc := range []struct {
		name     string
		models   hearth.Models
		ok       bool
		category string
		problem  string
	}{
		{"answers", fixed{&checkModel{text: "ok", cut: make(chan error, 1)}}, true, "", ""},
		{"no provider", noModels{}, false, hearth.CategoryNoProvider, "set XAI_API_KEY"},
		{"rejected key", fixed{&checkModel{err: &llm.Error{Provider: "openai", Status: 401, Err: body}}}, false, "rejected_key", "set OPENAI_API_KEY to a valid key"},
		{"unreachable", fixed{&checkModel{err: &llm.Error{Provider: "openai", Attempts: 3, Err: refused}}}, false, "unreachable", "check OPENAI_BASE_URL"},
		{"slow", fixed{&checkModel{err: &llm.Error{Provider: "openai", Attempts: 3, Err: &llm.TimeoutError{Kind: llm.TimeoutFirstByte, After: time.Second}}}}, false, "timeout", "raise model.first_byte_timeout"},
		{"model unknown", fixed{&checkModel{err: &llm.Error{Provider: "openai", Status: 404, Err: body}}}, false, hearth.CategoryModelUnknown, `does not know the model "stand-in"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newCheckCore(t, tc.models)
			got, err := h.CheckProvider(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if got.OK != tc.ok || got.Category != tc.category || !strings.Contains(got.Problem, tc.problem) {
				t.Errorf("check = %+v, want ok %v, category %q, a problem saying %q", got, tc.ok, tc.category, tc.problem)
			}
			if strings.Contains(got.Problem, secret) {
				t.Errorf("the problem carries the provider's text: %q", got.Problem)
			}
			if tc.ok {
				if got.Provider != "openai" || got.Model != "stand-in" || got.Latency <= 0 {
					t.Errorf("check = %+v, want the provider, the model and a latency", got)
				}
				if cause := <-tc.models.(fixed).m.(*checkModel).cut; cause == nil {
					t.Error("the call was not cut off after its first text")
				}
			}
		})
	}
}

// TestCheckProviderCancelled: the caller giving up is the check's error,
// not a provider failure.
func TestCheckProviderCancelled(t *testing.T) {
	h := newCheckCore(t, fixed{&checkModel{err: &llm.Error{Provider: "openai", Err: context.Canceled}}})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := h.CheckProvider(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}
