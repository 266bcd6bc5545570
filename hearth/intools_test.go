package hearth_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/mnemo/mnemo/hearth"
	"github.com/mnemo/mnemo/hearth/llm"
	"github.com/mnemo/mnemo/hearth/tools"
	"github.com/mnemo/mnemo/memory"
	"github.com/mnemo/mnemo/memory/journal"
)

// toolCaller asks for the lookup tool on every call.
type toolCaller struct{}

func (toolCaller) Name() string  { return "xai" }
func (toolCaller) Model() string { return "grok-test" }
func (toolCaller) Stream(context.Context, llm.Request, func(string)) (llm.Response, error) {
	return llm.Response{ToolCalls: []llm.ToolCall{{ID: "c1", Name: "lookup", Arguments: json.RawMessage(`{}`)}}}, nil
}

// toolJournal refuses to store tool outcomes when broken.
type toolJournal struct {
	*journal.Journal
	broken bool
}

func (j toolJournal) Append(ctx context.Context, r journal.Record) (journal.Record, error) {
	if j.broken && r.Role == memory.RoleTool {
		return r, errors.New("disk full")
	}
	return j.Journal.Append(ctx, r)
}

// TestProblemInTools: a turn that ends in its tool loop — the model still
// calling tools at the iteration limit, or a tool's outcome not stored —
// says so (InTools); a provider failure does not.
func TestProblemInTools(t *testing.T) {
	for _, tt := range []struct {
		name   string
		model  hearth.Model
		broken bool
		want   bool
	}{
		{"iteration limit while calling tools", toolCaller{}, false, true},
		{"tool outcome not stored", toolCaller{}, true, true},
		{"provider failure", failingModel{err: &llm.Error{Provider: "xai", Status: 500, Err: errors.New("boom")}}, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			j, err := journal.Open(t.TempDir(), journal.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { j.Close() })
			reg := &catalogTools{}
			reg.set([]tools.Spec{{Name: "lookup", Parameters: json.RawMessage(`{"type":"object"}`), Effect: tools.ReadOnly, Permission: tools.Safe}})
			h := runCore(t, hearth.Config{Journal: toolJournal{j, tt.broken}, Models: fixed{tt.model}, Tools: reg, MaxIterations: 2, ShutdownGrace: 5 * time.Second})
			rec := newRecorder()
			rec.watch(t, h, hearth.WatchOptions{})
			if err := h.Send("r1", "look it up"); err != nil {
				t.Fatal(err)
			}
			var p *hearth.Problem
			rec.waitFor(t, func(e hearth.Event) bool {
				if x, ok := e.(*hearth.Problem); ok && x.Code != hearth.CodeToolError {
					p = x
					return true
				}
				return false
			})
			if p.InTools != tt.want || p.Code != hearth.CodeProviderError {
				t.Fatalf("problem %+v, want code provider_error and InTools %v", p, tt.want)
			}
		})
	}
}
