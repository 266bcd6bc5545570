package agent

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/mnemo/mnemo/hearth/llm"
)

// TestRunCallOutsideTheLoop: a call taken outside Run (a voice session's)
// is offered, prepared and run exactly as Run's own: admin tools neither
// offered nor run, the reason taken out, a confirm tool asked first.
func TestRunCallOutsideTheLoop(t *testing.T) {
	tb := newToolbox()
	offered := Offered(context.Background(), tb, nil)
	var names []string
	for _, s := range offered {
		names = append(names, s.Name)
	}
	if want := []string{"echo", "write", "slow"}; !slices.Equal(names, want) {
		t.Errorf("offered %v, want %v (no admin tool, the registry's order)", names, want)
	}
	tests := []struct {
		name, tool, args string
		approve          bool
		wantText         string
		wantError        bool
		wantEvents       []string
	}{
		{"safe", "echo", `{"x":1,"reason":"why"}`, false, `echoed {"x":1}`, false, []string{"start echo"}},
		{"confirm approved", "write", `{"reason":"keep"}`, true, "written", false, []string{"confirm?", "start write"}},
		{"confirm denied", "write", `{"reason":"keep"}`, false, "the owner did not approve", true, []string{"confirm?"}},
		{"admin", "root", `{}`, false, `there is no tool named "root"`, true, nil},
		{"bad JSON", "echo", `{"x":`, false, "not valid JSON", true, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{approve: tc.approve}
			c := Prepare(llm.ToolCall{ID: "v1", Name: tc.tool, Arguments: json.RawMessage(tc.args)}, offered)
			out := RunCall(context.Background(), tb, Config{}, c, rec)
			if out.Result.IsError != tc.wantError || !strings.Contains(out.Result.Text, tc.wantText) {
				t.Errorf("outcome = %+v, want %q (error %v)", out.Result, tc.wantText, tc.wantError)
			}
			if !slices.Equal(rec.events, tc.wantEvents) {
				t.Errorf("events %q, want %q", rec.events, tc.wantEvents)
			}
		})
	}
}
