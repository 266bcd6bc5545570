package tools

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var splitReasonTests = []struct {
	name    string
	args    string
	reason  string
	rest    string
	wantErr bool
}{
	{"reason and more", `{"reason":"to check","query":"cats","k":3}`, "to check", `{"query":"cats","k":3}`, false},
	{"reason in the middle keeps order", `{"b":1,"reason":"r","a":[1,{"x":null}]}`, "r", `{"b":1,"a":[1,{"x":null}]}`, false},
	{"no reason", `{"query":"cats"}`, "", `{"query":"cats"}`, false},
	{"only reason", `{"reason":"why"}`, "why", `{}`, false},
	{"null reason", `{"reason":null,"a":1}`, "", `{"a":1}`, false},
	{"duplicate reason, last wins", `{"reason":"one","a":1,"reason":"two"}`, "two", `{"a":1}`, false},
	{"escaped reason", `{"reason":"a \"quoted\" \u00e9 reason"}`, `a "quoted" é reason`, `{}`, false},
	{"empty", ``, "", `{}`, false},
	{"null", `null`, "", `{}`, false},
	{"whitespace", " \n\t{ \"reason\" : \"r\" , \"a\" : 1 }\n", "r", `{"a":1}`, false},
	{"key with html", `{"<a>":"&"}`, "", `{"<a>":"&"}`, false},
	{"array", `[1,2]`, "", "", true},
	{"string", `"reason"`, "", "", true},
	{"non-string reason", `{"reason":42}`, "", "", true},
	{"object reason", `{"reason":{"a":1}}`, "", "", true},
	{"truncated", `{"reason":"r"`, "", "", true},
	{"trailing data", `{"reason":"r"} {}`, "", "", true},
	{"invalid", `{reason:"r"}`, "", "", true},
}

func TestSplitReason(t *testing.T) {
	for _, tc := range splitReasonTests {
		t.Run(tc.name, func(t *testing.T) {
			reason, rest, err := SplitReason(json.RawMessage(tc.args))
			if (err != nil) != tc.wantErr {
				t.Fatalf("SplitReason(%s) error = %v, want error %v", tc.args, err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			if reason != tc.reason {
				t.Errorf("reason = %q, want %q", reason, tc.reason)
			}
			if string(rest) != tc.rest {
				t.Errorf("rest = %s, want %s", rest, tc.rest)
			}
		})
	}
}

var redactTests = []struct {
	name, in, want string
}{
	{"plain", `{"query":"cats","k":3}`, `{"query":"cats","k":3}`},
	{"token", `{"token":"abc","q":"x"}`, `{"token":"[redacted]","q":"x"}`},
	{"variants", `{"api_key":"a","apiKey":"b","API-KEY":"c","key":"d","private.key":"e","access_token":"f","Password":"g","client_secret":"h","Authorization":"i","cookie":"j","bearer":"k","auth":"l","credentials":"m","passphrase":"n","pwd":"o"}`,
		`{"api_key":"[redacted]","apiKey":"[redacted]","API-KEY":"[redacted]","key":"[redacted]","private.key":"[redacted]","access_token":"[redacted]","Password":"[redacted]","client_secret":"[redacted]","Authorization":"[redacted]","cookie":"[redacted]","bearer":"[redacted]","auth":"[redacted]","credentials":"[redacted]","passphrase":"[redacted]","pwd":"[redacted]"}`},
	{"not secrets", `{"max_tokens":100,"keyword":"k","keys":["a"],"author":"me","monkeys":1}`, `{"max_tokens":100,"keyword":"k","keys":["a"],"author":"me","monkeys":1}`},
	{"nested", `{"a":{"b":[{"password":"p","ok":true}]},"headers":{"Authorization":"Bearer x"}}`, `{"a":{"b":[{"password":"[redacted]","ok":true}]},"headers":{"Authorization":"[redacted]"}}`},
	{"secret object value", `{"secret":{"a":[1,2]},"n":null}`, `{"secret":"[redacted]","n":null}`},
	{"bearer value under any key", `{"header":"Bearer abc.def","basic":"basic dXNlcjpwYXNz","note":"bearer of news"}`, `{"header":"[redacted]","basic":"[redacted]","note":"[redacted]"}`},
	{"numbers kept exactly", `{"big":12345678901234567890,"f":1.50e3}`, `{"big":12345678901234567890,"f":1.50e3}`},
	{"order kept", `{"z":1,"a":2,"m":{"y":1,"b":2}}`, `{"z":1,"a":2,"m":{"y":1,"b":2}}`},
	{"array root", `[{"token":"t"},"x"]`, `[{"token":"[redacted]"},"x"]`},
	{"scalar root", `"hello"`, `"hello"`},
	{"html not escaped", `{"q":"<b>&</b>"}`, `{"q":"<b>&</b>"}`},
	{"empty", ``, ``},
	{"invalid", `{"token":"abc"`, `"[redacted: arguments are not valid JSON]"`},
	{"trailing", `{"a":1} {"token":"x"}`, `"[redacted: arguments are not valid JSON]"`},
}

func TestRedact(t *testing.T) {
	for _, tc := range redactTests {
		t.Run(tc.name, func(t *testing.T) {
			got := string(Redact(json.RawMessage(tc.in)))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Redact(%s) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}
