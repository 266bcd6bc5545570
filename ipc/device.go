package ipc

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// DeviceCredential is what `mnemo pair` keeps on a paired device: the
// hearth it paired with, its device token, and hearth's certificate
// fingerprint ("" without TLS). Kept 0600 in the client's config dir.
type DeviceCredential struct {
	Addr        string `json:"addr"`
	Token       string `json:"token"`
	Fingerprint string `json:"fingerprint,omitempty"`
	ID          string `json:"id"`
	Name        string `json:"name"`
}

// DevicePath is mnemo/device.json under the user's config dir.
func DevicePath() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("locate config dir: %w", err)
	}
	return filepath.Join(dir, "mnemo", "device.json"), nil
}

// SaveDevice writes the credential to path, mode 0600, durably.
func SaveDevice(path string, d DeviceCredential) error {
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return err
	}
	if err := writeFileAtomic(path, append(b, '\n')); err != nil {
		return fmt.Errorf("save device credential: %w", err)
	}
	return nil
}

// ReadDevice reads the credential at path; ErrNoToken when there is
// none. A file group or others may read is refused, as a token file is.
func ReadDevice(path string) (DeviceCredential, error) {
	var d DeviceCredential
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return d, ErrNoToken
	}
	if err != nil {
		return d, fmt.Errorf("read device credential: %w", err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return d, fmt.Errorf("device credential %s has mode %v: it must be 0600 (pair again)", path, st.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return d, fmt.Errorf("read device credential: %w", err)
	}
	if err := json.Unmarshal(b, &d); err != nil || d.Addr == "" || d.Token == "" {
		return DeviceCredential{}, fmt.Errorf("device credential %s is damaged: pair again", path)
	}
	return d, nil
}
