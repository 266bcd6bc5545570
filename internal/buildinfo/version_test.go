package buildinfo

import (
	"runtime/debug"
	"testing"
)

func TestVersion(t *testing.T) {
	if got := Version("1a2b3c4"); got != "1a2b3c4" {
		t.Errorf("Version(stamped) = %q", got)
	}
	// Unstamped, the version is what the toolchain recorded.
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		t.Skip("no build info")
	}
	if got, want := Version("dev"), fromBuild(bi.Settings); got != want {
		t.Errorf("Version(dev) = %q, want %q from the build settings", got, want)
	}
}

func TestFromBuild(t *testing.T) {
	tests := []struct {
		name     string
		settings []debug.BuildSetting
		want     string
	}{
		{"none", nil, "dev"},
		{"clean", []debug.BuildSetting{{Key: "vcs.revision", Value: "7c4c62e0123456789"}, {Key: "vcs.modified", Value: "false"}}, "7c4c62e"},
		{"dirty", []debug.BuildSetting{{Key: "vcs.modified", Value: "true"}, {Key: "vcs.revision", Value: "7c4c62e0123456789"}}, "7c4c62e-dirty"},
		{"short", []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}}, "abc"},
		{"modified without revision", []debug.BuildSetting{{Key: "vcs.modified", Value: "true"}}, "dev"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := fromBuild(tt.settings); got != tt.want {
				t.Errorf("fromBuild = %q, want %q", got, tt.want)
			}
		})
	}
}
