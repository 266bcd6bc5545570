package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

const secretValue = "xai-SECRET-0123456789abcdef"

// TestSecretNeverRevealed: no fmt verb, JSON, slog handler or Print shows
// a secret, alone or inside a Config.
func TestSecretNeverRevealed(t *testing.T) {
	s := NewSecret(secretValue)
	c, err, _ := fixture{env: map[string]string{
		"XAI_API_KEY": secretValue, "APP_AUTH_TOKEN": secretValue, "MNEMO_QDRANT_API_KEY": secretValue,
		"MNEMO_EMBED_API_KEY": secretValue, "ANTHROPIC_API_KEY": secretValue, "OPENAI_API_KEY": secretValue,
	}}.load(t)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	outputs := map[string]string{}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%T %v"} {
		outputs["Secret "+verb] = fmt.Sprintf(verb, s)
		outputs["Config "+verb] = fmt.Sprintf(verb, *c)
		outputs["*Config "+verb] = fmt.Sprintf(verb, c)
	}
	outputs["Sprint"] = fmt.Sprint(s, c.Model.XAIKey)
	outputs["String"] = s.String()
	for name, v := range map[string]any{"secret": s, "setting": c.AuthToken, "config": c} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("json.Marshal(%s): %v", name, err)
		}
		outputs["json "+name] = string(b)
	}
	var text, js bytes.Buffer
	for _, h := range []slog.Handler{slog.NewTextHandler(&text, nil), slog.NewJSONHandler(&js, nil)} {
		slog.New(h).Info("config", "secret", s, "setting", c.AuthToken, "config", c, "model", c.Model)
	}
	outputs["slog text"], outputs["slog json"] = text.String(), js.String()
	var printed bytes.Buffer
	c.Print(&printed)
	outputs["Print"] = printed.String()

	for name, out := range outputs {
		if strings.Contains(out, "SECRET") || strings.Contains(out, fmt.Sprintf("%x", secretValue)) || strings.Contains(out, fmt.Sprintf("%X", secretValue)) {
			t.Errorf("%s reveals the secret: %s", name, out)
		}
	}
	if !strings.Contains(outputs["Secret %v"], "[redacted]") || !strings.Contains(outputs["json secret"], "[redacted]") || !strings.Contains(outputs["slog text"], "[redacted]") {
		t.Errorf("a set secret should read [redacted]: %q, %q, %q", outputs["Secret %v"], outputs["json secret"], outputs["slog text"])
	}
	if s.Reveal() != secretValue || !s.IsSet() || (Secret{}).IsSet() || (Secret{}).String() != "" {
		t.Error("Reveal, IsSet or String of the zero Secret is wrong")
	}
}
