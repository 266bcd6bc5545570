#!/usr/bin/env bash
# The device tests of voice/audio, each on both backends (PulseAudio's
# protocol and PortAudio: build tag portaudio; speexdsp too when
# libspeexdsp-dev is there) against a PulseAudio daemon of their own, with
# null sinks as speaker and mic (scripts/audio-setup.sh). The daemon runs in
# a fresh runtime dir and is stopped when the tests end: a sound server the
# user runs is never touched.
#
# MNEMO_AUDIO_REQUIRED=1 (CI, make test-audio): installs what is missing
#   (audio-setup.sh) and fails if anything is missing or PulseAudio does
#   not start.
# Otherwise (make test on a dev machine): runs them when the tools are
#   installed and PulseAudio starts; else says why it skips them, and
#   succeeds.
# Extra arguments go to go test (e.g. -run TestBargeIn -v).
set -uo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
required=${MNEMO_AUDIO_REQUIRED:-}

skip() {
	echo "== audio tests SKIPPED: $*"
	echo "   (make test-audio installs what they need and runs them; CI runs them)"
	exit 0
}

if [ -z "$required" ]; then
	missing=()
	for cmd in pkg-config pulseaudio pactl pacat parec espeak-ng sox gcc; do
		command -v "$cmd" >/dev/null || missing+=("$cmd")
	done
	pkg-config --exists portaudio-2.0 2>/dev/null || missing+=(portaudio19-dev)
	((${#missing[@]} == 0)) || skip "missing ${missing[*]}"
	export MNEMO_AUDIO_NO_INSTALL=1
fi

dir=$(mktemp -d /tmp/mnemo-audio.XXXXXX)
export XDG_RUNTIME_DIR=$dir PULSE_SERVER=unix:$dir/pulse/native
cleanup() {
	scripts/audio-setup.sh stop
	rm -rf "$dir"
}
trap cleanup EXIT

if ! out=$(scripts/audio-setup.sh 2>&1); then
	echo "$out"
	[ -f "$dir/pulse.log" ] && tail -n 20 "$dir/pulse.log"
	if [ -n "$required" ]; then
		echo "== audio tests FAILED: PulseAudio could not be set up (MNEMO_AUDIO_REQUIRED is set)" >&2
		exit 1
	fi
	skip "PulseAudio did not start"
fi
echo "$out"

tags=portaudio
pkg-config --exists speexdsp 2>/dev/null && tags="portaudio speexdsp"
echo "== audio tests: -tags '$tags' against PulseAudio in $dir"
# checkptr (on with -race) is off: two PortAudio streams trip it inside
# the binding. MNEMO_AUDIO_RACE= (empty) runs without the race detector,
# for measurements (make bench-voice).
race=(-race -gcflags=all=-d=checkptr=0)
[ -n "${MNEMO_AUDIO_RACE-x}" ] || race=()
MNEMO_AUDIO_REQUIRED=1 $GO test -tags "$tags" "${race[@]}" -count=1 -timeout 10m "$@" ./voice/audio/... || exit 1
# The client's desk on the same devices, and the client built with audio
# (only in a plain run: extra arguments select benchmarks or tests of
# voice/audio).
if (($# == 0)); then
	MNEMO_AUDIO_REQUIRED=1 $GO test -tags "$tags" "${race[@]}" -count=1 -timeout 10m \
		-run 'TestDeskOnDevices|TestAudioBuild|TestVoiceEcho' ./cmd/mnemo/ || exit 1
fi
