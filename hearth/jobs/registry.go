package jobs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Load reads every jobs/*.yml of the memory root dir. A file that does
// not parse is an error of its own, returned beside the jobs that do, so
// one bad file never stops the others.
func Load(dir string) (jobs []*Job, bad []error, err error) {
	ents, err := os.ReadDir(filepath.Join(dir, Dir))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("jobs: %w", err)
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		if e.Type().IsRegular() && strings.HasSuffix(e.Name(), ".yml") && !strings.HasPrefix(e.Name(), ".") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, Dir, n))
		if err != nil {
			bad = append(bad, fmt.Errorf("%s/%s: %w", Dir, n, err))
			continue
		}
		j, err := Parse(strings.TrimSuffix(n, ".yml"), b)
		if err != nil {
			bad = append(bad, err)
			continue
		}
		jobs = append(jobs, j)
	}
	return jobs, bad, nil
}
