package llm

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// toolDelta is one streamed tool-call fragment, as toolCalls.add takes it.
type toolDelta struct {
	index          int64
	id, name, args string
}

// parseToolDeltas reads deltas written one per line as "index|id|name|args"
// (args may contain "|"); a line with a bad index uses index 0. It is the
// fuzz input format.
func parseToolDeltas(s string) []toolDelta {
	var out []toolDelta
	for line := range strings.SplitSeq(s, "\n") {
		f := strings.SplitN(line, "|", 4)
		for len(f) < 4 {
			f = append(f, "")
		}
		idx, _ := strconv.ParseInt(f[0], 10, 64)
		out = append(out, toolDelta{index: idx, id: f[1], name: f[2], args: f[3]})
	}
	return out
}

func accumulateToolDeltas(deltas []toolDelta) []ToolCall {
	var a toolCalls
	for _, d := range deltas {
		a.add(d.index, d.id, d.name, d.args)
	}
	return a.result()
}

type toolCallCase struct {
	name   string
	deltas string // see parseToolDeltas
	want   []ToolCall
}

// toolCallCases are the accumulation table, also the fuzz seeds.
func toolCallCases() []toolCallCase {
	return []toolCallCase{
		{
			name:   "openai fragments",
			deltas: "0|call_a|get_weather|\n0|||{\"ci\n0|||ty\":\"Zü\n0|||rich\"}",
			want:   []ToolCall{{ID: "call_a", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Zürich"}`)}},
		},
		{
			name:   "parallel fragments",
			deltas: "0|call_a|f|\n0|||{}\n1|call_b|g|\n1|||{\"x\":\n1|||1}",
			want: []ToolCall{
				{ID: "call_a", Name: "f", Arguments: json.RawMessage(`{}`)},
				{ID: "call_b", Name: "g", Arguments: json.RawMessage(`{"x":1}`)},
			},
		},
		{
			name:   "interleaved indices",
			deltas: "0|call_a|f|{\"a\"\n1|call_b|g|{\"b\"\n0|||:1}\n1|||:2}",
			want: []ToolCall{
				{ID: "call_a", Name: "f", Arguments: json.RawMessage(`{"a":1}`)},
				{ID: "call_b", Name: "g", Arguments: json.RawMessage(`{"b":2}`)},
			},
		},
		{
			name:   "xai whole calls",
			deltas: "0|call_a|f|{\"q\":\"one\"}\n1|call_b|g|{\"q\":\"two\"}",
			want: []ToolCall{
				{ID: "call_a", Name: "f", Arguments: json.RawMessage(`{"q":"one"}`)},
				{ID: "call_b", Name: "g", Arguments: json.RawMessage(`{"q":"two"}`)},
			},
		},
		{
			name:   "whole calls reusing one index",
			deltas: "0|call_a|f|{\"q\":1}\n0|call_b|g|{\"q\":2}",
			want: []ToolCall{
				{ID: "call_a", Name: "f", Arguments: json.RawMessage(`{"q":1}`)},
				{ID: "call_b", Name: "g", Arguments: json.RawMessage(`{"q":2}`)},
			},
		},
		{
			name:   "id and name repeated on every fragment",
			deltas: "0|call_a|f|{\"q\"\n0|call_a|f|:1}",
			want:   []ToolCall{{ID: "call_a", Name: "f", Arguments: json.RawMessage(`{"q":1}`)}},
		},
		{
			name:   "name in pieces",
			deltas: "0|call_a|get_|\n0||weather|{}",
			want:   []ToolCall{{ID: "call_a", Name: "get_weather", Arguments: json.RawMessage(`{}`)}},
		},
		{
			name:   "no arguments",
			deltas: "0|call_a|now|",
			want:   []ToolCall{{ID: "call_a", Name: "now", Arguments: json.RawMessage(`{}`)}},
		},
		{
			name:   "blank arguments",
			deltas: "0|call_a|now| \n0|||\t",
			want:   []ToolCall{{ID: "call_a", Name: "now", Arguments: json.RawMessage(`{}`)}},
		},
		{
			name:   "arguments with surrounding space",
			deltas: "0|call_a|f| {\"a\": 1} ",
			want:   []ToolCall{{ID: "call_a", Name: "f", Arguments: json.RawMessage(`{"a": 1}`)}},
		},
		{
			name:   "truncated arguments",
			deltas: "0|call_a|f|{\"city\":\"Par",
			want:   []ToolCall{{ID: "call_a", Name: "f", Arguments: json.RawMessage(`{"_raw":"{\"city\":\"Par"}`)}},
		},
		{
			name:   "arguments not an object",
			deltas: "0|call_a|f|[1,2]",
			want:   []ToolCall{{ID: "call_a", Name: "f", Arguments: json.RawMessage(`{"_raw":"[1,2]"}`)}},
		},
		{
			name:   "arguments as prose",
			deltas: "0|call_a|f|city is <Paris> & \"co\"",
			want:   []ToolCall{{ID: "call_a", Name: "f", Arguments: json.RawMessage(`{"_raw":"city is \u003cParis\u003e \u0026 \"co\""}`)}},
		},
		{
			name:   "two objects back to back",
			deltas: "0|call_a|f|{}{}",
			want:   []ToolCall{{ID: "call_a", Name: "f", Arguments: json.RawMessage(`{"_raw":"{}{}"}`)}},
		},
		{
			name:   "missing ids",
			deltas: "0||f|{}\n1||g|{}",
			want: []ToolCall{
				{ID: "call_0", Name: "f", Arguments: json.RawMessage(`{}`)},
				{ID: "call_1", Name: "g", Arguments: json.RawMessage(`{}`)},
			},
		},
		{
			name:   "large and negative indices",
			deltas: "9223372036854775807|call_a|f|{}\n-1|call_b|g|{}",
			want: []ToolCall{
				{ID: "call_a", Name: "f", Arguments: json.RawMessage(`{}`)},
				{ID: "call_b", Name: "g", Arguments: json.RawMessage(`{}`)},
			},
		},
	}
}

func TestToolCallAccumulation(t *testing.T) {
	for _, tt := range toolCallCases() {
		t.Run(tt.name, func(t *testing.T) {
			got := accumulateToolDeltas(parseToolDeltas(tt.deltas))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("tool calls mismatch (-want +got):\n%s", diff)
			}
		})
	}
	if got := accumulateToolDeltas(nil); got != nil {
		t.Errorf("no deltas: got %v, want nil", got)
	}
}

// FuzzToolCallDeltas feeds arbitrary toolDelta sequences to the accumulator:
// it must never panic, every call must have an id and a JSON object for
// arguments, and arguments that form a JSON object must come through
// unchanged.
func FuzzToolCallDeltas(f *testing.F) {
	for _, tt := range toolCallCases() {
		f.Add(tt.deltas)
	}
	f.Add("")
	f.Add("x|||\xff\xfe")
	f.Add("0|||\"\\ud800\"")
	f.Fuzz(func(t *testing.T, s string) {
		deltas := parseToolDeltas(s)
		calls := accumulateToolDeltas(deltas)
		if len(calls) > len(deltas) {
			t.Errorf("%d calls from %d deltas", len(calls), len(deltas))
		}
		for i, c := range calls {
			if c.ID == "" {
				t.Errorf("call %d has no id", i)
			}
			var obj map[string]any
			if err := json.Unmarshal(c.Arguments, &obj); err != nil || obj == nil {
				t.Errorf("call %d arguments %q are not a JSON object: %v", i, c.Arguments, err)
			}
		}
		// With one call, its arguments are the concatenated fragments.
		if len(calls) == 1 {
			var text strings.Builder
			for _, d := range deltas {
				text.WriteString(d.args)
			}
			raw := strings.TrimSpace(text.String())
			var obj map[string]any
			if json.Unmarshal([]byte(raw), &obj) == nil && obj != nil && string(calls[0].Arguments) != raw {
				t.Errorf("arguments %q, want the fragments %q unchanged", calls[0].Arguments, raw)
			}
		}
	})
}

func TestRetryAfterHeader(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		headers map[string]string
		want    time.Duration
	}{
		{"none", nil, 0},
		{"seconds", map[string]string{"Retry-After": "7"}, 7 * time.Second},
		{"fractional seconds", map[string]string{"Retry-After": "1.5"}, 1500 * time.Millisecond},
		{"milliseconds win", map[string]string{"Retry-After": "2", "Retry-After-Ms": "1500"}, 1500 * time.Millisecond},
		{"milliseconds only", map[string]string{"retry-after-ms": "20"}, 20 * time.Millisecond},
		{"bad milliseconds fall back", map[string]string{"Retry-After": "3", "Retry-After-Ms": "soon"}, 3 * time.Second},
		{"http date", map[string]string{"Retry-After": "Sun, 01 Mar 2026 12:01:30 GMT"}, 90 * time.Second},
		{"http date in the past", map[string]string{"Retry-After": "Sun, 01 Mar 2026 11:00:00 GMT"}, 0},
		{"zero", map[string]string{"Retry-After": "0"}, 0},
		{"negative", map[string]string{"Retry-After": "-5"}, 0},
		{"garbage", map[string]string{"Retry-After": "later"}, 0},
		{"overflow", map[string]string{"Retry-After": "1e300"}, 0},
		{"overflow milliseconds", map[string]string{"Retry-After-Ms": "1e300"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := make(http.Header)
			for k, v := range tt.headers {
				h.Set(k, v)
			}
			if got := retryAfter(h, now); got != tt.want {
				t.Errorf("retryAfter(%v) = %v, want %v", tt.headers, got, tt.want)
			}
		})
	}
}

func TestContextOverflow(t *testing.T) {
	tests := []struct {
		status  int
		code    string
		message string
		want    bool
	}{
		{400, "context_length_exceeded", "", true},
		{400, "", "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens.", true},
		{400, "", "This model's maximum prompt length is 131072 but the request contains 200000 tokens.", true},
		{400, "", "the request exceeds the available context size, try increasing it", true},
		{400, "", "prompt is too long: 210000 tokens > 200000 maximum", true},
		{413, "", "Prompt too long", true},
		{400, "", "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).", true},
		{400, "", "Invalid value for 'temperature'", false},
		{429, "context_length_exceeded", "context window", false},
		{500, "", "context length", false},
		{200, "context_length_exceeded", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.message, func(t *testing.T) {
			if got := contextOverflow(tt.status, tt.code, tt.message); got != tt.want {
				t.Errorf("contextOverflow(%d, %q, %q) = %v, want %v", tt.status, tt.code, tt.message, got, tt.want)
			}
		})
	}
}
