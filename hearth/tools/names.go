package tools

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
)

// Offered names of MCP tools: <prefix>__<tool>. The rule is documented in
// the package comment (tools.go); labelPrefix, uniquePrefix and toolNames
// implement it.
const (
	maxNameLen   = 64
	maxPrefixLen = 24
	nameSep      = "__"
)

func validName(s string) bool {
	if len(s) == 0 || len(s) > maxNameLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !nameByte(s[i]) {
			return false
		}
	}
	return true
}

func nameByte(c byte) bool {
	return c == '_' || c == '-' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// sanitize replaces every byte outside [a-zA-Z0-9_-] with "_".
func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !nameByte(c) {
			b[i] = '_'
		}
	}
	return string(b)
}

// labelPrefix derives a server's name prefix from its label.
func labelPrefix(label string) string {
	var b strings.Builder
	for i := 0; i < len(label); i++ {
		c := label[i]
		if !nameByte(c) {
			c = '_'
		}
		if c == '_' && (b.Len() == 0 || strings.HasSuffix(b.String(), "_")) {
			continue
		}
		b.WriteByte(c)
	}
	p := b.String()
	if len(p) > maxPrefixLen {
		p = p[:maxPrefixLen]
	}
	p = strings.TrimRight(p, "_")
	if p == "" {
		p = "mcp"
	}
	return p
}

// uniquePrefix returns p, or p_2, p_3, ... whichever is not used yet.
func uniquePrefix(p string, used map[string]bool) string {
	if !used[p] {
		return p
	}
	for n := 2; ; n++ {
		c := p + "_" + strconv.Itoa(n)
		if !used[c] {
			return c
		}
	}
}

// nameHash is the 8-hex-digit FNV-1a hash of s.
func nameHash(s string) string {
	h := fnv.New32a()
	h.Write([]byte(s))
	return fmt.Sprintf("%08x", h.Sum32())
}

// toolNames assigns offered names to one server's tools, in order. names[i]
// is "" for a tool that cannot be named (it is then not offered).
func toolNames(prefix string, tools []string) []string {
	names := make([]string, len(tools))
	taken := make(map[string]bool, len(tools))
	room := maxNameLen - len(prefix) - len(nameSep)
	// First the names that need no change: they never collide with each
	// other, because a server's tool names are unique.
	for i, t := range tools {
		if t != "" && sanitize(t) == t && len(t) <= room && !taken[t] {
			names[i] = prefix + nameSep + t
			taken[t] = true
		}
	}
	for i, t := range tools {
		if names[i] != "" {
			continue
		}
		s := sanitize(t)
		if s == "" || len(s) > room || taken[s] {
			keep := room - 9 // "_" + 8 hex digits
			if keep < 0 {
				continue
			}
			if len(s) > keep {
				s = s[:keep]
			}
			s += "_" + nameHash(t)
			if s[0] == '_' && len(s) == 9 {
				s = "t" + s // a name that was empty is "t_<hash>"
			}
			if len(s) > room || taken[s] {
				continue
			}
		}
		names[i] = prefix + nameSep + s
		taken[s] = true
	}
	return names
}
