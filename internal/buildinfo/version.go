// Package buildinfo says which build of mnemo is running, in the form
// `git describe --always --dirty` gives: a short commit, "-dirty" when the
// tree had changes.
package buildinfo

import "runtime/debug"

// Version is the version of this binary: stamped, as `make build` stamps it
// with -ldflags "-X main.version=…", or else read from the commit the Go
// toolchain recorded; "dev" when neither is known (go run, tests).
func Version(stamped string) string {
	if stamped != "" && stamped != "dev" {
		return stamped
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	return fromBuild(bi.Settings)
}

// fromBuild is the version that build settings record: vcs.revision cut
// to 7 characters, with "-dirty" when vcs.modified.
func fromBuild(settings []debug.BuildSetting) string {
	var rev string
	var dirty bool
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "dev"
	}
	rev = rev[:min(7, len(rev))]
	if dirty {
		rev += "-dirty"
	}
	return rev
}
