#!/usr/bin/env bash
# Virtual audio devices for the PortAudio tests (make test-audio), on a
# headless Debian 12 machine: no sound card, no systemd, maybe root.
#
# Installs what is missing (portaudio19-dev pkg-config pulseaudio
# pulseaudio-utils espeak-ng sox; apt as root, else sudo), then makes sure a
# PulseAudio daemon answers on $XDG_RUNTIME_DIR/pulse/native with two null
# sinks at 24 kHz mono:
#   spk  what the client plays (default sink); record it from spk.monitor
#   mic  what the client hears: play speech into it; mic.monitor is the
#        default source
# A daemon already answering there is reused (the sinks are added if
# missing); otherwise one is started and its pid kept in
# $XDG_RUNTIME_DIR/mnemo-pulse.pid, and `audio-setup.sh stop` stops it (that
# daemon only: a sound server the user runs elsewhere is never touched).
#
# Clients must use the same runtime dir: export
#   XDG_RUNTIME_DIR=<dir> PULSE_SERVER=unix:<dir>/pulse/native
# (scripts/audio-test.sh does, with a fresh dir per run). Default dir:
# /tmp/mnemo-audio.
#
# MNEMO_AUDIO_NO_INSTALL=1: install nothing; fail if something is missing.
set -euo pipefail

export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp/mnemo-audio}
export PULSE_SERVER="unix:$XDG_RUNTIME_DIR/pulse/native"
ours="$XDG_RUNTIME_DIR/mnemo-pulse.pid"

if [ "${1:-}" = stop ]; then
	[ -f "$ours" ] || exit 0
	pid=$(cat "$ours")
	# Only the daemon this script started, and only if it still is one.
	if [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = pulseaudio ]; then
		kill "$pid"
		for _ in $(seq 100); do [ -e "/proc/$pid" ] || break; sleep 0.05; done
	fi
	rm -f "$ours"
	exit 0
fi

missing=()
for cmd in pkg-config pulseaudio pactl paplay parec espeak-ng sox; do
	command -v "$cmd" >/dev/null || missing+=("$cmd")
done
if ! pkg-config --exists portaudio-2.0 2>/dev/null; then missing+=(portaudio); fi
if ((${#missing[@]})) && [ -n "${MNEMO_AUDIO_NO_INSTALL:-}" ]; then
	echo "audio-setup: missing ${missing[*]}" >&2
	exit 1
fi
if ((${#missing[@]})); then
	echo "audio-setup: missing ${missing[*]}: installing"
	sudo=()
	if [ "$(id -u)" != 0 ]; then
		command -v sudo >/dev/null || { echo "audio-setup: run as root or install: apt-get install portaudio19-dev pkg-config pulseaudio pulseaudio-utils espeak-ng sox" >&2; exit 1; }
		sudo=(sudo)
	fi
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		portaudio19-dev pkg-config pulseaudio pulseaudio-utils espeak-ng sox >/dev/null
fi

mkdir -p -m 700 "$XDG_RUNTIME_DIR"

# norewinds=1: without it an idle null sink's monitor delivers its first
# data seconds late and swallows the start of each new stream.
sinks=(
	"module-null-sink sink_name=spk rate=24000 channels=1 norewinds=1"
	"module-null-sink sink_name=mic rate=24000 channels=1 norewinds=1"
)

if ! pactl info >/dev/null 2>&1; then
	conf="$XDG_RUNTIME_DIR/mnemo.pa"
	{
		echo "load-module module-native-protocol-unix auth-anonymous=1"
		for s in "${sinks[@]}"; do echo "load-module $s"; done
	} >"$conf"
	# -n: only our configuration (no udev, no suspend-on-idle);
	# --exit-idle-time=-1: stay up between test runs.
	# As root PulseAudio warns it is not meant to run as root: harmless here.
	# --disable-shm=yes: PulseAudio 16.1 forwarding a client's memfd block
	# to a recorder (parec on spk.monitor) logs "Cannot send block
	# reference with non-registered memfd ID" (its issue 824) and, under
	# load, later aborted on an assertion in memblock_free: the daemon
	# vanished mid-test. With POSIX shared memory instead each client maps
	# and unmaps the daemon's 64 MB pool per capture buffer. Audio over the
	# socket cost the client no more here (idle streams, A/B).
	# Its state (and its cookie) in the runtime dir too: two runs side by
	# side as root must not share ~/.config/pulse.
	mkdir -p "$XDG_RUNTIME_DIR/state"
	PULSE_STATE_PATH="$XDG_RUNTIME_DIR/state" PULSE_CONFIG_PATH="$XDG_RUNTIME_DIR/state" \
		pulseaudio --daemonize=yes -n --file="$conf" --exit-idle-time=-1 --disable-shm=yes \
		--log-target=file:"$XDG_RUNTIME_DIR/pulse.log"
	for _ in $(seq 100); do pactl info >/dev/null 2>&1 && break; sleep 0.05; done
	pactl info >/dev/null || { echo "audio-setup: PulseAudio did not start; see $XDG_RUNTIME_DIR/pulse.log" >&2; exit 1; }
	cp "$XDG_RUNTIME_DIR/pulse/pid" "$ours"
else
	for s in "${sinks[@]}"; do
		name=${s#*sink_name=}; name=${name%% *}
		pactl list short sinks | awk '{print $2}' | grep -qx "$name" || pactl load-module $s >/dev/null
	done
fi
pactl set-default-sink spk
pactl set-default-source mic.monitor
pactl info | grep -E '^Default (Sink|Source)'
