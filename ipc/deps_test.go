package ipc_test

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestDependencies guards the architecture: the wire package and the
// client UI never depend on the daemon or the memory store, directly or
// through another package; hearth's core knows no transport: it depends on
// neither the wire protocol nor any door, and does no networking itself.
func TestDependencies(t *testing.T) {
	const mod = "github.com/mnemo/mnemo/"
	doors := []string{mod + "ipc", mod + "hearth/ndjson", mod + "hearth/wire", mod + "hearth/local", mod + "hearth/daemon", mod + "tui"}
	tests := []struct {
		pkg       string
		forbidden []string
		// direct lists packages pkg itself must not import (its
		// dependencies may: the model adapters speak HTTP).
		direct []string
	}{
		{pkg: mod + "ipc", forbidden: []string{mod + "hearth", mod + "memory", mod + "tui"}},
		{pkg: mod + "tui", forbidden: []string{mod + "hearth", mod + "memory"}},
		{pkg: mod + "hearth", forbidden: doors, direct: []string{"net", "net/http", "net/netip"}},
		{pkg: mod + "hearth/wire", forbidden: []string{mod + "hearth/ndjson", mod + "hearth/daemon", mod + "tui"}, direct: []string{"net"}},
	}
	goTool := goBinary(t)
	for _, tt := range tests {
		t.Run(strings.TrimPrefix(tt.pkg, mod), func(t *testing.T) {
			cmd := exec.Command(goTool, "list", "-deps", "-f", "{{.ImportPath}}", tt.pkg)
			out, err := cmd.Output()
			if err != nil {
				var stderr []byte
				if ee, ok := err.(*exec.ExitError); ok {
					stderr = ee.Stderr
				}
				t.Fatalf("go list -deps %s: %v\n%s", tt.pkg, err, stderr)
			}
			deps := strings.Fields(string(out))
			if len(deps) == 0 {
				t.Fatalf("go list -deps %s listed nothing", tt.pkg)
			}
			for _, dep := range deps {
				for _, f := range tt.forbidden {
					if dep == f || strings.HasPrefix(dep, f+"/") {
						t.Errorf("%s depends on %s; it must not depend on %s or below", tt.pkg, dep, f)
					}
				}
			}
			if len(tt.direct) == 0 {
				return
			}
			out, err = exec.Command(goTool, "list", "-f", `{{join .Imports "\n"}}`, tt.pkg).Output()
			if err != nil {
				t.Fatalf("go list -f Imports %s: %v", tt.pkg, err)
			}
			for _, imp := range strings.Fields(string(out)) {
				for _, f := range tt.direct {
					if imp == f {
						t.Errorf("%s imports %s; it must not", tt.pkg, imp)
					}
				}
			}
		})
	}
}

// goBinary finds the go command: go test puts its GOROOT/bin first on
// PATH; the running toolchain's GOROOT is the fallback.
func goBinary(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	p := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := exec.LookPath(p); err != nil {
		t.Skipf("no go command on PATH or in %s: cannot list dependencies", runtime.GOROOT())
	}
	return p
}
