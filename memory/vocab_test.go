package memory_test

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mnemo/mnemo/memory"
)

func TestSearchRequestValidate(t *testing.T) {
	t1 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		req  memory.SearchRequest
		want string // "" means valid
	}{
		{"none", memory.SearchRequest{Query: "x"}, ""},
		{"all", memory.SearchRequest{Roles: []string{"user", "agent", "tool"}, Kinds: []string{"turn", "tool"}, Since: t1, Until: t1.Add(time.Second)}, ""},
		{"only since", memory.SearchRequest{Since: t1}, ""},
		{"only until", memory.SearchRequest{Until: t1}, ""},
		{"bad role", memory.SearchRequest{Roles: []string{"user", "assistant"}}, `unknown role "assistant": use user, agent or tool`},
		{"role case matters", memory.SearchRequest{Roles: []string{"User"}}, `unknown role "User": use user, agent or tool`},
		{"bad kind", memory.SearchRequest{Kinds: []string{"note"}}, `unknown kind "note": use turn, tool or knowledge`},
		{"knowledge", memory.SearchRequest{Kinds: []string{"knowledge"}, Statuses: []string{"active", "superseded"}, MinConfidence: 0.5}, ""},
		{"bad status", memory.SearchRequest{Statuses: []string{"archived"}}, `unknown status "archived": use active, superseded, contradicted, deprecated or draft`},
		{"confidence over 1", memory.SearchRequest{MinConfidence: 1.5}, `min confidence 1.5 is outside [0, 1]`},
		{"long role is cut", memory.SearchRequest{Roles: []string{strings.Repeat("r", 1000)}}, `unknown role "` + strings.Repeat("r", 64-len("…")) + `…": use user, agent or tool`},
		{"long role is cut on a rune", memory.SearchRequest{Roles: []string{strings.Repeat("é", 100)}}, `unknown role "` + strings.Repeat("é", 30) + `…": use user, agent or tool`},
		{"since after until", memory.SearchRequest{Since: t1.Add(time.Hour), Until: t1}, "since (2026-01-01T01:00:00Z) must be before until (2026-01-01T00:00:00Z)"},
		{"empty range", memory.SearchRequest{Since: t1, Until: t1}, "since (2026-01-01T00:00:00Z) must be before until (2026-01-01T00:00:00Z)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			if err := tc.req.Validate(); err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("Validate() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestSearchRequestMatches(t *testing.T) {
	t1 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name       string
		req        memory.SearchRequest
		kind, role string
		ts         time.Time
		want       bool
	}{
		{"no filter", memory.SearchRequest{}, memory.KindTool, memory.RoleTool, t1, true},
		{"role listed", memory.SearchRequest{Roles: []string{memory.RoleAgent, memory.RoleUser}}, memory.KindTurn, memory.RoleUser, t1, true},
		{"role not listed", memory.SearchRequest{Roles: []string{memory.RoleAgent}}, memory.KindTurn, memory.RoleUser, t1, false},
		{"kind listed", memory.SearchRequest{Kinds: []string{memory.KindTool}}, memory.KindTool, memory.RoleTool, t1, true},
		{"kind not listed", memory.SearchRequest{Kinds: []string{memory.KindTurn}}, memory.KindTool, memory.RoleTool, t1, false},
		{"since includes its instant", memory.SearchRequest{Since: t1}, memory.KindTurn, memory.RoleUser, t1, true},
		{"before since", memory.SearchRequest{Since: t1}, memory.KindTurn, memory.RoleUser, t1.Add(-time.Nanosecond), false},
		{"until excludes its instant", memory.SearchRequest{Until: t1}, memory.KindTurn, memory.RoleUser, t1, false},
		{"before until", memory.SearchRequest{Until: t1}, memory.KindTurn, memory.RoleUser, t1.Add(-time.Nanosecond), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.req.Matches(tc.kind, tc.role, tc.ts); got != tc.want {
				t.Errorf("Matches(%q, %q, %s) = %v, want %v", tc.kind, tc.role, tc.ts, got, tc.want)
			}
		})
	}
}

func TestRolesAndKindsAreCopies(t *testing.T) {
	memory.Roles()[0] = "nobody"
	memory.Kinds()[0] = "nothing"
	if err := (memory.SearchRequest{Roles: []string{memory.RoleUser}, Kinds: []string{memory.KindTurn}}).Validate(); err != nil {
		t.Errorf("a caller changed the vocabulary: %v", err)
	}
}

// TestVocabularyStaysLight: memory is imported by whatever speaks of
// memory (hearth's core, its tools, clients); it must not pull in the
// journal or recall.
func TestVocabularyStaysLight(t *testing.T) {
	goCmd, err := exec.LookPath(filepath.Join(runtime.GOROOT(), "bin", "go"))
	if err != nil {
		if goCmd, err = exec.LookPath("go"); err != nil {
			t.Skip("no go command to list memory's imports")
		}
	}
	out, err := exec.Command(goCmd, "list", "-deps", "-f", "{{.ImportPath}}", "github.com/mnemo/mnemo/memory").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "github.com/mnemo/mnemo/memory\n") {
		t.Fatalf("go list did not list memory itself:\n%s", out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "github.com/mnemo/mnemo/") && dep != "github.com/mnemo/mnemo/memory" {
			t.Errorf("memory imports %s", dep)
		}
	}
}
