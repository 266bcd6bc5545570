package config

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// TestPrint compares `hearth config`'s output with testdata/print-*.golden
// (go test -run TestPrint -update rewrites them).
func TestPrint(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
	}{
		{name: "defaults"},
		{
			name: "layered",
			args: []string{"-config", "testdata/example.toml", "-history", "100", "-log-level", "debug", "-listen-remote"},
			env: map[string]string{
				"XAI_API_KEY": "xai-SECRET", "OPENAI_API_KEY": "sk-SECRET", "APP_AUTH_TOKEN": "SECRET-0123456789",
				"MNEMO_MODEL": "grok-4.5", "MNEMO_HEARTH_PORT": "7800", "MNEMO_EMBED_BASE_URL": "http://user:SECRET@embed:11434",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := flag.NewFlagSet("hearth", flag.ContinueOnError)
			flags := Bind(fs)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			c, err := Load(LoadOptions{
				Flags:     flags,
				Getenv:    func(k string) string { return tt.env[k] },
				ConfigDir: "/home/me/.config", DataDir: "/home/me/.local/share", CacheDir: "/home/me/.cache",
			})
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			var got bytes.Buffer
			c.Print(&got)
			golden := filepath.Join("testdata", "print-"+tt.name+".golden")
			if *update {
				if err := os.WriteFile(golden, got.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), got.String()); diff != "" {
				t.Errorf("Print() differs from %s (-want +got):\n%s", golden, diff)
			}
			if bytes.Contains(got.Bytes(), []byte("SECRET")) {
				t.Errorf("Print() shows a secret:\n%s", got.String())
			}
		})
	}
}
