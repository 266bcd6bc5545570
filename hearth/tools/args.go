package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// SplitReason takes the "reason" member out of a tool call's arguments
// object. It returns the reason (empty when absent or null) and the other
// members in their original order and encoding. Empty or null arguments
// are an empty object. Arguments that are not a JSON object, or a reason
// that is neither a string nor null, are an error.
func SplitReason(args json.RawMessage) (reason string, rest json.RawMessage, err error) {
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return "", json.RawMessage("{}"), nil
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return "", nil, errors.New("split reason: arguments are not a JSON object")
	}
	var out bytes.Buffer
	out.WriteByte('{')
	first := true
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return "", nil, fmt.Errorf("split reason: %w", err)
		}
		key, ok := tok.(string)
		if !ok {
			return "", nil, errors.New("split reason: arguments are not a JSON object")
		}
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return "", nil, fmt.Errorf("split reason: %w", err)
		}
		if key == ReasonParam {
			reason = ""
			if string(val) != "null" {
				if err := json.Unmarshal(val, &reason); err != nil {
					return "", nil, errors.New("split reason: reason is not a string")
				}
			}
			continue
		}
		if !first {
			out.WriteByte(',')
		}
		first = false
		writeJSONString(&out, key)
		out.WriteByte(':')
		out.Write(val)
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return "", nil, fmt.Errorf("split reason: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return "", nil, errors.New("split reason: data after the arguments object")
	}
	out.WriteByte('}')
	return reason, out.Bytes(), nil
}

// redacted replaces secret values.
const redacted = "[redacted]"

// Redact returns args with the values of secret-looking keys replaced by
// "[redacted]", at any depth, for the journal and for clients. A key is
// secret when, lower-cased and without "_", "-", "." and spaces, it
// contains token (but does not end in "tokens", a count), password, passwd,
// passphrase, secret, authorization, cookie, bearer, credential or
// signature; or it is "auth", "pwd" or "pin"; or it ends in "key" (key,
// apikey, api_key, privatekey, ...). String values that start with
// "Bearer " or "Basic " are redacted under any key. Members keep their
// order. Input that is not valid JSON is replaced whole, so nothing
// unparsed leaks; empty input is returned as is.
func Redact(args json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(args)) == 0 {
		return args
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	var out bytes.Buffer
	if err := redactValue(dec, &out, 0); err != nil {
		return json.RawMessage(`"[redacted: arguments are not valid JSON]"`)
	}
	if _, err := dec.Token(); err != io.EOF {
		return json.RawMessage(`"[redacted: arguments are not valid JSON]"`)
	}
	return out.Bytes()
}

// maxRedactDepth bounds recursion on hostile input.
const maxRedactDepth = 200

func redactValue(dec *json.Decoder, out *bytes.Buffer, depth int) error {
	if depth > maxRedactDepth {
		return errors.New("too deep")
	}
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			out.WriteByte('{')
			for i := 0; dec.More(); i++ {
				ktok, err := dec.Token()
				if err != nil {
					return err
				}
				key, ok := ktok.(string)
				if !ok {
					return errors.New("object key is not a string")
				}
				if i > 0 {
					out.WriteByte(',')
				}
				writeJSONString(out, key)
				out.WriteByte(':')
				if secretKey(key) {
					var skip json.RawMessage
					if err := dec.Decode(&skip); err != nil {
						return err
					}
					writeJSONString(out, redacted)
					continue
				}
				if err := redactValue(dec, out, depth+1); err != nil {
					return err
				}
			}
			if _, err := dec.Token(); err != nil {
				return err
			}
			out.WriteByte('}')
		case '[':
			out.WriteByte('[')
			for i := 0; dec.More(); i++ {
				if i > 0 {
					out.WriteByte(',')
				}
				if err := redactValue(dec, out, depth+1); err != nil {
					return err
				}
			}
			if _, err := dec.Token(); err != nil {
				return err
			}
			out.WriteByte(']')
		default:
			return errors.New("unexpected delimiter")
		}
	case string:
		if secretValue(t) {
			t = redacted
		}
		writeJSONString(out, t)
	case json.Number:
		out.WriteString(t.String())
	case bool:
		if t {
			out.WriteString("true")
		} else {
			out.WriteString("false")
		}
	case nil:
		out.WriteString("null")
	default:
		return errors.New("unexpected token")
	}
	return nil
}

// secretKey reports whether a member named key holds a secret.
func secretKey(key string) bool {
	k := strings.Map(func(r rune) rune {
		switch r {
		case '_', '-', '.', ' ':
			return -1
		}
		return r
	}, strings.ToLower(key))
	switch k {
	case "auth", "pwd", "pin":
		return true
	}
	if strings.HasSuffix(k, "key") {
		return true
	}
	if strings.Contains(k, "token") && !strings.HasSuffix(k, "tokens") {
		return true
	}
	for _, w := range []string{"password", "passwd", "passphrase", "secret", "authorization", "cookie", "bearer", "credential", "signature"} {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

// secretValue reports whether a string looks like an HTTP credential.
func secretValue(s string) bool {
	s = strings.TrimSpace(s)
	for _, p := range []string{"bearer ", "basic "} {
		if len(s) > len(p) && strings.EqualFold(s[:len(p)], p) {
			return true
		}
	}
	return false
}

// writeJSONString writes s as a JSON string without HTML escaping.
func writeJSONString(out *bytes.Buffer, s string) {
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)           // strings always encode
	out.Truncate(out.Len() - 1) // Encode appends a newline
}
