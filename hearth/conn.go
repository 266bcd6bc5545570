package hearth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/mnemo/mnemo/hearth/tools"
	"github.com/mnemo/mnemo/ipc"
	"github.com/mnemo/mnemo/memory/journal"
)

// serve runs one connection from handshake to close.
func (h *Hearth) serve(nc net.Conn) {
	defer nc.Close()
	remote := nc.RemoteAddr().String()
	if n := h.nconns.Add(1); n > int64(h.cfg.MaxClients) {
		defer h.nconns.Add(-1)
		h.log.Warn("connection refused: too many clients", "remote", remote)
		refuse(nc, &ipc.Error{Code: ipc.CodeTooManyClients, Message: "hearth has too many clients connected"})
		return
	}
	defer h.nconns.Add(-1)

	r := ipc.NewReader(nc)
	nc.SetReadDeadline(time.Now().Add(h.cfg.HandshakeTimeout))
	hello, herr := h.handshake(r)
	if herr != nil {
		h.log.Warn("handshake refused", "remote", remote, "reason", herr.Code)
		refuse(nc, herr)
		return
	}
	nc.SetReadDeadline(time.Time{})

	c := newClient(h.nextID.Add(1), hello.Client, nc, h.cfg.ClientQueue, h.cfg.ClientBudget, h.cfg.DropGrace)
	if !h.register(c) {
		refuse(nc, &ipc.Error{Code: ipc.CodeShuttingDown, Message: "hearth is shutting down"})
		return
	}
	h.log.Info("client connected", "client", c.id, "name", c.name, "remote", remote)
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		c.writeLoop()
	}()

	h.readLoop(c, r)

	h.mu.Lock()
	delete(h.clients, c)
	h.mu.Unlock()
	c.kick(nil)
	<-writerDone
	h.log.Info("client disconnected", "client", c.id)
}

// register subscribes c and queues its history snapshot as the first
// frame, atomically with respect to every broadcast: nothing is missed
// between the snapshot and the first delta, and nothing is doubled.
func (h *Hearth) register(c *client) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closing {
		return false
	}
	frame, err := h.historyFrameLocked()
	if err != nil {
		h.log.Error("encode history", "err", err)
		return false
	}
	c.send(frame) // the first frame of an empty queue always fits
	h.clients[c] = struct{}{}
	return true
}

// refuse writes one error and leaves the caller to close the connection.
func refuse(nc net.Conn, e *ipc.Error) {
	line, err := ipc.Encode(e)
	if err != nil {
		return
	}
	nc.SetWriteDeadline(time.Now().Add(time.Second))
	nc.Write(line)
}

// handshake reads the connect message and checks its token in constant
// time. A refusal says why without revealing anything else.
func (h *Hearth) handshake(r *ipc.Reader) (*ipc.Connect, *ipc.Error) {
	m, err := r.Read()
	if err != nil {
		var ne net.Error
		switch {
		case errors.Is(err, ipc.ErrLineTooLong):
			return nil, &ipc.Error{Code: ipc.CodeLineTooLong, Message: "line exceeds the 1 MiB limit"}
		case errors.As(err, &ne) && ne.Timeout():
			return nil, &ipc.Error{Code: ipc.CodeHandshake, Message: "no connect message in time"}
		}
		return nil, &ipc.Error{Code: ipc.CodeUnauthorized, Message: `the first message must be {"type":"connect","token":"…"}`}
	}
	hello, ok := m.(*ipc.Connect)
	if !ok {
		return nil, &ipc.Error{Code: ipc.CodeUnauthorized, Message: `the first message must be {"type":"connect","token":"…"}`}
	}
	if !tokensEqual(hello.Token, h.cfg.Token) {
		return nil, &ipc.Error{Code: ipc.CodeUnauthorized, Message: "wrong or missing token"}
	}
	if hello.Protocol > ipc.ProtocolVersion {
		return nil, &ipc.Error{Code: ipc.CodeProtocol, Message: fmt.Sprintf("this hearth speaks protocol %d", ipc.ProtocolVersion)}
	}
	return hello, nil
}

// tokensEqual compares in constant time, independent of either length.
func tokensEqual(got, want string) bool {
	a := sha256.Sum256([]byte(got))
	b := sha256.Sum256([]byte(want))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1 && got != ""
}

// readLoop handles one client's messages until it leaves or misbehaves
// beyond recovery.
func (h *Hearth) readLoop(c *client, r *ipc.Reader) {
	reply := func(m ipc.Msg) {
		frame, err := ipc.Encode(m)
		if err != nil {
			return
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		if _, ok := h.clients[c]; ok && !c.send(frame) {
			h.dropLocked(c, errSlowClient)
		}
	}
	for {
		m, err := r.Read()
		var se *ipc.SyntaxError
		var ute *ipc.UnknownTypeError
		switch {
		case errors.As(err, &se):
			reply(&ipc.Error{Code: ipc.CodeBadRequest, Message: se.Error()})
			continue
		case errors.As(err, &ute):
			reply(&ipc.Error{Code: ipc.CodeUnknownType, Message: fmt.Sprintf("unknown message type %q", ute.Type)})
			continue
		case errors.Is(err, ipc.ErrLineTooLong):
			c.kick(&ipc.Error{Code: ipc.CodeLineTooLong, Message: "line exceeds the 1 MiB limit"})
			return
		case err != nil:
			return // closed, reset or kicked
		}
		switch m := m.(type) {
		case *ipc.Message:
			if strings.TrimSpace(m.Content) == "" {
				reply(&ipc.Error{Code: ipc.CodeBadRequest, Message: "message content is empty", Ref: m.Ref})
				continue
			}
			h.enqueueTurn(turnReq{from: c, ref: m.Ref, rec: journal.Record{Role: ipc.RoleUser, Text: m.Content, Mode: ipc.ModeText}}, reply)
		case *ipc.Transcript:
			if m.Role != ipc.RoleUser && m.Role != ipc.RoleAgent {
				reply(&ipc.Error{Code: ipc.CodeBadRequest, Message: `transcript role must be "user" or "agent"`, Ref: m.Ref})
				continue
			}
			if strings.TrimSpace(m.Text) == "" {
				reply(&ipc.Error{Code: ipc.CodeBadRequest, Message: "transcript text is empty", Ref: m.Ref})
				continue
			}
			h.enqueueTurn(turnReq{from: c, ref: m.Ref, rec: journal.Record{Role: m.Role, Text: m.Text, Mode: ipc.ModeVoice}}, reply)
		case *ipc.Ping:
			reply(&ipc.Pong{Ref: m.Ref})
		case *ipc.VoiceRequest:
			reply(&ipc.Error{Code: ipc.CodeUnavailable, Message: "realtime voice is not available on this hearth yet"})
		case *ipc.StopVoice:
			// Nothing to end: this hearth mints no voice sessions yet.
		case *ipc.Cancel:
			if !h.cancel() {
				reply(&ipc.Error{Code: ipc.CodeBadRequest, Message: "there is no reply in flight to cancel", Ref: m.Ref})
			}
		case *ipc.Confirm:
			if !h.answerConfirm(m.ID, m.Approve) {
				reply(&ipc.Error{Code: ipc.CodeBadRequest, Message: "no confirmation is waiting under that id (it may have expired)"})
			}
		case *ipc.Search:
			h.search(c, m, reply)
		case *ipc.Health:
			reply(h.health(m.Ref))
		case *ipc.Disconnect:
			return
		case *ipc.Connect:
			reply(&ipc.Error{Code: ipc.CodeBadRequest, Message: "already connected"})
		default:
			reply(&ipc.Error{Code: ipc.CodeBadRequest, Message: fmt.Sprintf("%q is sent by hearth, not by clients", m.Type())})
		}
	}
}

func (h *Hearth) enqueueTurn(req turnReq, reply func(ipc.Msg)) {
	select {
	case h.turns <- req:
	default:
		reply(&ipc.Error{Code: ipc.CodeUnavailable, Message: "hearth is busy: too many messages are waiting; try again shortly", Ref: req.ref})
	}
}

// search answers a client's memory search off the read loop.
func (h *Hearth) search(c *client, m *ipc.Search, reply func(ipc.Msg)) {
	if h.cfg.Search == nil {
		reply(&ipc.Error{Code: ipc.CodeUnavailable, Message: "memory search is not available on this hearth", Ref: m.Ref})
		return
	}
	if strings.TrimSpace(m.Query) == "" {
		reply(&ipc.Error{Code: ipc.CodeBadRequest, Message: "search query is empty", Ref: m.Ref})
		return
	}
	k := m.K
	if k <= 0 || k > maxSearchResults {
		k = defaultSearchResults
	}
	req := tools.SearchRequest{Query: m.Query, K: k, Roles: m.Roles, Kinds: m.Kinds, Since: m.Since, Until: m.Until}
	if err := req.Validate(); err != nil {
		reply(&ipc.Error{Code: ipc.CodeBadRequest, Message: "search: " + err.Error(), Ref: m.Ref})
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), searchTimeout)
		defer cancel()
		hits, err := h.cfg.Search(ctx, req)
		if err != nil {
			h.log.Warn("search failed", "err", err)
			reply(&ipc.Error{Code: ipc.CodeInternal, Message: "memory search failed; details are in hearth's log", Ref: m.Ref})
			return
		}
		res := &ipc.SearchResults{Ref: m.Ref, Results: make([]ipc.SearchHit, 0, len(hits))}
		for _, hit := range hits {
			t := ipc.Turn{ID: hit.ID, Role: hit.Role, TS: hit.TS, Mode: ipc.ModeText}
			if hit.Channel == ipc.ModeVoice {
				t.Mode = ipc.ModeVoice // the indexer files voice turns under channel "voice"
			}
			t.Content, t.Truncated = cut(hit.Text, maxSearchSnippet)
			s := ipc.SearchHit{Turn: t, Score: hit.Score, Kind: hit.Kind}
			s.Session, _ = cut(hit.Session, maxSearchField)
			s.Channel, _ = cut(hit.Channel, maxSearchField)
			res.Results = append(res.Results, s)
		}
		reply(res)
	}()
}

const (
	defaultSearchResults = 10
	maxSearchResults     = 50
	maxSearchSnippet     = 4 << 10
	maxSearchField       = 256 // a hit's session or channel
	searchTimeout        = 10 * time.Second
)

func (h *Hearth) health(ref string) *ipc.HealthReport {
	h.mu.Lock()
	r := &ipc.HealthReport{Ref: ref, State: h.state, Clients: len(h.clients)}
	if h.current != nil {
		r.Provider, r.Model = h.current.Name(), h.current.Model()
	}
	h.mu.Unlock()
	if h.cfg.IndexHealth != nil {
		r.Index = h.cfg.IndexHealth()
	}
	return r
}
