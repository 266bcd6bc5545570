// Package auth is the one authentication and authorization layer every
// door of hearth goes through (seed 000, Auth): a credential becomes an
// Identity (Authenticate), and an (identity, resource, action) triple
// becomes allow or deny (Authorize), deny unless a rule allows it.
//
// The doors (hearth/ndjson, the HTTP door) take what they need of it as
// their own small interfaces; the core (hearth) only ever sees an Identity
// carried in a context (WithIdentity, From).
package auth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/netip"
	"time"
)

// Actor is the kind of party an identity is (seed 000).
type Actor string

const (
	ActorOwner           Actor = "owner"            // the person whose memory this is
	ActorCollaborator    Actor = "collaborator"     // someone the owner let in
	ActorSystemAgent     Actor = "system_agent"     // hearth's own agent
	ActorBackgroundAgent Actor = "background_agent" // the curator, jobs
	ActorExternalAgent   Actor = "external_agent"   // another agent over MCP or HTTP
	ActorService         Actor = "service"          // a program with a service credential
)

// Resource is what an action is on.
type Resource string

const (
	ResConversation Resource = "conversation" // messages, history, the turn
	ResMemory       Resource = "memory"       // search, recall, read notes
	ResVault        Resource = "vault"        // writes, proposals, review, purge, export
	ResVoice        Resource = "voice"        // realtime voice credentials
	ResTools        Resource = "tools"        // tool confirmation
	ResAdmin        Resource = "admin"        // devices, pairing, shutdown, auth export
	ResMetrics      Resource = "metrics"      // /metrics, detailed health
)

// Action is what is done to a resource.
type Action string

const (
	ActRead  Action = "read"
	ActWrite Action = "write"
	ActAdmin Action = "admin"
)

// Identity is who a request comes from, as authentication established it.
type Identity struct {
	Subject string // "owner", or the device's or service's name
	Actor   Actor
	Device  string // the device id, "" for the shared token
	Source  netip.Addr
}

// IsOwner reports whether id is the owner's.
func (id Identity) IsOwner() bool { return id.Actor == ActorOwner }

// Errors of Authenticate and Authorize. A door maps them to its own
// (NDJSON error codes, HTTP 401/403/429) and says no more than they do.
var (
	ErrUnauthenticated = errors.New("auth: the credential is missing, wrong, expired or revoked")
	ErrForbidden       = errors.New("auth: not allowed")
)

// ThrottledError says a source failed too often and must wait.
type ThrottledError struct{ RetryAfter time.Duration }

func (e *ThrottledError) Error() string {
	return fmt.Sprintf("auth: too many failed attempts; retry after %s", e.RetryAfter.Round(time.Millisecond))
}

type ctxKey struct{}

// WithIdentity returns ctx carrying id.
func WithIdentity(ctx context.Context, id Identity) context.Context {
	return context.WithValue(ctx, ctxKey{}, id)
}

// From returns the identity ctx carries, and whether it carries one.
func From(ctx context.Context) (Identity, bool) {
	id, ok := ctx.Value(ctxKey{}).(Identity)
	return id, ok
}

// TokenEqual compares a presented token with the expected one in constant
// time: both are hashed first, so neither content nor length leaks. An
// empty token never matches.
func TokenEqual(got, want string) bool {
	a, b := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(want))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1 && got != "" && want != ""
}
