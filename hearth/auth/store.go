package auth

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// FileName is the store's file in the config dir.
const FileName = "auth.json"

// DeviceTokenPrefix starts every device token, so a leaked one is easy
// to recognise (and to redact).
const DeviceTokenPrefix = "mnemo_dev_"

// Device is a paired client with a credential of its own.
type Device struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Actor     Actor     `json:"actor"`
	TokenHash string    `json:"token_sha256"` // hex SHA-256 of the token; the token itself is never kept
	Created   time.Time `json:"created"`
	LastUsed  time.Time `json:"last_used,omitzero"`
	RevokedAt time.Time `json:"revoked_at,omitzero"`
}

// Revoked reports whether the device's credential was revoked.
func (d Device) Revoked() bool { return !d.RevokedAt.IsZero() }

// DeviceInfo is a device as shown to the owner: no hash.
type DeviceInfo struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Actor     Actor     `json:"actor"`
	Created   time.Time `json:"created"`
	LastUsed  time.Time `json:"last_used,omitzero"`
	RevokedAt time.Time `json:"revoked_at,omitzero"`
}

func (d Device) Info() DeviceInfo {
	return DeviceInfo{ID: d.ID, Name: d.Name, Actor: d.Actor, Created: d.Created, LastUsed: d.LastUsed, RevokedAt: d.RevokedAt}
}

// File is auth.json: the paired devices and the owner's policy rules
// (which come before DefaultRules).
type File struct {
	Version int      `json:"version"`
	Devices []Device `json:"devices"`
	Rules   []Rule   `json:"rules,omitempty"`
}

// maxFileBytes bounds auth.json.
const maxFileBytes = 4 << 20

// DecodeFile parses and checks auth.json.
func DecodeFile(b []byte) (*File, error) {
	if len(b) > maxFileBytes {
		return nil, errors.New("auth: auth.json is too large")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var f File
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("auth: auth.json: %w", err)
	}
	if dec.More() {
		return nil, errors.New("auth: auth.json: trailing data")
	}
	if f.Version != 1 {
		return nil, fmt.Errorf("auth: auth.json: version %d, want 1", f.Version)
	}
	ids := make(map[string]bool, len(f.Devices))
	for _, d := range f.Devices {
		switch {
		case d.ID == "" || ids[d.ID]:
			return nil, fmt.Errorf("auth: auth.json: a device with a missing or repeated id %q", d.ID)
		case !slices.Contains(Actors, d.Actor):
			return nil, fmt.Errorf("auth: auth.json: device %s: unknown actor %q", d.ID, d.Actor)
		case !isHash(d.TokenHash):
			return nil, fmt.Errorf("auth: auth.json: device %s: token_sha256 is not a SHA-256 in hex", d.ID)
		}
		ids[d.ID] = true
	}
	for _, r := range f.Rules {
		if err := r.validate(); err != nil {
			return nil, err
		}
	}
	return &f, nil
}

func isHash(s string) bool {
	b, err := hex.DecodeString(s)
	return err == nil && len(b) == sha256.Size
}

// Options configure a Store.
type Options struct {
	Dir        string           // the config dir holding auth.json; "" keeps everything in memory
	OwnerToken string           // the shared token (APP_AUTH_TOKEN or the token file): the owner's
	CodeTTL    time.Duration    // how long a pairing code lives; default 5m
	MaxCodes   int              // pairing codes outstanding at once; default 4
	Now        func() time.Time // default time.Now
}

// Store is authentication, authorization and their management for every
// door: the devices and rules of auth.json, the owner's shared token, and
// the pairing codes outstanding (in memory only). Safe for concurrent use.
type Store struct {
	o    Options
	path string

	defaults []Rule // DefaultRules, made once

	mu       sync.Mutex
	f        File
	codes    []pairing
	onRevoke map[int]func(deviceID string)
	nextHook int
}

type pairing struct {
	hash    [sha256.Size]byte
	actor   Actor
	expires time.Time
}

// Open reads dir/auth.json, or starts empty when there is none (the file
// is written at the first change).
func Open(o Options) (*Store, error) {
	if o.CodeTTL <= 0 {
		o.CodeTTL = 5 * time.Minute
	}
	if o.MaxCodes <= 0 {
		o.MaxCodes = 4
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	s := &Store{o: o, defaults: DefaultRules(), f: File{Version: 1}, onRevoke: map[int]func(string){}}
	if o.Dir == "" {
		return s, nil
	}
	s.path = filepath.Join(o.Dir, FileName)
	b, err := os.ReadFile(s.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return s, nil
	case err != nil:
		return nil, fmt.Errorf("auth: read %s: %w", s.path, err)
	}
	f, err := DecodeFile(b)
	if err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, s.path)
	}
	s.f = *f
	return s, nil
}

// Path is auth.json's path, "" for a store in memory.
func (s *Store) Path() string { return s.path }

// HashToken is the hex SHA-256 a device token is kept as.
func HashToken(tok string) string {
	h := sha256.Sum256([]byte(tok))
	return hex.EncodeToString(h[:])
}

// Authenticate turns a credential into an identity: the shared token is
// the owner's; a device token is its device's while it is not revoked.
// Every device's hash is compared, in constant time, so the time taken
// says nothing of which came close. The door throttles failures per
// source (Throttle).
func (s *Store) Authenticate(ctx context.Context, credential string, source netip.Addr) (Identity, error) {
	if credential == "" {
		return Identity{}, ErrUnauthenticated
	}
	if s.o.OwnerToken != "" && TokenEqual(credential, s.o.OwnerToken) {
		return Identity{Subject: "owner", Actor: ActorOwner, Source: source}, nil
	}
	sum := sha256.Sum256([]byte(credential))
	s.mu.Lock()
	defer s.mu.Unlock()
	found := -1
	for i, d := range s.f.Devices {
		want, err := hex.DecodeString(d.TokenHash)
		if err != nil || len(want) != len(sum) {
			continue
		}
		if subtle.ConstantTimeCompare(sum[:], want) == 1 {
			found = i
		}
	}
	if found < 0 || s.f.Devices[found].Revoked() {
		return Identity{}, ErrUnauthenticated
	}
	d := &s.f.Devices[found]
	now := s.o.Now()
	if now.Sub(d.LastUsed) >= time.Minute { // not a write per connection
		d.LastUsed = now.UTC()
		if err := s.saveLocked(); err != nil {
			return Identity{}, err
		}
	}
	return Identity{Subject: d.Name, Actor: d.Actor, Device: d.ID, Source: source}, nil
}

// Authorize says whether id may do act on res: the owner's rules, then
// DefaultRules; a matching deny wins, and what nothing allows is denied
// (ErrForbidden).
func (s *Store) Authorize(id Identity, res Resource, act Action) error {
	s.mu.Lock()
	rules := s.f.Rules
	s.mu.Unlock()
	if err := decide(rules, id, res, act); err == nil || hasDeny(rules, id, res, act) {
		return err
	}
	return decide(s.defaults, id, res, act)
}

func hasDeny(rules []Rule, id Identity, res Resource, act Action) bool {
	for _, r := range rules {
		if r.Effect == Deny && r.matches(id, res, act) {
			return true
		}
	}
	return false
}

// Devices lists the paired devices, revoked ones included.
func (s *Store) Devices() []DeviceInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]DeviceInfo, len(s.f.Devices))
	for i, d := range s.f.Devices {
		out[i] = d.Info()
	}
	return out
}

// ErrNoDevice is Revoke's error for an id no device has.
var ErrNoDevice = errors.New("auth: no such device")

// Revoke revokes a device's credential at once: it is written to
// auth.json, and the doors told (OnRevoke) close the device's live
// connections. Revoking a revoked device is harmless.
func (s *Store) Revoke(ctx context.Context, id string) error {
	s.mu.Lock()
	i := slices.IndexFunc(s.f.Devices, func(d Device) bool { return d.ID == id })
	if i < 0 {
		s.mu.Unlock()
		return ErrNoDevice
	}
	if !s.f.Devices[i].Revoked() {
		s.f.Devices[i].RevokedAt = s.o.Now().UTC()
		if err := s.saveLocked(); err != nil {
			s.f.Devices[i].RevokedAt = time.Time{}
			s.mu.Unlock()
			return err
		}
	}
	hooks := make([]func(string), 0, len(s.onRevoke))
	for _, f := range s.onRevoke {
		hooks = append(hooks, f)
	}
	s.mu.Unlock()
	for _, f := range hooks {
		f(id)
	}
	return nil
}

// OnRevoke calls f with a device's id whenever it is revoked, until stop.
func (s *Store) OnRevoke(f func(deviceID string)) (stop func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := s.nextHook
	s.nextHook++
	s.onRevoke[k] = f
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.onRevoke, k)
	}
}

// PairCode is a one-time pairing code, to be typed on the new device.
type PairCode struct {
	Code    string
	Actor   Actor
	Expires time.Time
}

// ErrTooManyCodes is StartPairing's error when MaxCodes are outstanding.
var ErrTooManyCodes = errors.New("auth: too many pairing codes outstanding; wait for one to be used or expire")

// codeAlphabet leaves out 0/O, 1/I/L: codes are read off a screen.
const codeAlphabet = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"

// CodeLen is the length of a pairing code: 10 of 31 symbols, ~49 bits,
// against a throttled guesser with five minutes.
const CodeLen = 10

// StartPairing mints a one-time code for a new device of the given actor
// (collaborator when empty). Only the owner may pair (the door authorizes
// admin first). The code lives CodeTTL and is kept only as a hash.
func (s *Store) StartPairing(ctx context.Context, actor Actor) (PairCode, error) {
	if actor == "" {
		actor = ActorCollaborator
	}
	if !slices.Contains(Actors, actor) {
		return PairCode{}, fmt.Errorf("auth: unknown actor %q", actor)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.o.Now()
	s.expireCodesLocked(now)
	if len(s.codes) >= s.o.MaxCodes {
		return PairCode{}, ErrTooManyCodes
	}
	code := newCode()
	p := PairCode{Code: code, Actor: actor, Expires: now.Add(s.o.CodeTTL)}
	s.codes = append(s.codes, pairing{hash: sha256.Sum256([]byte(code)), actor: actor, expires: p.Expires})
	return p, nil
}

// newCode draws CodeLen symbols of codeAlphabet uniformly.
func newCode() string {
	const limit = 256 - 256%len(codeAlphabet) // reject above, for no bias
	out := make([]byte, 0, CodeLen)
	var buf [32]byte
	for len(out) < CodeLen {
		rand.Read(buf[:])
		for _, b := range buf {
			if int(b) < limit && len(out) < CodeLen {
				out = append(out, codeAlphabet[int(b)%len(codeAlphabet)])
			}
		}
	}
	return string(out)
}

// NormalizeCode makes a typed code comparable: upper case, no spaces or
// dashes.
func NormalizeCode(code string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == ' ' || r == '-':
			return -1
		case r >= 'a' && r <= 'z':
			return r - 'a' + 'A'
		}
		return r
	}, code)
}

func (s *Store) expireCodesLocked(now time.Time) {
	s.codes = slices.DeleteFunc(s.codes, func(p pairing) bool { return !now.Before(p.expires) })
}

// Redeem trades a pairing code for a new device named name: the code is
// used up, the device written to auth.json with its token's hash, and the
// token returned — the only time it exists outside the device. A wrong,
// expired or used code is ErrUnauthenticated (the door throttles it).
func (s *Store) Redeem(ctx context.Context, code, name string) (DeviceInfo, string, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		name = "device"
	}
	if len(name) > 64 {
		return DeviceInfo{}, "", errors.New("auth: a device name is at most 64 bytes")
	}
	sum := sha256.Sum256([]byte(NormalizeCode(code)))
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.o.Now()
	s.expireCodesLocked(now)
	found := -1
	for i, p := range s.codes {
		if subtle.ConstantTimeCompare(sum[:], p.hash[:]) == 1 {
			found = i
		}
	}
	if found < 0 || code == "" {
		return DeviceInfo{}, "", ErrUnauthenticated
	}
	actor := s.codes[found].actor
	s.codes = slices.Delete(s.codes, found, found+1) // single use, even if what follows fails
	secret := make([]byte, 32)
	rand.Read(secret)
	tok := DeviceTokenPrefix + base64.RawURLEncoding.EncodeToString(secret)
	idb := make([]byte, 4)
	rand.Read(idb)
	d := Device{ID: hex.EncodeToString(idb), Name: name, Actor: actor, TokenHash: HashToken(tok), Created: now.UTC()}
	s.f.Devices = append(s.f.Devices, d)
	if err := s.saveLocked(); err != nil {
		s.f.Devices = s.f.Devices[:len(s.f.Devices)-1]
		return DeviceInfo{}, "", err
	}
	return d.Info(), tok, nil
}

// Export is the auth configuration without any credential or hash: for
// auth_export and `mnemo devices`.
type Export struct {
	Devices  []DeviceInfo `json:"devices"`
	Rules    []Rule       `json:"rules"`
	Defaults []Rule       `json:"default_rules"`
	Actors   []Actor      `json:"actors"`
	Shared   bool         `json:"shared_token"` // whether the owner's shared token is set
}

// Export returns the configuration without credentials.
func (s *Store) Export() Export {
	s.mu.Lock()
	rules := slices.Clone(s.f.Rules)
	s.mu.Unlock()
	if rules == nil {
		rules = []Rule{}
	}
	return Export{Devices: s.Devices(), Rules: rules, Defaults: DefaultRules(), Actors: Actors, Shared: s.o.OwnerToken != ""}
}

// saveLocked writes auth.json atomically: a temporary file, fsync'd,
// renamed over the old one, the directory fsync'd; mode 0600.
func (s *Store) saveLocked() error {
	if s.path == "" {
		return nil
	}
	b, err := json.MarshalIndent(&s.f, "", "  ")
	if err != nil {
		return fmt.Errorf("auth: encode: %w", err)
	}
	return WriteFileAtomic(s.path, append(b, '\n'))
}

// WriteFileAtomic writes b to path with mode 0600, durably: the data and
// the rename are fsync'd before it returns.
func WriteFileAtomic(path string, b []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("auth: %w", err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("auth: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after the rename, nothing
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return fmt.Errorf("auth: %w", err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("auth: write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("auth: sync %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("auth: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("auth: %w", err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("auth: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("auth: sync %s: %w", dir, err)
	}
	return nil
}
