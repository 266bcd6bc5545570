//go:build speexdsp

package audio

// #cgo pkg-config: speexdsp
// #include <speex/speex_echo.h>
// #include <speex/speex_preprocess.h>
import "C"

import (
	"errors"
	"fmt"
	"sync"
	"time"
	"unsafe"
)

// SpeexCanceller is the in-process echo canceller candidate (libspeexdsp,
// build tag speexdsp): an adaptive filter that subtracts the speaker's
// signal from the mic, then speexdsp's preprocessor for the residual echo.
// It is kept for comparison and not used by the client: the system's
// canceller (EchoCancel mode, scripts/echo-cancel.sh) measured better on
// these machines (DESIGN.md, "Echo").
//
// The reference must be exactly the samples handed to the speaker, in
// lock-step with capture: each Process call takes one captured frame and
// the frame played at the same time.
type SpeexCanceller struct {
	mu   sync.Mutex
	echo *C.SpeexEchoState
	pre  *C.SpeexPreprocessState
}

// NewSpeexCanceller returns a canceller for 20 ms frames at SampleRate
// with a filter tail as long as tail (the room's echo plus the device
// round trip; 200 ms is plenty at a desk). With preprocess, speexdsp's
// residual echo suppressor (and denoiser) runs after the filter: far
// less echo, but it mangles the user talking over the agent.
func NewSpeexCanceller(tail time.Duration, preprocess bool) (*SpeexCanceller, error) {
	taps := samples(int(tail / time.Millisecond))
	if taps < FrameSamples {
		return nil, fmt.Errorf("audio: echo tail %v shorter than a frame", tail)
	}
	echo := C.speex_echo_state_init(C.int(FrameSamples), C.int(taps))
	if echo == nil {
		return nil, errors.New("audio: speex_echo_state_init failed")
	}
	rate := C.int(SampleRate)
	C.speex_echo_ctl(echo, C.SPEEX_ECHO_SET_SAMPLING_RATE, unsafe.Pointer(&rate))
	if !preprocess {
		return &SpeexCanceller{echo: echo}, nil
	}
	pre := C.speex_preprocess_state_init(C.int(FrameSamples), C.int(SampleRate))
	if pre == nil {
		C.speex_echo_state_destroy(echo)
		return nil, errors.New("audio: speex_preprocess_state_init failed")
	}
	C.speex_preprocess_ctl(pre, C.SPEEX_PREPROCESS_SET_ECHO_STATE, unsafe.Pointer(echo))
	return &SpeexCanceller{echo: echo, pre: pre}, nil
}

// Process cancels the echo of ref (the frame played) from mic (the frame
// captured at the same time) into out. All three are FrameSamples long;
// out may be mic.
func (s *SpeexCanceller) Process(mic, ref, out []int16) error {
	if len(mic) != FrameSamples || len(ref) != FrameSamples || len(out) != FrameSamples {
		return fmt.Errorf("audio: speex frames must be %d samples (got %d, %d, %d)", FrameSamples, len(mic), len(ref), len(out))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.echo == nil {
		return errors.New("audio: speex canceller closed")
	}
	var tmp [FrameSamples]int16
	C.speex_echo_cancellation(s.echo, (*C.spx_int16_t)(&mic[0]), (*C.spx_int16_t)(&ref[0]), (*C.spx_int16_t)(&tmp[0]))
	if s.pre != nil {
		C.speex_preprocess_run(s.pre, (*C.spx_int16_t)(&tmp[0]))
	}
	copy(out, tmp[:])
	return nil
}

// Close frees the C state.
func (s *SpeexCanceller) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.echo != nil {
		if s.pre != nil {
			C.speex_preprocess_state_destroy(s.pre)
		}
		C.speex_echo_state_destroy(s.echo)
		s.echo, s.pre = nil, nil
	}
}
