//go:build portaudio || speexdsp

package audio

import (
	"bytes"
	"encoding/binary"
	"os"
	"os/exec"
	"testing"
)

// speech is text spoken by espeak-ng, resampled by sox to 24 kHz int16
// mono: real speech for the echo and session tests. Without the tools the
// test skips, unless MNEMO_AUDIO_REQUIRED is set (make test-audio).
func speech(t testing.TB, voice, text string) []int16 {
	t.Helper()
	for _, tool := range []string{"espeak-ng", "sox"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("MNEMO_AUDIO_REQUIRED") != "" {
				t.Fatalf("%s is not installed: run scripts/audio-setup.sh", tool)
			}
			t.Skipf("%s is not installed (scripts/audio-setup.sh installs it)", tool)
		}
	}
	wav, err := exec.Command("espeak-ng", "-v", voice, "-s", "170", "--stdout", text).Output()
	if err != nil {
		t.Fatalf("espeak-ng: %v", err)
	}
	cmd := exec.Command("sox", "-t", "wav", "-", "-t", "raw", "-r", "24000", "-c", "1", "-e", "signed", "-b", "16", "-L", "-")
	cmd.Stdin = bytes.NewReader(wav)
	raw, err := cmd.Output()
	if err != nil {
		t.Fatalf("sox: %v", err)
	}
	out := make([]int16, len(raw)/2)
	for i := range out {
		out[i] = int16(binary.LittleEndian.Uint16(raw[2*i:]))
	}
	return out
}

// energy is the sum of squares of s.
func energy(s []int16) float64 {
	var e float64
	for _, v := range s {
		e += float64(v) * float64(v)
	}
	return e
}
