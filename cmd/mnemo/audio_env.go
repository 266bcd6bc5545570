package main

import (
	"fmt"
	"strings"

	"github.com/mnemo/mnemo/voice/audio"
)

// voiceEcho reads MNEMO_VOICE_ECHO, the echo mode voice starts in:
// "speakers" (half duplex, the default) or "headphones" (full duplex).
func voiceEcho(getenv func(string) string) (audio.Mode, error) {
	switch v := strings.ToLower(strings.TrimSpace(getenv("MNEMO_VOICE_ECHO"))); v {
	case "", "speakers", "half", "half_duplex":
		return audio.HalfDuplex, nil
	case "headphones", "full", "full_duplex":
		return audio.FullDuplex, nil
	default:
		return audio.HalfDuplex, fmt.Errorf("MNEMO_VOICE_ECHO=%q: use speakers or headphones", v)
	}
}
