package qdrant

import (
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

var (
	// ErrUnavailable wraps every error caused by Qdrant being unreachable
	// or too slow (gRPC Unavailable or DeadlineExceeded). The indexer backs
	// off and retries; nothing else is wrong.
	ErrUnavailable = errors.New("qdrant unavailable")
	// ErrUnauthorized wraps every error caused by Qdrant refusing the API
	// key (gRPC PermissionDenied or Unauthenticated). Retrying will not help.
	ErrUnauthorized = errors.New("qdrant refused the api key")
	// ErrSchema is returned by Open when a collection exists but was not
	// made by this package (no "dense"/"bm25" vectors, another distance).
	// Drop it, or choose other collection names.
	ErrSchema = errors.New("qdrant collection has an unexpected schema")
	// ErrClosed is returned by calls on a closed Index.
	ErrClosed = errors.New("qdrant: index is closed")
)

// wrap gives a gRPC error from operation op on collection coll its
// context, and a sentinel the caller can test with errors.Is.
func (ix *Index) wrap(op, coll string, err error) error {
	if err == nil {
		return nil
	}
	where := "qdrant: " + op
	if coll != "" {
		where += " " + coll
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded:
		return fmt.Errorf("%s: %w at %s (is Qdrant running and is this its gRPC port, usually 6334?): %w", where, ErrUnavailable, ix.addr, err)
	case codes.PermissionDenied, codes.Unauthenticated:
		return fmt.Errorf("%s: %w at %s (check the API key): %w", where, ErrUnauthorized, ix.addr, err)
	}
	return fmt.Errorf("%s: %w", where, err)
}

// isNotFound reports whether err is Qdrant's "collection does not exist".
func isNotFound(err error) bool {
	return status.Code(err) == codes.NotFound
}
