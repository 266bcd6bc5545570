package audio

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestPulseServers(t *testing.T) {
	for _, tt := range []struct {
		name string
		env  map[string]string
		want []string
	}{
		{"nothing set", nil, nil},
		{"runtime dir", map[string]string{"XDG_RUNTIME_DIR": "/run/user/1000/"}, []string{"unix:/run/user/1000/pulse/native"}},
		{"PULSE_SERVER wins", map[string]string{"PULSE_SERVER": "unix:/tmp/a/native", "XDG_RUNTIME_DIR": "/run/user/1000"}, []string{"unix:/tmp/a/native"}},
		{"bare path", map[string]string{"PULSE_SERVER": "/tmp/a/native"}, []string{"unix:/tmp/a/native"}},
		{"several, host prefix dropped", map[string]string{"PULSE_SERVER": "{box}unix:/x tcp:10.0.0.2 tcp6:[::1]:4000 tcp4:h:1"},
			[]string{"unix:/x", "tcp:10.0.0.2:4713", "tcp6:[::1]:4000", "tcp4:h:1"}},
		{"bare host", map[string]string{"PULSE_SERVER": "soundbox"}, []string{"tcp:soundbox:4713"}},
		{"junk skipped", map[string]string{"PULSE_SERVER": "unix: ftp:x {broken"}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := PulseServers(envOf(tt.env)); !slices.Equal(got, tt.want) {
				t.Errorf("PulseServers = %q, want %q", got, tt.want)
			}
		})
	}
}

// listen serves a unix socket at dir/pulse/native that accepts and says
// nothing: it answers, as a server's socket does.
func listen(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "pulse"), 0o700); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", filepath.Join(dir, "pulse", "native"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
}

// stale leaves a socket file at dir/pulse/native that nobody listens on:
// a server that died.
func stale(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "pulse"), 0o700); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", filepath.Join(dir, "pulse", "native"))
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
}

// TestChooseBackend: auto is pulse when the server's socket answers,
// PortAudio when it does not (or, without PortAudio, an error saying
// both); an explicit choice is kept or refused with the reason.
func TestChooseBackend(t *testing.T) {
	for _, tt := range []struct {
		name      string
		setup     func(t *testing.T, dir string) // the runtime dir
		pulseEnv  bool                           // PULSE_SERVER names the socket (else XDG_RUNTIME_DIR finds it)
		want      Backend
		havePA    bool
		wantErr   string
		wantPulse Backend
	}{
		{name: "auto, socket answers", setup: listen, want: BackendAuto, havePA: true, wantPulse: BackendPulse},
		{name: "auto, PULSE_SERVER answers", setup: listen, pulseEnv: true, want: BackendAuto, havePA: true, wantPulse: BackendPulse},
		{name: "auto, no socket", want: BackendAuto, havePA: true, wantPulse: BackendPortAudio},
		{name: "auto, stale socket", setup: stale, want: BackendAuto, havePA: true, wantPulse: BackendPortAudio},
		{name: "auto, stale, no PortAudio", setup: stale, want: BackendAuto, wantErr: "no PulseAudio server answers"},
		{name: "pulse, answers", setup: listen, want: BackendPulse, wantPulse: BackendPulse},
		{name: "pulse, none", want: BackendPulse, havePA: true, wantErr: "audio backend pulse: no PulseAudio server answers"},
		{name: "portaudio", setup: listen, want: BackendPortAudio, havePA: true, wantPulse: BackendPortAudio},
		{name: "portaudio, not built", setup: listen, want: BackendPortAudio, wantErr: "built without PortAudio"},
		{name: "unknown", want: "alsa", havePA: true, wantErr: `"alsa"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir, err := os.MkdirTemp("", "vp") // short: a socket path has at most 107 bytes
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			if tt.setup != nil {
				tt.setup(t, dir)
			}
			sock := filepath.Join(dir, "pulse", "native")
			env := map[string]string{"XDG_RUNTIME_DIR": dir}
			if tt.pulseEnv {
				env = map[string]string{"PULSE_SERVER": "unix:" + sock}
			}
			got, server, err := ChooseBackend(t.Context(), tt.want, envOf(env), tt.havePA)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ChooseBackend = %q, %v; want an error with %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.wantPulse {
				t.Fatalf("ChooseBackend = %q, %v; want %q", got, err, tt.wantPulse)
			}
			if wantServer := map[bool]string{true: "unix:" + sock}[got == BackendPulse]; server != wantServer {
				t.Errorf("server %q, want %q", server, wantServer)
			}
		})
	}
}

func TestProbePulseNoEnvironment(t *testing.T) {
	_, err := ProbePulse(t.Context(), envOf(nil))
	if !errors.Is(err, ErrNoPulse) || !strings.Contains(err.Error(), "XDG_RUNTIME_DIR") {
		t.Errorf("ProbePulse = %v, want ErrNoPulse naming what to set", err)
	}
}

func TestParseBackend(t *testing.T) {
	for in, want := range map[string]Backend{"": BackendAuto, "auto": BackendAuto, "pulse": BackendPulse, "portaudio": BackendPortAudio} {
		if got, err := ParseBackend(in); got != want || err != nil {
			t.Errorf("ParseBackend(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseBackend("jack"); err == nil {
		t.Error(`ParseBackend("jack") accepted`)
	}
}

func TestPickPulse(t *testing.T) {
	devs := []pulseDevice{
		{name: "alsa_output.usb-Jabra_Speak_510-00.analog-stereo", desc: "Jabra SPEAK 510 Analog Stereo"},
		{name: "alsa_output.pci-0000_00_1f.3.analog-stereo", desc: "Built-in Audio Analog Stereo"},
		{name: "spk", desc: "Null Output"},
	}
	for _, tt := range []struct {
		name, want, wantErr string
	}{
		{"", "", ""},
		{"spk", "spk", ""},
		{"jabra", "alsa_output.usb-Jabra_Speak_510-00.analog-stereo", ""}, // by name, any case
		{"built-in", "alsa_output.pci-0000_00_1f.3.analog-stereo", ""},    // by description
		{"analog", "", "ambiguous"},
		{"hdmi", "", `no output (sink) device named "hdmi" (PulseAudio has: `},
	} {
		got, err := pickPulse(devs, tt.name, false)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("pickPulse(%q) = %q, %v; want an error with %q", tt.name, got, err, tt.wantErr)
			}
			continue
		}
		if got != tt.want || err != nil {
			t.Errorf("pickPulse(%q) = %q, %v; want %q", tt.name, got, err, tt.want)
		}
	}
}

// FuzzPulseServers: any PULSE_SERVER gives server strings that name a
// network and an address, and normalising one again changes nothing.
func FuzzPulseServers(f *testing.F) {
	for _, s := range []string{"unix:/x", "/run/pulse/native", "{h}tcp:a:1 tcp6:[::1]", "tcp:", "{", "a b c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, env string) {
		for _, s := range PulseServers(envOf(map[string]string{"PULSE_SERVER": env})) {
			network, addr := serverAddr(s)
			if addr == "" || !slices.Contains([]string{"unix", "tcp", "tcp4", "tcp6"}, network) {
				t.Fatalf("server %q: network %q addr %q", s, network, addr)
			}
			if again, ok := normServer(s); !ok || again != s {
				t.Fatalf("normServer(%q) = %q, %v", s, again, ok)
			}
		}
	})
}
