package ipc

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// DefaultPort is hearth's TCP port when MNEMO_HEARTH_PORT is unset.
const DefaultPort = 7744

// DefaultAddr returns the loopback address of the local hearth, honouring
// MNEMO_HEARTH_PORT.
func DefaultAddr(getenv func(string) string) (string, error) {
	port := DefaultPort
	if p := getenv("MNEMO_HEARTH_PORT"); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || n > 65535 {
			return "", fmt.Errorf("MNEMO_HEARTH_PORT=%q is not a port number", p)
		}
		port = n
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), nil
}

// TokenPath is the file that holds the local auth token: mnemo/token under
// the user's config dir (XDG_CONFIG_HOME or ~/.config).
func TokenPath() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("locate config dir: %w", err)
	}
	return filepath.Join(dir, "mnemo", "token"), nil
}

// ErrNoToken means neither APP_AUTH_TOKEN nor the token file is there.
var ErrNoToken = errors.New("no auth token: set APP_AUTH_TOKEN, or start hearth once on this machine so it writes the token file")

// maxTokenFile bounds a token file; a token is far shorter.
const maxTokenFile = 4096

// ReadTokenFile reads a token file. A file that group or others may read
// is refused: its token must be treated as leaked.
func ReadTokenFile(path string) (string, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", ErrNoToken
	}
	if err != nil {
		return "", fmt.Errorf("read token file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("read token file: %w", err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("token file %s has mode %v: it must be 0600 (delete it and restart hearth to mint a new token)", path, st.Mode().Perm())
	}
	buf, err := io.ReadAll(io.LimitReader(f, maxTokenFile+1))
	if err != nil {
		return "", fmt.Errorf("read token file: %w", err)
	}
	if len(buf) > maxTokenFile {
		return "", fmt.Errorf("token file %s is over %d bytes", path, maxTokenFile)
	}
	tok := strings.TrimSpace(string(buf))
	if tok == "" {
		return "", fmt.Errorf("token file %s is empty", path)
	}
	return tok, nil
}

// DiscoverToken returns APP_AUTH_TOKEN when set, else the token file's.
func DiscoverToken(getenv func(string) string) (string, error) {
	if t := strings.TrimSpace(getenv("APP_AUTH_TOKEN")); t != "" {
		return t, nil
	}
	path, err := TokenPath()
	if err != nil {
		return "", err
	}
	return ReadTokenFile(path)
}
