package config

import (
	"strings"
	"testing"
)

// The listen address: loopback by default and on MNEMO_HEARTH_PORT; a
// network address only when asked for, and only with a token.
func TestListenAddress(t *testing.T) {
	token := strings.Repeat("t", 32)
	tests := []struct {
		name    string
		fx      fixture
		want    string
		wantErr string
	}{
		{"default", fixture{}, "127.0.0.1:7744", ""},
		{"port from env", fixture{env: map[string]string{"MNEMO_HEARTH_PORT": "9000"}}, "127.0.0.1:9000", ""},
		{"bad port env", fixture{env: map[string]string{"MNEMO_HEARTH_PORT": "x"}}, "", "MNEMO_HEARTH_PORT"},
		{"explicit loopback", fixture{args: []string{"-addr", "127.0.0.1:0"}}, "127.0.0.1:0", ""},
		{"ipv6 loopback", fixture{args: []string{"-addr", "[::1]:7744"}}, "[::1]:7744", ""},
		{"localhost", fixture{args: []string{"-addr", "localhost:7744"}}, "localhost:7744", ""},
		{"network without flag", fixture{args: []string{"-addr", "0.0.0.0:7744"}, env: map[string]string{"APP_AUTH_TOKEN": token}}, "", "-listen-remote"},
		{"network without token", fixture{args: []string{"-addr", "0.0.0.0:7744", "-listen-remote"}}, "", "APP_AUTH_TOKEN"},
		{"network with short token", fixture{args: []string{"-addr", "0.0.0.0:7744", "-listen-remote"}, env: map[string]string{"APP_AUTH_TOKEN": "short"}}, "", "APP_AUTH_TOKEN"},
		{"network with token", fixture{args: []string{"-addr", "0.0.0.0:7744", "-listen-remote"}, env: map[string]string{"APP_AUTH_TOKEN": token}}, "0.0.0.0:7744", ""},
		{"empty host is every interface", fixture{args: []string{"-addr", ":7744"}}, "", "-listen-remote"},
		{"no port", fixture{args: []string{"-addr", "127.0.0.1"}}, "", "-addr"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err, _ := tt.fx.load(t)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Load error = %v, want one mentioning %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || c.Addr.Value != tt.want {
				t.Errorf("Load: addr %q, %v; want %q", c.Addr.Value, err, tt.want)
			}
		})
	}
}

// The HTTP door binds like the NDJSON port: off by default, loopback, or
// the network only with -listen-remote and a long token.
func TestHTTPAddress(t *testing.T) {
	token := strings.Repeat("t", 32)
	for _, tt := range []struct {
		name    string
		fx      fixture
		want    string
		wantErr string
	}{
		{"default off", fixture{}, "", ""},
		{"loopback", fixture{args: []string{"-http", "127.0.0.1:7745"}}, "127.0.0.1:7745", ""},
		{"network without flag", fixture{args: []string{"-http", "0.0.0.0:7745"}, env: map[string]string{"APP_AUTH_TOKEN": token}}, "", "-listen-remote"},
		{"network with short token", fixture{args: []string{"-http", "0.0.0.0:7745", "-listen-remote"}, env: map[string]string{"APP_AUTH_TOKEN": "short"}}, "", "APP_AUTH_TOKEN"},
		{"network with token", fixture{args: []string{"-http", "0.0.0.0:7745", "-listen-remote"}, env: map[string]string{"APP_AUTH_TOKEN": token}}, "0.0.0.0:7745", ""},
		{"no port", fixture{args: []string{"-http", "127.0.0.1"}}, "", "-http"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err, _ := tt.fx.load(t)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Load error = %v, want one mentioning %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || c.HTTPAddr.Value != tt.want {
				t.Fatalf("Load = %q, %v; want %q", c.HTTPAddr.Value, err, tt.want)
			}
		})
	}
}
