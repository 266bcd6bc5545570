package config

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Print writes every effective value, one per line, aligned, with where it
// came from (for `hearth config`). Secrets are shown only as
// "(set, env XAI_API_KEY)" or "(unset)".
func (c *Config) Print(w io.Writer) {
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	file := c.File.Value
	switch {
	case file == "":
		file = "(none)"
	case !c.FileFound:
		file += " (not found)"
	}
	fmt.Fprintf(tw, "config\t%s\t%s\n", file, c.File.Source)
	for _, f := range fields {
		v := f.value(c)
		switch {
		case f.secret && v.empty():
			fmt.Fprintf(tw, "%s\t(unset)\t\n", f.key)
		case f.secret:
			fmt.Fprintf(tw, "%s\t(set, %s)\t\n", f.key, v.source())
		default:
			shown := v.show()
			if v.empty() && f.unset != "" {
				shown = f.unset
			}
			if shown == "" {
				shown = `""`
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\n", f.key, shown, v.source())
		}
	}
	tw.Flush()
	// A secret's line has no source: drop the padding before it.
	for line := range strings.Lines(buf.String()) {
		io.WriteString(w, strings.TrimRight(line, " \n")+"\n")
	}
}
