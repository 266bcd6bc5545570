package voice

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// serverEvent is every field of a provider event the client reads, of
// both dialects and their old names. Unknown fields are ignored.
type serverEvent struct {
	Type         string    `json:"type"`
	ResponseID   string    `json:"response_id"`
	ItemID       string    `json:"item_id"`
	Delta        string    `json:"delta"`
	Transcript   string    `json:"transcript"`
	Text         string    `json:"text"`
	Status       string    `json:"status"`
	CallID       string    `json:"call_id"`
	Name         string    `json:"name"`
	Arguments    string    `json:"arguments"`
	AudioStartMS float64   `json:"audio_start_ms"`
	AudioEndMS   float64   `json:"audio_end_ms"`
	Item         *wireItem `json:"item"`
	Response     *wireResp `json:"response"`
	Conversation *wireConv `json:"conversation"`
	Session      *wireSess `json:"session"`
	Error        wireError `json:"error"`
	Code         string    `json:"code"`
	Message      string    `json:"message"`
}

type wireItem struct {
	ID        string `json:"id"`
	Type      string `json:"type"`
	Role      string `json:"role"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type wireResp struct {
	ID     string `json:"id"`
	Status string `json:"status"`
}

type wireConv struct {
	ID string `json:"id"`
}

type wireSess struct {
	ID    string `json:"id"`
	Model string `json:"model"`
}

// wireError accepts {"error":{type,code,message}} and a bare string.
type wireError struct {
	Type    string `json:"type"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *wireError) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		return json.Unmarshal(b, &e.Message)
	}
	if string(b) == "null" {
		return nil
	}
	type plain wireError
	return json.Unmarshal(b, (*plain)(e))
}

// eventNames maps old and alternate event names to the ones the session
// handles (VOICE.md: "old names still sent").
var eventNames = map[string]string{
	"response.audio.delta":                               "response.output_audio.delta",
	"response.audio.done":                                "response.output_audio.done",
	"response.audio_transcript.delta":                    "response.output_audio_transcript.delta",
	"response.audio_transcript.done":                     "response.output_audio_transcript.done",
	"response.text.delta":                                "response.output_text.delta",
	"response.text.done":                                 "response.output_text.done",
	"response.output_text.delta":                         "response.output_audio_transcript.delta",
	"response.output_text.done":                          "response.output_audio_transcript.done",
	"conversation.item.created":                          "conversation.item.added",
	"conversation.item.input_audio_transcription.failed": "error",
}

// decodeServerEvent parses one provider event and normalises its name.
func decodeServerEvent(b []byte) (serverEvent, error) {
	var ev serverEvent
	if err := json.Unmarshal(b, &ev); err != nil {
		return serverEvent{}, fmt.Errorf("voice: decode server event: %w", err)
	}
	if ev.Type == "" {
		return serverEvent{}, errors.New("voice: server event without type")
	}
	for range 2 { // text → transcript goes through two renames
		if n, ok := eventNames[ev.Type]; ok {
			ev.Type = n
		}
	}
	if ev.Type == "error" {
		if ev.Error.Message == "" {
			ev.Error.Message = ev.Message
		}
		if ev.Error.Code == "" {
			ev.Error.Code = ev.Code
		}
	}
	return ev, nil
}

// harmless reports the two races that are not errors (VOICE.md): a cancel
// that found no response, a create while one is active.
func harmless(e wireError) bool {
	m := strings.ToLower(e.Message)
	return strings.Contains(m, "no active response") ||
		strings.Contains(m, "already has an active response") ||
		e.Code == "response_cancel_not_active" ||
		e.Code == "conversation_already_has_active_response"
}

// fatalError reports errors after which the provider ends the session.
func fatalError(e wireError) bool {
	return e.Type == "max_duration" || e.Code == "max_duration" || e.Code == "session_expired"
}

type obj = map[string]any

// sessionUpdate renders the settings in the dialect's session.update shape.
// Turn detection is always explicit: xAI starts with it off.
func sessionUpdate(dialect string, st Settings) obj {
	vad := st.VAD.withDefaults()
	tools := make([]obj, 0, len(st.Tools))
	for _, t := range st.Tools {
		params := t.Parameters
		if len(params) == 0 {
			params = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		tools = append(tools, obj{"type": "function", "name": t.Name, "description": t.Description, "parameters": params})
	}
	pcm := obj{"type": "audio/pcm", "rate": SampleRate}
	var td any
	if vad.Mode == VADManual {
		if dialect == DialectXAI {
			td = obj{"type": nil}
		} // OpenAI: null turns detection off
	} else {
		t := obj{"type": "server_vad", "threshold": vad.Threshold,
			"silence_duration_ms": vad.SilenceMS, "prefix_padding_ms": vad.PrefixPaddingMS}
		if dialect == DialectOpenAI {
			t["create_response"] = true
			t["interrupt_response"] = true
		}
		td = t
	}
	trans := st.Transcription
	s := obj{"instructions": st.Instructions, "tools": tools}
	switch dialect {
	case DialectOpenAI:
		if trans == "" {
			trans = "gpt-4o-transcribe"
		}
		out := obj{"format": pcm}
		if st.Voice != "" {
			out["voice"] = st.Voice
		}
		s["type"] = "realtime"
		s["output_modalities"] = []string{"audio"}
		s["audio"] = obj{
			"input":  obj{"format": pcm, "transcription": obj{"model": trans}, "turn_detection": td},
			"output": out,
		}
	default:
		if trans == "" {
			trans = "grok-transcribe"
		}
		if st.Voice != "" {
			s["voice"] = st.Voice
		}
		s["turn_detection"] = td
		s["audio"] = obj{
			"input":  obj{"format": pcm, "transcription": obj{"model": trans}},
			"output": obj{"format": pcm},
		}
		s["resumption"] = obj{"enabled": true}
	}
	return obj{"type": "session.update", "session": s}
}
