package voice_test

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestDependencies: voice holds domain values and knows neither the wire
// protocol nor hearth; its stand-in server is for tests only, so no
// production package (its non-test dependencies) reaches voicetest.
func TestDependencies(t *testing.T) {
	const mod = "github.com/mnemo/mnemo/"
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	out, err := exec.Command(goTool, "list", "-deps", "-f", "{{.ImportPath}}", mod+"voice").Output()
	if err != nil {
		t.Fatalf("go list -deps voice: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, f := range []string{mod + "ipc", mod + "hearth", mod + "memory", mod + "tui", mod + "voice/voicetest"} {
			if dep == f || strings.HasPrefix(dep, f+"/") {
				t.Errorf("voice depends on %s", dep)
			}
		}
	}
	out, err = exec.Command(goTool, "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, mod+"...").Output()
	if err != nil {
		t.Fatalf("go list ./...: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		for _, imp := range f[1:] {
			if imp == mod+"voice/voicetest" {
				t.Errorf("production package %s imports voice/voicetest", f[0])
			}
		}
	}
}
