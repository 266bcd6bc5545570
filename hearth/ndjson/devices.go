package ndjson

import (
	"context"
	"errors"

	"github.com/mnemo/mnemo/hearth/auth"
	"github.com/mnemo/mnemo/ipc"
)

// handleAuth answers the door's own messages (who am I, pairing, devices)
// and reports whether m was one; the caller authorized it already.
func (c *conn) handleAuth(m ipc.Msg) bool {
	ctx := context.Background()
	switch m := m.(type) {
	case *ipc.Whoami:
		c.sess.Reply(&ipc.Identity{Subject: c.who.Subject, Actor: string(c.who.Actor), Device: c.who.Device, Ref: m.Ref})
	case *ipc.PairStart:
		pc, err := c.auth.StartPairing(ctx, auth.Actor(m.Actor))
		switch {
		case errors.Is(err, auth.ErrTooManyCodes):
			c.sess.Reply(&ipc.Error{Code: ipc.CodeTooManyClients, Message: "too many pairing codes are outstanding; use one or wait for them to expire", Ref: m.Ref})
		case err != nil:
			c.sess.Reply(&ipc.Error{Code: ipc.CodeBadRequest, Message: `actor must be one of owner, collaborator, system_agent, background_agent, external_agent, service`, Ref: m.Ref})
		default:
			c.log.Info("pairing code issued", "client", c.id, "actor", pc.Actor, "expires", pc.Expires)
			c.sess.Reply(&ipc.PairCode{Code: pc.Code, Actor: string(pc.Actor), Expires: pc.Expires, Fingerprint: c.fingerprint, Ref: m.Ref})
		}
	case *ipc.Devices:
		devs := c.auth.Devices()
		out := &ipc.DeviceList{Devices: make([]ipc.Device, len(devs)), Ref: m.Ref}
		for i, d := range devs {
			out.Devices[i] = wireDevice(d)
		}
		c.sess.Reply(out)
	case *ipc.DeviceRevoke:
		err := c.auth.Revoke(ctx, m.ID)
		switch {
		case errors.Is(err, auth.ErrNoDevice):
			c.sess.Reply(&ipc.Error{Code: ipc.CodeBadRequest, Message: "no device has that id (mnemo devices lists them)", Ref: m.Ref})
		case err != nil:
			c.log.Error("revoke device", "err", err)
			c.sess.Reply(&ipc.Error{Code: ipc.CodeInternal, Message: "hearth could not revoke the device", Ref: m.Ref})
		default:
			c.log.Info("device revoked", "client", c.id, "device", m.ID)
			c.sess.Reply(&ipc.DeviceRevoked{ID: m.ID, Ref: m.Ref})
		}
	default:
		return false
	}
	return true
}

func wireDevice(d auth.DeviceInfo) ipc.Device {
	return ipc.Device{ID: d.ID, Name: d.Name, Actor: string(d.Actor), Created: d.Created, LastUsed: d.LastUsed, RevokedAt: d.RevokedAt}
}

// trackDevice remembers how to cut c, a connection of device (none for
// the shared token), until the returned func is called.
func (s *Server) trackDevice(c *conn, device string, cut func()) (untrack func()) {
	if device == "" {
		return func() {}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.devices[device] == nil {
		s.devices[device] = make(map[*conn]func())
	}
	s.devices[device][c] = cut
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.devices[device], c)
		if len(s.devices[device]) == 0 {
			delete(s.devices, device)
		}
	}
}

// revoked cuts the live connections of a device just revoked: each is
// told why and closed.
func (s *Server) revoked(device string) {
	s.mu.Lock()
	cuts := make([]func(), 0, len(s.devices[device]))
	for _, cut := range s.devices[device] {
		cuts = append(cuts, cut)
	}
	s.mu.Unlock()
	for _, cut := range cuts {
		cut()
	}
}

// revoked reports whether device is revoked (or gone).
func revoked(a Authority, device string) bool {
	for _, d := range a.Devices() {
		if d.ID == device {
			return !d.RevokedAt.IsZero()
		}
	}
	return true
}
