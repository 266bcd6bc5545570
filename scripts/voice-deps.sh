#!/usr/bin/env bash
# Voice in the client needs PortAudio's development files, pkg-config and a
# C compiler (cgo). Installs them when missing: apt as root, else sudo when
# there is a terminal to ask on. Never fails: without them `make build`
# builds the client without voice and says how to enable it.
pkgs="portaudio19-dev pkg-config gcc libc6-dev"
if pkg-config --exists portaudio-2.0 2>/dev/null && command -v gcc >/dev/null; then
	exit 0
fi
if ! command -v apt-get >/dev/null; then
	echo "voice: PortAudio not found; install its development files and pkg-config, then make build"
	exit 0
fi
sudo=()
if [ "$(id -u)" != 0 ]; then
	if ! command -v sudo >/dev/null || ! [ -t 0 ]; then
		echo "voice: PortAudio not installed; to enable voice: sudo apt-get install $pkgs && make build"
		exit 0
	fi
	echo "voice: installing $pkgs (sudo)"
	sudo=(sudo)
fi
if ! { "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $pkgs >/dev/null; }; then
	echo "voice: installing $pkgs failed; the client is built without voice (apt-get install $pkgs to enable it)"
fi
exit 0
