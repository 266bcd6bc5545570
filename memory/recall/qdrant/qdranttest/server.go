// Package qdranttest is an in-process Qdrant stand-in for tests: a gRPC
// server on 127.0.0.1 built from the go-client module's own generated
// server interfaces, so the real qdrant.NewClient talks to it exactly as
// it talks to Qdrant.
//
// It implements, faithfully, the subset mnemo uses: collections (create
// with named or unnamed dense vectors and named sparse vectors, get,
// exists, list, delete), points (upsert, get, delete by ids or filter,
// count, scroll, query and search by dense vectors with cosine, dot,
// euclid or manhattan distance, and by sparse vectors with Qdrant's IDF
// modifier), payload filters (must, should, must_not, min_should; match
// keyword/keywords/integer/integers/bool/text/except, range, has_id,
// is_empty, is_null, has_vector, nested filters), with_payload and
// with_vectors selectors, payload index creation (recorded, not used for
// speed), the health check, and API-key checks via the api-key or
// authorization metadata. Errors carry the status codes Qdrant uses:
// NotFound for a missing collection, InvalidArgument for bad input such as
// a vector of the wrong dimension, AlreadyExists, PermissionDenied for a
// missing or wrong key. Anything else answers Unimplemented.
//
// Everything is kept in memory and searched exhaustively.
package qdranttest

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"

	qc "github.com/qdrant/go-client/qdrant"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// DefaultVersion is the Qdrant version the health check reports.
const DefaultVersion = "1.17.1"

// maxMessage bounds messages both ways. Qdrant's gRPC services accept
// messages of any size; 1 GiB is as good as that in tests.
const maxMessage = 1 << 30

// Options configure Start.
type Options struct {
	// APIKey, when set, is required on every call but the health check.
	APIKey string
	// Version is reported by the health check (DefaultVersion when empty).
	Version string
	// Log receives one line per failed call (discarded when nil).
	Log *slog.Logger
}

// Server is a running stand-in. It is safe for concurrent use.
type Server struct {
	opts Options
	lis  net.Listener
	grpc *grpc.Server
	done chan struct{} // closed when Serve returns

	mu          sync.Mutex
	collections map[string]*collection
	calls       map[string]int // by full method name
	upserts     []Upsert       // every Upsert call, in order
	opID        uint64
}

// Start listens on 127.0.0.1:0 and serves until Close.
func Start(opts Options) (*Server, error) {
	if opts.Version == "" {
		opts.Version = DefaultVersion
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("qdranttest: listen: %w", err)
	}
	s := &Server{
		opts:        opts,
		lis:         lis,
		done:        make(chan struct{}),
		collections: map[string]*collection{},
		calls:       map[string]int{},
	}
	s.grpc = grpc.NewServer(
		grpc.ChainUnaryInterceptor(s.record, s.authorize),
		grpc.MaxRecvMsgSize(maxMessage),
		grpc.MaxSendMsgSize(maxMessage),
	)
	qc.RegisterQdrantServer(s.grpc, &qdrantService{s: s})
	qc.RegisterCollectionsServer(s.grpc, &collectionsService{s: s})
	qc.RegisterPointsServer(s.grpc, &pointsService{s: s})
	go func() {
		defer close(s.done)
		_ = s.grpc.Serve(lis) // returns when Close stops the server
	}()
	return s, nil
}

// Addr is the host:port the server listens on.
func (s *Server) Addr() string { return s.lis.Addr().String() }

// Close stops the server, dropping open connections, and waits for it.
func (s *Server) Close() {
	s.grpc.Stop()
	<-s.done
}

// Calls reports how many calls the method (a full gRPC method name such
// as "/qdrant.Points/Upsert") has received, refused ones included.
func (s *Server) Calls(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[method]
}

// Upsert describes one Upsert call the server received.
type Upsert struct {
	Collection string
	Points     int
	Wait       bool
}

// Upserts reports every Upsert call that passed the API-key check, in
// order, rejected ones included.
func (s *Server) Upserts() []Upsert {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.upserts)
}

// record counts calls and logs failures.
func (s *Server) record(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	s.mu.Lock()
	s.calls[info.FullMethod]++
	s.mu.Unlock()
	resp, err := handler(ctx, req)
	if err != nil {
		s.opts.Log.Info("qdranttest: call failed", "method", info.FullMethod, "err", err)
	}
	return resp, err
}

// authorize checks the API key as Qdrant does: the health check is open,
// everything else needs the api-key header or a bearer token.
func (s *Server) authorize(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if s.opts.APIKey == "" || info.FullMethod == "/qdrant.Qdrant/HealthCheck" {
		return handler(ctx, req)
	}
	md, _ := metadata.FromIncomingContext(ctx)
	var got string
	if v := md.Get("api-key"); len(v) > 0 {
		got = v[0]
	} else if v := md.Get("authorization"); len(v) > 0 {
		got, _ = strings.CutPrefix(v[0], "Bearer ")
	} else {
		return nil, status.Error(codes.PermissionDenied, "Must provide an API key or an Authorization bearer token")
	}
	if subtle.ConstantTimeCompare([]byte(got), []byte(s.opts.APIKey)) != 1 {
		return nil, status.Error(codes.PermissionDenied, "Invalid API key or JWT")
	}
	return handler(ctx, req)
}

// collectionLocked returns the named collection or Qdrant's NotFound.
func (s *Server) collectionLocked(name string) (*collection, error) {
	c, ok := s.collections[name]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "Not found: Collection `%s` doesn't exist!", name)
	}
	return c, nil
}

// updateResultLocked is the result of a write; Qdrant applies writes in
// order, and the stand-in applies them before answering either way.
func (s *Server) updateResultLocked(wait bool) *qc.UpdateResult {
	s.opID++
	st := qc.UpdateStatus_Acknowledged
	if wait {
		st = qc.UpdateStatus_Completed
	}
	return &qc.UpdateResult{OperationId: qc.PtrOf(s.opID), Status: st}
}

// qdrantService is the qdrant.Qdrant service: the health check.
type qdrantService struct {
	qc.UnimplementedQdrantServer
	s *Server
}

func (q *qdrantService) HealthCheck(context.Context, *qc.HealthCheckRequest) (*qc.HealthCheckReply, error) {
	return &qc.HealthCheckReply{Title: "qdrant - vector search engine", Version: q.s.opts.Version}, nil
}

// invalid is Qdrant's InvalidArgument for bad input.
func invalid(format string, args ...any) error {
	return status.Error(codes.InvalidArgument, "Wrong input: "+fmt.Sprintf(format, args...))
}

// unsupported answers requests outside the stand-in's subset.
func unsupported(what string) error {
	return status.Errorf(codes.Unimplemented, "qdranttest: %s is not supported by the stand-in", what)
}

var errNoID = errors.New("Empty ID is not allowed")
