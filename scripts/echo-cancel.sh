#!/usr/bin/env bash
# The system echo canceller for mnemo's echo-cancel voice mode: loads
# PulseAudio's (or PipeWire's pulse server's) module-echo-cancel with the
# WebRTC canceller between the current default mic and speaker, and makes
# its source and sink the defaults, so every client (mnemo included) hears
# the mic without the speaker in it.
#
#   scripts/echo-cancel.sh        load it (again: nothing changes)
#   scripts/echo-cancel.sh off    unload it; the old defaults come back
#
# Gain control and noise suppression are off: mnemo's server-side VAD
# wants the mic as it is (the canceller's gain control turns it down
# ~28 dB). Measured on these machines: DESIGN.md, "Echo".
set -euo pipefail

command -v pactl >/dev/null || { echo "echo-cancel: pactl not found (apt-get install pulseaudio-utils)" >&2; exit 1; }
pactl info >/dev/null 2>&1 || { echo "echo-cancel: no PulseAudio/PipeWire server answers" >&2; exit 1; }

prev="${XDG_RUNTIME_DIR:-/tmp}/mnemo-echo-cancel.prev"
loaded() { pactl list short modules | awk '$2 == "module-echo-cancel" && /source_name=mnemo_aec_mic/ {print $1}'; }

if [ "${1:-}" = off ]; then
	for m in $(loaded); do pactl unload-module "$m"; done
	if [ -f "$prev" ]; then
		read -r src sink <"$prev" || true
		pactl set-default-source "$src" 2>/dev/null || true
		pactl set-default-sink "$sink" 2>/dev/null || true
		rm -f "$prev"
	fi
	echo "echo-cancel: off; default source $(pactl get-default-source), sink $(pactl get-default-sink)"
	exit 0
fi

if [ -z "$(loaded)" ]; then
	src=$(pactl get-default-source)
	sink=$(pactl get-default-sink)
	echo "$src $sink" >"$prev"
	pactl load-module module-echo-cancel \
		source_name=mnemo_aec_mic sink_name=mnemo_aec_spk \
		source_master="$src" sink_master="$sink" aec_method=webrtc \
		aec_args='"analog_gain_control=0 digital_gain_control=0 noise_suppression=0"' >/dev/null
fi
pactl set-default-source mnemo_aec_mic
pactl set-default-sink mnemo_aec_spk
echo "echo-cancel: on (mnemo_aec_mic, mnemo_aec_spk are the defaults); voice mode echo-cancel can be used; 'scripts/echo-cancel.sh off' undoes it"
