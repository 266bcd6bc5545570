package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mnemo/mnemo/ipc"
	"github.com/mnemo/mnemo/tui/voicectl"
)

// A healthy fake machine: a token, a hearth of the same version with a
// provider and ready recall, a root under git with a sound journal, room
// on disk and a sane clock.
func healthyEnv(t *testing.T) doctorEnv {
	root := t.TempDir()
	for _, d := range []string{".git", "threads"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(root, "threads", "2026-11-01.jsonl"), "{\"id\":\"a\"}\n{\"id\":\"b\"}\n")
	return doctorEnv{
		clientVersion: "v1.2.0",
		token:         func() (string, error) { return "tok", nil },
		health: func(context.Context, string) (*ipc.HealthReport, *ipc.History, error) {
			return &ipc.HealthReport{Provider: "openai", Model: "m", Index: &ipc.IndexHealth{Backend: "embedded", Embedder: "wordvec", Ready: true}, Time: time.Now()},
				&ipc.History{Server: "hearth/v1.2.0"}, nil
		},
		root: root,
		gw:   filepath.Join(root, "none", "gateway.json"),
		free: func(string) (uint64, error) { return 10 << 30, nil },
		now:  func() time.Time { return time.Now() },
	}
}

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestDoctor(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, e *doctorEnv)
		want   []string // substrings of the output; "" for all good
		fail   bool
	}{
		{"all good", nil, []string{"all good", "2 record(s) in 1 file(s)", "no MCP servers"}, false},
		{"tls pinned", func(t *testing.T, e *doctorEnv) {
			home := t.TempDir()
			t.Setenv("XDG_CONFIG_HOME", home)
			k := &ipc.KnownHearths{Path: filepath.Join(home, "mnemo", "known_hearths")}
			if _, err := k.Check("10.0.0.5:7744", "sha256:ab12"); err != nil {
				t.Fatal(err)
			}
			e.tls = func() string { return tlsLine("tls://10.0.0.5:7744") }
		}, []string{"ok   tls      10.0.0.5:7744 pinned as sha256:ab12", "all good"}, false},
		{"tls not pinned yet", func(t *testing.T, e *doctorEnv) {
			t.Setenv("XDG_CONFIG_HOME", t.TempDir())
			e.tls = func() string { return tlsLine("tls://10.0.0.5:7744") }
		}, []string{"no certificate pinned yet"}, false},
		{"no token", func(t *testing.T, e *doctorEnv) {
			e.token = func() (string, error) { return "", ipc.ErrNoToken }
		}, []string{"FAIL token", "fix: start hearth once"}, true},
		{"hearth down", func(t *testing.T, e *doctorEnv) {
			e.health = func(context.Context, string) (*ipc.HealthReport, *ipc.History, error) {
				return nil, nil, errors.New("connection refused")
			}
		}, []string{"FAIL hearth", "unreachable", "ok   memory"}, true},
		{"versions differ", func(t *testing.T, e *doctorEnv) { e.clientVersion = "v1.3.0" }, []string{"FAIL hearth", "versions differ"}, true},
		{"no provider", func(t *testing.T, e *doctorEnv) {
			h := e.health
			e.health = func(ctx context.Context, tok string) (*ipc.HealthReport, *ipc.History, error) {
				r, hist, err := h(ctx, tok)
				r.Provider = ""
				return r, hist, err
			}
		}, []string{"FAIL model", "Configure a model"}, true},
		{"recall lexical for want of vectors", func(t *testing.T, e *doctorEnv) {
			e.health = func(context.Context, string) (*ipc.HealthReport, *ipc.History, error) {
				return &ipc.HealthReport{Provider: "x", Index: &ipc.IndexHealth{Backend: "embedded", Embedder: "none (lexical only)", Ready: true, Note: "no word vectors at /c/v.bin"}},
					&ipc.History{Server: "hearth/v1.2.0"}, nil
			}
		}, []string{"FAIL recall", "/c/v.bin", "make vectors"}, true},
		{"qdrant unreachable", func(t *testing.T, e *doctorEnv) {
			e.health = func(context.Context, string) (*ipc.HealthReport, *ipc.History, error) {
				return &ipc.HealthReport{Provider: "x", Index: &ipc.IndexHealth{Backend: "qdrant", Unavailable: true, Failing: "retrying"}},
					&ipc.History{Server: "hearth/v1.2.0"}, nil
			}
		}, []string{"FAIL recall", "qdrant index is unavailable", "MNEMO_QDRANT_ADDR"}, true},
		{"root not under git", func(t *testing.T, e *doctorEnv) { os.RemoveAll(filepath.Join(e.root, ".git")) }, []string{"FAIL memory", "not under git"}, true},
		{"no root", func(t *testing.T, e *doctorEnv) { e.root = filepath.Join(e.root, "missing") }, []string{"FAIL memory", "start hearth once"}, true},
		{"torn and corrupt lines counted", func(t *testing.T, e *doctorEnv) {
			writeFile(t, filepath.Join(e.root, "threads", "2026-11-02.jsonl"), "{\"id\":\"c\"}\nnot json\n{\"id\":\"d\"")
		}, []string{"FAIL journal", "3 record(s) in 2 file(s), 2 damaged line(s)"}, true},
		{"gateway counted", func(t *testing.T, e *doctorEnv) {
			e.gw = filepath.Join(e.root, "gateway.json")
			writeFile(t, e.gw, `{"servers":[{"name":"a"},{"name":"b"}]}`)
		}, []string{"ok   tools", "2 MCP server(s)", "all good"}, false},
		{"gateway broken", func(t *testing.T, e *doctorEnv) {
			e.gw = filepath.Join(e.root, "gateway.json")
			writeFile(t, e.gw, `{"servers":[`)
		}, []string{"FAIL tools", "does not parse"}, true},
		{"disk nearly full", func(t *testing.T, e *doctorEnv) { e.free = func(string) (uint64, error) { return 10 << 20, nil } }, []string{"FAIL disk", "10 MiB free"}, true},
		{"config invalid", func(t *testing.T, e *doctorEnv) { e.config = errors.New("MNEMO_PROVIDER: unknown provider") },
			[]string{"FAIL config", "MNEMO_PROVIDER", "hearth config"}, true},
		{"disk under 1 GiB warns", func(t *testing.T, e *doctorEnv) { e.free = func(string) (uint64, error) { return 512 << 20, nil } },
			[]string{"warn disk", "512 MiB free", "less than 1 GiB", "fix: free some space", "all good"}, false},
		{"hearth's clock 5s ahead warns", func(t *testing.T, e *doctorEnv) {
			e.health = withTime(e.health, func(time.Time) time.Time { return time.Now().Add(5 * time.Second) })
		},
			[]string{"warn skew", "hearth's clock is 5", "timedatectl", "all good"}, false},
		{"hearth's clock close enough", func(t *testing.T, e *doctorEnv) {
			e.health = withTime(e.health, func(time.Time) time.Time { return time.Now().Add(time.Second) })
		},
			[]string{"ok   skew", "all good"}, false},
		{"an older hearth says no time", func(t *testing.T, e *doctorEnv) {
			e.health = withTime(e.health, func(time.Time) time.Time { return time.Time{} })
		},
			[]string{"ok   skew", "older hearth"}, false},
		{"MCP servers reached, missed and disabled", func(t *testing.T, e *doctorEnv) {
			e.gw = filepath.Join(e.root, "gateway.json")
			writeFile(t, e.gw, `{"servers":[{"label":"web","url":"https://user:pw@mcp.example/x?key=s3cret"},{"label":"fs","command":"no-such-mcp"},{"label":"off","command":"x","disabled":true},{"url":"http://127.0.0.1:1/mcp"}]}`)
			e.reach = func(_ context.Context, s gatewayServer) error {
				if s.Label == "web" {
					return nil
				}
				if s.URL != "" {
					return errors.New("connection refused")
				}
				return errors.New("command no-such-mcp not found")
			}
		}, []string{"ok   tools", "4 MCP server(s)", "MCP server web: https://mcp.example/x answers", "FAIL tools", "MCP server fs: command no-such-mcp not found", "fix: install its command",
			"MCP server #4: http://127.0.0.1:1/mcp does not answer: connection refused"}, true},
		{"voice not built in", nil, []string{"ok   audio", "voice is not built into this mnemo"}, false},
		{"audio devices", func(t *testing.T, e *doctorEnv) {
			e.audio = func(context.Context) ([]voicectl.Device, error) {
				return []voicectl.Device{{Name: "mic", Inputs: 1, DefaultInput: true}, {Name: "spk", Outputs: 2, DefaultOutput: true}}, nil
			}
		}, []string{"ok   audio", `1 input and 1 output device(s); default in "mic", out "spk"`, "all good"}, false},
		{"no microphone warns", func(t *testing.T, e *doctorEnv) {
			e.audio = func(context.Context) ([]voicectl.Device, error) {
				return []voicectl.Device{{Name: "spk", Outputs: 2}}, nil
			}
		}, []string{"warn audio", "0 input and 1 output", "fix: voice needs a microphone", "all good"}, false},
		{"no sound server", func(t *testing.T, e *doctorEnv) {
			e.audio = func(context.Context) ([]voicectl.Device, error) { return nil, errors.New("portaudio: no host") }
		}, []string{"FAIL audio", "portaudio: no host", "sound server"}, true},
		{"the backend is named", func(t *testing.T, e *doctorEnv) {
			e.audio = func(context.Context) ([]voicectl.Device, error) {
				return []voicectl.Device{{Name: "mic.monitor", Inputs: 1, DefaultInput: true}, {Name: "spk", Outputs: 1, DefaultOutput: true}}, nil
			}
			e.audioBackend = func(context.Context) (string, error) { return "pulse (unix:/run/user/1000/pulse/native)", nil }
		}, []string{"ok   audio", `backend pulse (unix:/run/user/1000/pulse/native); 1 input and 1 output device(s)`, "all good"}, false},
		{"the backend refused", func(t *testing.T, e *doctorEnv) {
			e.audio = func(context.Context) ([]voicectl.Device, error) { return nil, nil }
			e.audioBackend = func(context.Context) (string, error) {
				return "", errors.New("audio backend pulse: no PulseAudio server answers at unix:/x")
			}
		}, []string{"FAIL audio", "no PulseAudio server answers", "fix: MNEMO_AUDIO_BACKEND"}, true},
		{"clock went back", func(t *testing.T, e *doctorEnv) {
			e.now = func() time.Time { return time.Now().Add(-2 * time.Hour) }
			e.health = withTime(e.health, func(time.Time) time.Time { return time.Now().Add(-2 * time.Hour) })
		}, []string{"FAIL clock", "before the journal's last write"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := healthyEnv(t)
			if tc.change != nil {
				tc.change(t, &env)
			}
			var out bytes.Buffer
			err := doctor(t.Context(), env, &out)
			if (err != nil) != tc.fail {
				t.Errorf("err = %v, want failure %v\n%s", err, tc.fail, out.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
			if exitCode(err) != 1 && tc.fail {
				t.Errorf("exit code %d, want 1", exitCode(err))
			}
		})
	}
}

// withTime makes health's report say hearth's clock is at(its time).
func withTime(health func(context.Context, string) (*ipc.HealthReport, *ipc.History, error), at func(time.Time) time.Time) func(context.Context, string) (*ipc.HealthReport, *ipc.History, error) {
	return func(ctx context.Context, tok string) (*ipc.HealthReport, *ipc.History, error) {
		r, hist, err := health(ctx, tok)
		if r != nil {
			r.Time = at(r.Time)
		}
		return r, hist, err
	}
}

var update = flag.Bool("update", false, "rewrite testdata/doctor.golden")

// TestDoctorGolden: the whole report of a machine with a warning and a
// failure of each kind, on a fixed clock, as the owner reads it.
func TestDoctorGolden(t *testing.T) {
	env := healthyEnv(t)
	at := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	tick := at
	env.now = func() time.Time { tick = tick.Add(10 * time.Millisecond); return tick }
	os.Chtimes(filepath.Join(env.root, "threads", "2026-11-01.jsonl"), at.Add(-time.Hour), at.Add(-time.Hour))
	env.health = withTime(env.health, func(time.Time) time.Time { return at.Add(3 * time.Second) })
	env.free = func(string) (uint64, error) { return 700 << 20, nil }
	env.gw = filepath.Join(env.root, "gateway.json")
	writeFile(t, env.gw, `{"servers":[{"label":"web","url":"http://127.0.0.1:9/mcp"},{"label":"fs","command":"mcp-fs"}]}`)
	env.reach = func(_ context.Context, s gatewayServer) error {
		if s.URL != "" {
			return errors.New("connection refused")
		}
		return nil
	}
	env.audio = func(context.Context) ([]voicectl.Device, error) {
		return []voicectl.Device{{Name: "Built-in Audio", Inputs: 2, Outputs: 2, DefaultInput: true, DefaultOutput: true}}, nil
	}
	var out bytes.Buffer
	if err := doctor(t.Context(), env, &out); err == nil {
		t.Error("doctor passed with an MCP server down")
	}
	got := strings.ReplaceAll(out.String(), env.root, "$ROOT")
	path := filepath.Join("testdata", "doctor.golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -run TestDoctorGolden -args -update writes it)", err)
	}
	if got != string(want) {
		t.Errorf("doctor output:\n%s\nwant:\n%s", got, want)
	}
}

// reachServer against a real loopback server and a closed port, and a
// command looked up on PATH; the error never shows the url's key.
func TestReachServer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusMethodNotAllowed) }))
	defer srv.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()
	reach := reachServer(srv.Client(), func(k string) string { return map[string]string{"KEY": "s3cret"}[k] })
	for _, tc := range []struct {
		s    gatewayServer
		fail bool
	}{
		{gatewayServer{URL: srv.URL + "/mcp?key=${KEY}"}, false}, // any answer is an answer
		{gatewayServer{URL: closedURL + "/mcp?key=${KEY}"}, true},
		{gatewayServer{Command: "sh"}, false},
		{gatewayServer{Command: "no-such-command-mnemo"}, true},
		{gatewayServer{}, true},
	} {
		err := reach(t.Context(), tc.s)
		if (err != nil) != tc.fail {
			t.Errorf("reach(%+v) = %v, want failure %v", tc.s, err, tc.fail)
		}
		if err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("reach error shows the key: %v", err)
		}
	}
}

// TestDoctorProvider: with --provider, doctor reports hearth's check of
// the model provider, each failure with its fix.
func TestDoctorProvider(t *testing.T) {
	for _, tc := range []struct {
		name string
		st   *ipc.ProviderStatus
		err  error
		want []string
		fail bool
	}{
		{"answers", &ipc.ProviderStatus{OK: true, Provider: "openai", Model: "m", LatencyMS: 412}, nil,
			[]string{"ok   model    openai m answered in 412 ms", "all good"}, false},
		{"no key", &ipc.ProviderStatus{Category: "no_provider", Problem: "no model provider is configured: set XAI_API_KEY or ANTHROPIC_API_KEY"}, nil,
			[]string{"FAIL model", "set XAI_API_KEY", "fix: set a provider and its key"}, true},
		{"key refused", &ipc.ProviderStatus{Provider: "openai", Model: "m", Category: "rejected_key", Problem: "the model provider rejected the API key (HTTP 401) — set OPENAI_API_KEY to a valid key"}, nil,
			[]string{"FAIL model    openai m: the model provider rejected the API key (HTTP 401)", "fix: set OPENAI_API_KEY to a valid key"}, true},
		{"unreachable", &ipc.ProviderStatus{Provider: "openai", Model: "m", Category: "unreachable", Problem: "the model provider is unreachable (connection refused); tried 3 times — check OPENAI_BASE_URL (model.openai_base_url) and the network"}, nil,
			[]string{"FAIL model", "unreachable (connection refused)", "fix: check OPENAI_BASE_URL"}, true},
		{"model unknown", &ipc.ProviderStatus{Provider: "openai", Model: "nope", Category: "model_unknown", Problem: `the model provider does not know the model "nope" (HTTP 404) — set MNEMO_MODEL (model.name) to a model it serves`}, nil,
			[]string{"FAIL model", `does not know the model "nope"`, "fix: set MNEMO_MODEL"}, true},
		{"not the owner", nil, &ipc.Error{Code: ipc.CodeForbidden, Message: "only the owner may check the model provider", Ref: "doctor"},
			[]string{"FAIL model", "not the owner", "fix: run doctor --provider with hearth's own token"}, true},
		{"an older hearth", nil, &ipc.Error{Code: ipc.CodeUnknownType, Message: `unknown message type "provider_check"`},
			[]string{"FAIL model", "older than this mnemo"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := healthyEnv(t)
			e.provider = func(context.Context, string) (*ipc.ProviderStatus, error) { return tc.st, tc.err }
			var out bytes.Buffer
			err := doctor(t.Context(), e, &out)
			if (err != nil) != tc.fail {
				t.Errorf("doctor error %v, want failure %v\n%s", err, tc.fail, out.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
			if strings.Contains(out.String(), "not called") {
				t.Errorf("with --provider doctor still says the provider was not called:\n%s", out.String())
			}
		})
	}
}

func TestDoctorFlags(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		provider bool
		bad      bool
	}{
		{nil, false, false},
		{[]string{"--provider"}, true, false},
		{[]string{"-provider"}, true, false},
		{[]string{"--nope"}, false, true},
		{[]string{"extra"}, false, true},
	} {
		got, err := doctorFlags(tc.args)
		if got != tc.provider || (err != nil) != tc.bad {
			t.Errorf("doctorFlags(%q) = %v, %v; want %v, error %v", tc.args, got, err, tc.provider, tc.bad)
		}
	}
}
