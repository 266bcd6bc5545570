package httpdoor

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"
)

// The request decoders never panic, answer every bad body with 400 or
// 422 (never a 500), and what they accept is valid by the request's
// schema: the schema and the decoder agree.
func fuzzDecoder[T any](f *testing.F, schema string, seeds ...string) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var dst T
		err := decodeChecked(body, schema, &dst)
		if err != nil {
			var ae *apiError
			if !errors.As(err, &ae) || ae.status != http.StatusBadRequest && ae.status != http.StatusUnprocessableEntity {
				t.Fatalf("%q: %v", body, err)
			}
			if ae.clarify != nil {
				b, _ := json.Marshal(errorBody{Error: errorObject{Message: ae.msg, Type: ae.typ, Code: ae.code}, RequestID: "req_x", Clarify: ae.clarify})
				if verr := Validate("error", b); verr != nil {
					t.Fatalf("error body not valid: %v\n%s", verr, b)
				}
			}
			return
		}
		if verr := Validate(schema, body); verr != nil {
			t.Fatalf("accepted %q, which its schema refuses: %v", body, verr)
		}
	})
}

func FuzzChatCompletions(f *testing.F) {
	fuzzDecoder[chatRequest](f, "chat_completion_request",
		chatOK,
		`{"model":"mnemo","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"a"}]}]}`,
		`{"model":"mnemo","temperature":3,"messages":[{"role":"user","content":null}]}`,
		`{"model":"mnemo","messages":[],"n":2}`,
		`{"model":1}`, `[]`, `null`, `{"model":"mnemo","messages":[{"role":"user","content":"x","extra":1}]}`)
}

func FuzzEngineChat(f *testing.F) {
	fuzzDecoder[engineRequest](f, "engine_chat_request",
		engineBody,
		`{"messages":[{"role":"user","content":"x"}],"metadata":{"correlation_id":"c","conversation_id":"main"}}`,
		`{"messages":[{"role":"user"}],"metadata":{"correlation_id":""}}`,
		`{"messages":[{"role":"tool","content":"x"}],"metadata":{"correlation_id":"c","client_context":[]}}`)
}

func FuzzQuery(f *testing.F) {
	fuzzDecoder[queryRequest](f, "query_request",
		`{"query":"ana"}`, `{"query":"x","top_k":5,"kinds":["turn","knowledge"],"summarize":true}`,
		`{"query":"x","top_k":1.5}`, `{"query":"x","top_k":-1}`, `{"query":"x","kinds":["nope"]}`)
}

func FuzzIngest(f *testing.F) {
	fuzzDecoder[ingestRequest](f, "ingest_request",
		`{"source":"drive","documents":[{"content":"c","source_uri":"https://x","acquired_at":"2026-01-01T00:00:00Z","version":"1","owner":"o","tags":["a"]}]}`,
		`{"source":"Drive!","documents":[{"content":""}]}`, `{"source":"s","documents":[]}`)
}
