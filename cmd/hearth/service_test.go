package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestServiceUnitGolden: the unit restarts hearth on failure, logs to
// journald and reads secrets from the environment file.
// With a log file, hearth logs there (the unit passes -log-file).
func TestServiceUnitGolden(t *testing.T) {
	for golden, logFile := range map[string]string{
		"hearth.service.golden":         "",
		"hearth-logfile.service.golden": "/home/me/.local/state/mnemo/hearth.log",
	} {
		t.Run(golden, func(t *testing.T) { checkUnitGolden(t, golden, logFile) })
	}
	for _, bad := range []*service{{exe: "/bin/he\narth", envFile: "/e"}, {exe: "/bin/hearth", envFile: "/e", logFile: "/log/$HOME"}} {
		if _, err := bad.unit(); err == nil {
			t.Errorf("%q, %q made a unit", bad.exe, bad.logFile)
		}
	}
}

func checkUnitGolden(t *testing.T, golden, logFile string) {
	s := &service{exe: "/home/me/.local/bin/hearth", envFile: "/home/me/.config/mnemo/hearth.env", logFile: logFile}
	got, err := s.unit()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", golden)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -run TestServiceUnitGolden -update writes it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("unit:\n%s\nwant:\n%s", got, want)
	}
}

// fakeSystemctl puts a systemctl on PATH that records its arguments, one
// call a line, and answers is-enabled/is-active with answer.
func fakeSystemctl(t *testing.T, answer string) (path, calls string) {
	dir := t.TempDir()
	calls = filepath.Join(dir, "calls")
	script := "#!/bin/sh\necho \"$*\" >> " + calls + "\ncase \"$2\" in is-*) echo " + answer + ";; esac\n"
	path = filepath.Join(dir, "systemctl")
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return path, calls
}

func TestService(t *testing.T) {
	for _, tc := range []struct {
		name      string
		systemctl bool
		before    func(t *testing.T, s *service) // state before the commands
		cmds      []string
		wantCalls []string // systemctl calls, "" none
		wantOut   []string // substrings of the output
		wantUnit  bool     // the unit file exists after
	}{
		{
			name: "install without systemctl writes the unit and says how to enable it",
			cmds: []string{"install"}, wantUnit: true,
			wantOut: []string{"hearth.service", "0600", "systemctl --user enable --now hearth.service"},
		},
		{
			name: "install with systemctl enables it", systemctl: true,
			cmds: []string{"install"}, wantUnit: true,
			wantCalls: []string{"--user daemon-reload", "--user enable --now hearth.service"},
			wantOut:   []string{"enabled and started"},
		},
		{
			name: "install with a log file", systemctl: true,
			cmds: []string{"install -log-file /var/tmp/hearth.log"}, wantUnit: true,
			wantCalls: []string{"--user daemon-reload", "--user enable --now hearth.service"},
			wantOut:   []string{"logs: /var/tmp/hearth.log"},
		},
		{
			name: "install keeps an existing environment file", systemctl: true,
			before: func(t *testing.T, s *service) {
				os.MkdirAll(filepath.Dir(s.envFile), 0o700)
				if err := os.WriteFile(s.envFile, []byte("OPENAI_API_KEY=sk-mine\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			},
			cmds: []string{"install"}, wantUnit: true,
			wantCalls: []string{"--user daemon-reload", "--user enable --now hearth.service"},
		},
		{
			name: "status reports the unit's state", systemctl: true,
			cmds: []string{"install", "status"}, wantUnit: true,
			wantCalls: []string{"--user daemon-reload", "--user enable --now hearth.service", "--user is-enabled hearth.service", "--user is-active hearth.service"},
			wantOut:   []string{"active: active"},
		},
		{
			name: "status of nothing", cmds: []string{"status"},
			wantOut: []string{"not installed"},
		},
		{
			name: "uninstall disables and removes the unit, keeping the secrets", systemctl: true,
			cmds:      []string{"install", "uninstall"},
			wantCalls: []string{"--user daemon-reload", "--user enable --now hearth.service", "--user disable --now hearth.service", "--user daemon-reload"},
			wantOut:   []string{"removed", "kept"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var out bytes.Buffer
			s := &service{unitDir: filepath.Join(dir, "systemd", "user"), envFile: filepath.Join(dir, "mnemo", "hearth.env"), exe: "/opt/bin/hearth", out: &out}
			calls := ""
			if tc.systemctl {
				s.systemctl, calls = fakeSystemctl(t, "active")
			}
			if tc.before != nil {
				tc.before(t, s)
			}
			envBefore, _ := os.ReadFile(s.envFile)
			for _, c := range tc.cmds {
				if err := s.run(t.Context(), strings.Fields(c)); err != nil {
					t.Fatalf("%s: %v", c, err)
				}
			}
			var got []string
			if calls != "" {
				b, _ := os.ReadFile(calls)
				got = strings.Split(strings.TrimSpace(string(b)), "\n")
			}
			if !slices.Equal(got, tc.wantCalls) {
				t.Errorf("systemctl calls = %q, want %q", got, tc.wantCalls)
			}
			for _, w := range tc.wantOut {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
			if _, err := os.Stat(s.unitPath()); (err == nil) != tc.wantUnit {
				t.Errorf("unit exists: %v, want %v", err == nil, tc.wantUnit)
			}
			if !slices.ContainsFunc(tc.cmds, func(c string) bool { return strings.HasPrefix(c, "install") }) {
				return
			}
			fi, err := os.Stat(s.envFile)
			if err != nil || fi.Mode().Perm() != 0o600 {
				t.Fatalf("environment file: %v, %v, want 0600", fi, err)
			}
			if envBefore != nil {
				if now, _ := os.ReadFile(s.envFile); !bytes.Equal(now, envBefore) {
					t.Errorf("install changed the existing environment file to %q", now)
				}
			}
		})
	}
	for _, args := range [][]string{{"restart"}, {"install", "-log-file"}, {"install", "extra"}, {"status", "-log-file", "x"}, {}} {
		if err := (&service{}).run(t.Context(), args); err == nil {
			t.Errorf("hearth service %q was accepted", args)
		}
	}
}
