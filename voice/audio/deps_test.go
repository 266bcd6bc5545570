package audio_test

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestDependencies: without the portaudio tag the package needs no cgo
// (make test and CI build it plain), and it stays a leaf of voice: no
// wire protocol, no hearth, no UI.
func TestDependencies(t *testing.T) {
	const mod = "github.com/mnemo/mnemo/"
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	out, err := exec.Command(goTool, "list", "-deps", "-f", "{{.ImportPath}}", mod+"voice/audio").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, f := range []string{"github.com/gordonklaus/portaudio", mod + "ipc", mod + "hearth", mod + "tui", mod + "memory"} {
			if dep == f || strings.HasPrefix(dep, f+"/") {
				t.Errorf("voice/audio (no build tags) depends on %s", dep)
			}
		}
	}
}
