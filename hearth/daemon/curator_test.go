package daemon

import "testing"

// curator.flush and jobs.enabled reach the core: flush off is the core's
// FlushAt -1 (no flush pass), jobs off is no job runner; the curator off
// is neither.
func TestCuratorConfigs(t *testing.T) {
	for _, tc := range []struct {
		name    string
		vars    map[string]string
		curator bool
		flushAt int
		jobs    bool
	}{
		{"defaults", map[string]string{}, true, 0, true},
		{"flush off", map[string]string{"MNEMO_CURATOR_FLUSH": "false"}, true, -1, true},
		{"jobs off", map[string]string{"MNEMO_JOBS": "false"}, true, 0, false},
		{"curator off", map[string]string{"MNEMO_CURATOR": "false"}, false, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, j := curatorConfigs(loadConfig(t, tc.vars), t.TempDir())
			if (c != nil) != tc.curator || (j != nil) != tc.jobs {
				t.Fatalf("curator %v jobs %v, want %v %v", c != nil, j != nil, tc.curator, tc.jobs)
			}
			if c != nil && c.FlushAt != tc.flushAt {
				t.Errorf("FlushAt %d, want %d", c.FlushAt, tc.flushAt)
			}
		})
	}
}
