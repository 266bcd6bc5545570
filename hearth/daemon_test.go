package hearth

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestBindAddr(t *testing.T) {
	tests := []struct {
		name    string
		o       DaemonOptions
		want    string
		wantErr string
	}{
		{"default", DaemonOptions{Getenv: env(nil)}, "127.0.0.1:7744", ""},
		{"port from env", DaemonOptions{Getenv: env(map[string]string{"MNEMO_HEARTH_PORT": "9000"})}, "127.0.0.1:9000", ""},
		{"bad port env", DaemonOptions{Getenv: env(map[string]string{"MNEMO_HEARTH_PORT": "x"})}, "", "MNEMO_HEARTH_PORT"},
		{"explicit loopback", DaemonOptions{Addr: "127.0.0.1:0", Getenv: env(nil)}, "127.0.0.1:0", ""},
		{"ipv6 loopback", DaemonOptions{Addr: "[::1]:7744", Getenv: env(nil)}, "[::1]:7744", ""},
		{"localhost", DaemonOptions{Addr: "localhost:7744", Getenv: env(nil)}, "localhost:7744", ""},
		{"network without flag", DaemonOptions{Addr: "0.0.0.0:7744", Getenv: env(map[string]string{"APP_AUTH_TOKEN": strings.Repeat("t", 32)})}, "", "-listen-remote"},
		{"network without token", DaemonOptions{Addr: "0.0.0.0:7744", ListenRemote: true, Getenv: env(nil)}, "", "APP_AUTH_TOKEN"},
		{"network with short token", DaemonOptions{Addr: "0.0.0.0:7744", ListenRemote: true, Getenv: env(map[string]string{"APP_AUTH_TOKEN": "short"})}, "", "APP_AUTH_TOKEN"},
		{"network with token", DaemonOptions{Addr: "0.0.0.0:7744", ListenRemote: true, Getenv: env(map[string]string{"APP_AUTH_TOKEN": strings.Repeat("t", 32)})}, "0.0.0.0:7744", ""},
		{"empty host is every interface", DaemonOptions{Addr: ":7744", Getenv: env(nil)}, "", "-listen-remote"},
		{"no port", DaemonOptions{Addr: "127.0.0.1", Getenv: env(nil)}, "", "listen address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := bindAddr(tt.o)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("bindAddr() error = %v, want one mentioning %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("bindAddr() = %q, %v, want %q", got, err, tt.want)
			}
		})
	}
}

func TestAuthToken(t *testing.T) {
	t.Run("env wins", func(t *testing.T) {
		got, err := authToken(DaemonOptions{TokenFile: filepath.Join(t.TempDir(), "token"), Getenv: env(map[string]string{"APP_AUTH_TOKEN": " from-env "})})
		if err != nil || got != "from-env" {
			t.Errorf("authToken() = %q, %v, want from-env", got, err)
		}
	})
	t.Run("minted once, 0600, reused", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "sub", "token")
		o := DaemonOptions{TokenFile: path, Getenv: env(nil)}
		first, err := authToken(o)
		if err != nil {
			t.Fatal(err)
		}
		if len(first) < 32 {
			t.Errorf("minted token %q is too short", first)
		}
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("token file mode = %v, want 0600", st.Mode().Perm())
		}
		again, err := authToken(o)
		if err != nil || again != first {
			t.Errorf("second authToken() = %q, %v, want the first token", again, err)
		}
	})
	t.Run("loose permissions refused", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "token")
		if err := os.WriteFile(path, []byte("leaked\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := authToken(DaemonOptions{TokenFile: path, Getenv: env(nil)}); err == nil || !strings.Contains(err.Error(), "0600") {
			t.Errorf("authToken() error = %v, want a 0600 complaint", err)
		}
	})
}
