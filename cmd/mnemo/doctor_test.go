package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mnemo/mnemo/ipc"
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
			return &ipc.HealthReport{Provider: "openai", Model: "m", Index: &ipc.IndexHealth{Backend: "embedded", Embedder: "wordvec", Ready: true}},
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
		{"clock went back", func(t *testing.T, e *doctorEnv) {
			e.now = func() time.Time { return time.Now().Add(-2 * time.Hour) }
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
