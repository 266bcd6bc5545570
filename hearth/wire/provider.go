package wire

import (
	"context"
	"time"

	"github.com/mnemo/mnemo/hearth"
	"github.com/mnemo/mnemo/ipc"
)

// providerChecker is a core that can check its model provider:
// *hearth.Hearth.
type providerChecker interface {
	CheckProvider(ctx context.Context) (hearth.ProviderCheck, error)
}

// providerCheckTimeout bounds a provider check; the model's own timeouts
// (first byte, retries) usually end it sooner.
const providerCheckTimeout = 2 * time.Minute

// providerCheck makes the owner's provider check off the caller's
// goroutine and answers this client only; Close cancels it.
func (s *Session) providerCheck(m *ipc.ProviderCheck) {
	pc, ok := s.core.(providerChecker)
	switch {
	case !ok:
		s.reply(&ipc.Error{Code: ipc.CodeUnavailable, Message: "this hearth cannot check its model provider", Ref: m.Ref})
		return
	case !s.opts.Owner:
		s.reply(&ipc.Error{Code: ipc.CodeForbidden, Message: "only the owner may check the model provider", Ref: m.Ref})
		return
	}
	s.wg.Go(func() {
		ctx, cancel := context.WithTimeout(s.ctx, providerCheckTimeout)
		defer cancel()
		r, err := pc.CheckProvider(ctx)
		if err != nil {
			s.reply(&ipc.Error{Code: ipc.CodeUnavailable, Message: "the provider check was cut short (hearth stopping, or the client left)", Ref: m.Ref})
			return
		}
		s.reply(&ipc.ProviderStatus{Ref: m.Ref, OK: r.OK, Provider: r.Provider, Model: r.Model,
			LatencyMS: r.Latency.Milliseconds(), Category: r.Category, Problem: r.Problem})
	})
}
