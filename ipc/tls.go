package ipc

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// TLSScheme before an address (tls://host:port) makes a client speak TLS
// to hearth (hearth -tls).
const TLSScheme = "tls://"

// SplitAddr strips the tls:// scheme from addr and says whether it was
// there.
func SplitAddr(addr string) (hostport string, useTLS bool) {
	if rest, ok := strings.CutPrefix(addr, TLSScheme); ok {
		return rest, true
	}
	return addr, false
}

// Fingerprint is how a certificate is pinned and shown: "sha256:" and
// the hex SHA-256 of its DER encoding (as hearth logs it).
func Fingerprint(der []byte) string {
	sum := sha256.Sum256(der)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// PinMismatchError is a hearth whose certificate is not the one pinned.
type PinMismatchError struct {
	Host, Pinned, Got string
}

func (e *PinMismatchError) Error() string {
	return fmt.Sprintf("hearth at %s presented certificate %s, but %s is pinned for it: "+
		"someone may be intercepting the connection. If hearth's certificate really changed "+
		"(its config dir was replaced), forget the old one with `mnemo trust --forget %s` and connect again",
		e.Host, e.Got, e.Pinned, e.Host)
}

// KnownHearths is the client's file of pinned certificates, one
// "host:port fingerprint" a line, mode 0600: trust on first use.
type KnownHearths struct {
	Path string
	mu   sync.Mutex
}

// DefaultKnownHearths is mnemo/known_hearths under the user's config dir.
func DefaultKnownHearths() (*KnownHearths, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return nil, fmt.Errorf("locate config dir: %w", err)
	}
	return &KnownHearths{Path: filepath.Join(dir, "mnemo", "known_hearths")}, nil
}

func (k *KnownHearths) read() (map[string]string, []string, error) {
	b, err := os.ReadFile(k.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]string{}, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", k.Path, err)
	}
	pins := map[string]string{}
	var order []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 || strings.HasPrefix(f[0], "#") {
			continue
		}
		if _, dup := pins[f[0]]; !dup {
			order = append(order, f[0])
		}
		pins[f[0]] = f[1]
	}
	return pins, order, nil
}

func (k *KnownHearths) write(pins map[string]string, order []string) error {
	var b strings.Builder
	for _, h := range order {
		if fp, ok := pins[h]; ok {
			fmt.Fprintf(&b, "%s %s\n", h, fp)
		}
	}
	return writeFileAtomic(k.Path, []byte(b.String()))
}

// Lookup returns the fingerprint pinned for host ("" when none).
func (k *KnownHearths) Lookup(host string) (string, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	pins, _, err := k.read()
	return pins[host], err
}

// Check pins fp for host when host has no pin yet (first use: pinned is
// true), accepts it when it is the pinned one, and refuses it with a
// *PinMismatchError otherwise.
func (k *KnownHearths) Check(host, fp string) (pinned bool, err error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	pins, order, err := k.read()
	if err != nil {
		return false, err
	}
	switch old, ok := pins[host]; {
	case ok && old == fp:
		return false, nil
	case ok:
		return false, &PinMismatchError{Host: host, Pinned: old, Got: fp}
	}
	pins[host] = fp
	return true, k.write(pins, append(order, host))
}

// Forget drops host's pin; it reports whether there was one.
func (k *KnownHearths) Forget(host string) (bool, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	pins, order, err := k.read()
	if err != nil {
		return false, err
	}
	if _, ok := pins[host]; !ok {
		return false, nil
	}
	delete(pins, host)
	return true, k.write(pins, order)
}

// dialTLS runs the TLS handshake over nc, checking hearth's certificate
// against the pin for host (or pinning it on first use).
func dialTLS(ctx context.Context, nc net.Conn, host string, opts DialOptions) (net.Conn, error) {
	known := opts.Known
	if known == nil {
		var err error
		if known, err = DefaultKnownHearths(); err != nil {
			return nil, err
		}
	}
	cfg := &tls.Config{
		MinVersion: tls.VersionTLS13,
		// hearth's certificate is self-signed: it is trusted by its pin,
		// checked below, not by a CA or a name.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("hearth presented no certificate")
			}
			fp := Fingerprint(cs.PeerCertificates[0].Raw)
			pinned, err := known.Check(host, fp)
			if err != nil {
				return err
			}
			if pinned && opts.OnPin != nil {
				opts.OnPin(host, fp)
			}
			return nil
		},
	}
	tc := tls.Client(nc, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		var pm *PinMismatchError
		if errors.As(err, &pm) {
			return nil, pm
		}
		return nil, fmt.Errorf("TLS with hearth at %s: %w", host, err)
	}
	return tc, nil
}

// writeFileAtomic writes b to path with mode 0600, durably.
func writeFileAtomic(path string, b []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return err
	}
	if d, err := os.Open(dir); err == nil {
		defer d.Close()
		return d.Sync()
	}
	return nil
}

// List writes the pins, one "host fingerprint" a line.
func (k *KnownHearths) List(w io.Writer) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	pins, order, err := k.read()
	if err != nil {
		return err
	}
	for _, h := range order {
		if _, err := fmt.Fprintf(w, "%s %s\n", h, pins[h]); err != nil {
			return err
		}
	}
	return nil
}
