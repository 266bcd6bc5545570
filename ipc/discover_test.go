package ipc_test

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/mnemo/mnemo/ipc"
)

// env returns a getenv over m.
func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestDefaultAddr(t *testing.T) {
	tests := []struct {
		port    string // MNEMO_HEARTH_PORT; "" = unset
		want    string
		wantErr bool
	}{
		{port: "", want: "127.0.0.1:7744"},
		{port: "8080", want: "127.0.0.1:8080"},
		{port: "65535", want: "127.0.0.1:65535"},
		{port: "1", want: "127.0.0.1:1"},
		{port: "0", want: "127.0.0.1:0"}, // hearth then listens on a free port
		{port: "65536", wantErr: true},
		{port: "-1", wantErr: true},
		{port: "abc", wantErr: true},
		{port: "80x", wantErr: true},
		{port: " 80", wantErr: true},
		{port: "80 ", wantErr: true},
		{port: "8.5", wantErr: true},
		{port: "99999999999999999999", wantErr: true},
	}
	for _, tt := range tests {
		t.Run("port="+tt.port, func(t *testing.T) {
			got, err := ipc.DefaultAddr(env(map[string]string{"MNEMO_HEARTH_PORT": tt.port}))
			if tt.wantErr {
				if err == nil {
					t.Fatalf("DefaultAddr = %q, want an error", got)
				}
				if !strings.Contains(err.Error(), "MNEMO_HEARTH_PORT") {
					t.Errorf("got error %q, want it to name MNEMO_HEARTH_PORT", err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("DefaultAddr = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func writeToken(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // whatever the umask
		t.Fatal(err)
	}
}

func TestReadTokenFile(t *testing.T) {
	long := strings.Repeat("k", 2000)
	tests := []struct {
		name    string
		content string // "" with mode 0: no file
		mode    os.FileMode
		want    string
		wantErr string // in the error's text
		wantIs  error
	}{
		{name: "missing", wantIs: ipc.ErrNoToken},
		{name: "plain", content: "tok", mode: 0o600, want: "tok"},
		{name: "trims whitespace", content: "  \ttok\r\n\n", mode: 0o600, want: "tok"},
		{name: "owner read only", content: "tok\n", mode: 0o400, want: "tok"},
		{name: "long token read whole", content: long + "\n", mode: 0o600, want: long},
		{name: "world readable", content: "tok", mode: 0o644, wantErr: "0600"},
		{name: "group readable", content: "tok", mode: 0o640, wantErr: "0600"},
		{name: "others writable", content: "tok", mode: 0o602, wantErr: "0600"},
		{name: "empty", content: "", mode: 0o600, wantErr: "empty"},
		{name: "only whitespace", content: " \n\t\n", mode: 0o600, wantErr: "empty"},
		{name: "oversize", content: strings.Repeat("k", 5000), mode: 0o600, wantErr: "over"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.mode&0o077 != 0 && runtime.GOOS == "windows" {
				t.Skip("file modes do not protect a token on windows")
			}
			path := filepath.Join(t.TempDir(), "token")
			if tt.mode != 0 {
				writeToken(t, path, tt.content, tt.mode)
			}
			got, err := ipc.ReadTokenFile(path)
			switch {
			case tt.wantIs != nil:
				if !errors.Is(err, tt.wantIs) {
					t.Errorf("ReadTokenFile = %q, %v; want error %v", got, err, tt.wantIs)
				}
			case tt.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("ReadTokenFile = %q, %v; want an error containing %q", got, err, tt.wantErr)
				}
				if got != "" {
					t.Errorf("ReadTokenFile returned token %q with its error, want none", got)
				}
			default:
				if err != nil || got != tt.want {
					t.Errorf("ReadTokenFile = %.20q (%d bytes), %v; want %.20q (%d bytes)", got, len(got), err, tt.want, len(tt.want))
				}
			}
		})
	}
}

// configDir points os.UserConfigDir at a new temporary directory and
// returns what it now reports.
func configDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", dir) // unix
	t.Setenv("HOME", dir)            // darwin
	t.Setenv("AppData", dir)         // windows
	got, err := os.UserConfigDir()
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestTokenPath(t *testing.T) {
	dir := configDir(t)
	got, err := ipc.TokenPath()
	if want := filepath.Join(dir, "mnemo", "token"); err != nil || got != want {
		t.Errorf("TokenPath = %q, %v; want %q", got, err, want)
	}
}

func TestDiscoverToken(t *testing.T) {
	tests := []struct {
		name    string
		env     string // APP_AUTH_TOKEN
		file    string // token file content; "" = no file
		want    string
		wantErr error
	}{
		{name: "environment preferred", env: "from-env", file: "from-file\n", want: "from-env"},
		{name: "environment trimmed", env: "  from-env\n", want: "from-env"},
		{name: "file when unset", file: "from-file\n", want: "from-file"},
		{name: "file when blank", env: " \t", file: "from-file\n", want: "from-file"},
		{name: "neither", wantErr: ipc.ErrNoToken},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := configDir(t)
			if tt.file != "" {
				writeToken(t, filepath.Join(dir, "mnemo", "token"), tt.file, 0o600)
			}
			got, err := ipc.DiscoverToken(env(map[string]string{"APP_AUTH_TOKEN": tt.env}))
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Errorf("DiscoverToken = %q, %v; want error %v", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("DiscoverToken = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}
