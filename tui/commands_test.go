package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mnemo/mnemo/ipc"
)

func TestParseSearch(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	day := func(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, paris) }
	for _, tc := range []struct {
		name, arg string
		want      *ipc.Search
		wantErr   string // a prefix of the error
	}{
		{"query only", "garden plans", &ipc.Search{Query: "garden plans"}, ""},
		{"role", "role:user garden", &ipc.Search{Query: "garden", Roles: []string{"user"}}, ""},
		{"roles with commas, case, repeats", "Role:USER,agent role:user garden", &ipc.Search{Query: "garden", Roles: []string{"user", "agent"}}, ""},
		{"kind", "kind:tool weather", &ipc.Search{Query: "weather", Kinds: []string{"tool"}}, ""},
		{"filters anywhere", "what role:agent did since:2026-01-01 you say", &ipc.Search{Query: "what did you say", Roles: []string{"agent"}, Since: day(2026, 1, 1)}, ""},
		{"since and until days in the local zone", "since:2026-03-01 until:2026-03-31 garden",
			&ipc.Search{Query: "garden", Since: day(2026, 3, 1), Until: day(2026, 4, 1)}, ""},
		{"until across a DST change ends at local midnight", "until:2026-03-29 x", &ipc.Search{Query: "x", Until: day(2026, 3, 30)}, ""},
		{"rfc 3339", "since:2026-01-02T08:30:00Z x", &ipc.Search{Query: "x", Since: time.Date(2026, 1, 2, 8, 30, 0, 0, time.UTC)}, ""},
		{"other colons are words", "note: http://example.com 10:30", &ipc.Search{Query: "note: http://example.com 10:30"}, ""},
		{"unknown role", "role:bot garden", nil, "role:bot is not one of user, agent, tool"},
		{"unknown kind", "kind:note garden", nil, "kind:note is not one of turn, tool"},
		{"empty value", "role: garden", nil, "role: needs a value"},
		{"bad date", "since:yesterday garden", nil, "since:yesterday is not a date"},
		{"since after until", "since:2026-02-01 until:2026-01-01 garden", nil, "since must be before until"},
		{"filters without a query", "role:user since:2026-01-01", nil, "usage: /search"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseSearch(tc.arg, paris)
			if tc.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
					t.Errorf("parseSearch(%q) = %+v, %v; want error %q", tc.arg, got, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseSearch(%q): %v", tc.arg, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("parseSearch(%q) (-want +got):\n%s", tc.arg, diff)
			}
		})
	}
}
