package auth

import (
	"context"
	"net/netip"
)

// SharedToken is the authentication hearth has before per-device
// credentials: one token, the owner's. Presenting it makes a request the
// owner's, and the owner may do everything; nothing else is admitted, and
// any identity that is not the owner's is denied everything.
type SharedToken struct {
	Token string
}

// Authenticate returns the owner's identity for the token, else
// ErrUnauthenticated.
func (s SharedToken) Authenticate(_ context.Context, credential string, src netip.Addr) (Identity, error) {
	if !TokenEqual(credential, s.Token) {
		return Identity{}, ErrUnauthenticated
	}
	return Identity{Subject: string(ActorOwner), Actor: ActorOwner, Source: src}, nil
}

// Authorize allows the owner everything and denies everyone else.
func (SharedToken) Authorize(id Identity, _ Resource, _ Action) error {
	if id.IsOwner() {
		return nil
	}
	return ErrForbidden
}
