// Package embed holds mnemo's HTTP embedders: OpenAI-compatible POST
// {base}/embeddings (OpenAI, xAI, vLLM, llama.cpp, Ollama's /v1) and
// Ollama's native POST {base}/api/embed. Both implement recall.Embedder.
// The offline default, built from pretrained word vectors, is in
// memory/embed/wordvec; stand-in servers and the conformance suite are in
// memory/embed/embedtest.
//
// Inputs are sent in batches, in order; 429s, 5xx replies and transport
// failures (including a per-attempt timeout) are retried with backoff,
// honouring Retry-After; other 4xx replies are not. Empty and
// whitespace-only texts are never sent (OpenAI rejects them): they get the
// zero vector. Every reply is checked: one vector per input, all of the
// embedder's dimension.
package embed

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/mnemo/mnemo/internal/backoff"
)

// Defaults for HTTPOptions' zero fields.
const (
	DefaultBatchSize   = 64
	DefaultTimeout     = 60 * time.Second
	DefaultMaxAttempts = 3
	// MaxRetryAfter is the longest Retry-After an embedder waits out; a
	// server asking for more gets its error returned at once (Retryable,
	// with RetryAfter set) for the caller's own backoff.
	MaxRetryAfter = 30 * time.Second

	maxReply = 256 << 20 // bytes
)

// retry is the wait after a failed attempt: 250 ms, 1 s, then 2 s.
var retry = backoff.Policy{Initial: 250 * time.Millisecond, Multiplier: 4, Max: 2 * time.Second}

// delay is the wait after the given failed attempt (1-based).
func delay(attempt int) time.Duration { return retry.Delay(attempt) }

// HTTPOptions configure NewOpenAI and NewOllama.
type HTTPOptions struct {
	// BaseURL is the API root: "https://api.openai.com/v1" (the default
	// for NewOpenAI), "https://api.x.ai/v1", "http://localhost:11434/v1"
	// for an OpenAI-compatible server; "http://localhost:11434" (the
	// default for NewOllama) for Ollama's native API.
	BaseURL string
	// APIKey is sent as a bearer token. It never appears in logs or
	// errors.
	APIKey string
	// Model names the embedding model, e.g. "text-embedding-3-small",
	// "Qwen/Qwen3-Embedding-0.6B", "qwen3-embedding:0.6b". Required.
	Model string
	// Dim is the vector dimension. 0 learns it from the first reply; a
	// positive value is sent as "dimensions" (Matryoshka truncation, for
	// models that support it) and every reply must match it.
	Dim int
	// BatchSize is the most inputs per request; 0 means DefaultBatchSize.
	BatchSize int
	// HTTPClient sends the requests; nil means a client of its own over
	// http.DefaultTransport.
	HTTPClient *http.Client
	// Log receives retries (warn) and requests (debug); nil discards.
	Log *slog.Logger
	// Timeout bounds each attempt; 0 means DefaultTimeout. An attempt
	// that times out is retried like a transport failure.
	Timeout time.Duration
	// MaxAttempts is the number of attempts per batch, the first
	// included; 0 means DefaultMaxAttempts (waiting 250 ms, then 1 s;
	// further attempts wait 2 s).
	MaxAttempts int
}

// ErrDimension is wrapped by the *Error for a reply whose vectors do not
// have the embedder's dimension (or differ from each other).
var ErrDimension = errors.New("reply has vectors of the wrong dimension")

// Error is the error of an embedding request.
type Error struct {
	// Status is the HTTP status, or 0 when there was no reply (transport
	// failure, timeout, cancelled context).
	Status int
	// Retryable reports a failure worth trying again later: 429, 5xx, a
	// transport failure or a timeout.
	Retryable bool
	// RetryAfter is what the server asked the client to wait, if it did.
	RetryAfter time.Duration
	Err        error

	provider string
	secret   string // redacted from Error()
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("embed")
	if e.provider != "" {
		b.WriteString(": ")
		b.WriteString(e.provider)
	}
	if e.Status != 0 {
		fmt.Fprintf(&b, ": status %d", e.Status)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return redact(b.String(), e.secret)
}

func (e *Error) Unwrap() error { return e.Err }

func redact(s, secret string) string {
	if secret == "" {
		return s
	}
	return strings.ReplaceAll(s, secret, "[redacted]")
}

// protocol is what differs between the APIs.
type protocol interface {
	// body encodes a request for inputs (none empty).
	body(model string, dim int, inputs []string) ([]byte, error)
	// parse decodes a 200 reply into one vector per input, in input order.
	parse(data []byte, n int) ([][]float32, error)
	// message extracts the error message from an error reply.
	message(data []byte) string
}

// client is the machinery the adapters share.
type client struct {
	provider string
	proto    protocol
	url      string
	key      string
	model    string
	fixedDim bool
	batch    int
	hc       *http.Client
	log      *slog.Logger
	timeout  time.Duration
	attempts int

	dim atomic.Int64 // configured or learned; 0 until known
}

func newClient(provider, defaultBase, path string, p protocol, o HTTPOptions) *client {
	c := &client{
		provider: provider,
		proto:    p,
		url:      strings.TrimRight(cmp.Or(o.BaseURL, defaultBase), "/") + path,
		key:      o.APIKey,
		model:    o.Model,
		fixedDim: o.Dim > 0,
		batch:    o.BatchSize,
		hc:       o.HTTPClient,
		log:      o.Log,
		timeout:  o.Timeout,
		attempts: o.MaxAttempts,
	}
	if c.batch <= 0 {
		c.batch = DefaultBatchSize
	}
	if c.hc == nil {
		c.hc = &http.Client{}
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	if c.attempts <= 0 {
		c.attempts = DefaultMaxAttempts
	}
	if o.Dim > 0 {
		c.dim.Store(int64(o.Dim))
	}
	return c
}

func (c *client) name() string {
	return c.provider + ":" + c.model + ":" + strconv.FormatInt(c.dim.Load(), 10)
}

func (c *client) errorf(status int, retryable bool, format string, args ...any) *Error {
	return &Error{Status: status, Retryable: retryable, Err: fmt.Errorf(format, args...), provider: c.provider, secret: c.key}
}

// embed sends the non-empty texts in batches and assembles the reply.
func (c *client) embed(ctx context.Context, texts []string) ([][]float32, error) {
	if len(texts) == 0 {
		return [][]float32{}, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, &Error{Err: err, provider: c.provider}
	}
	if c.model == "" {
		return nil, c.errorf(0, false, "no model configured")
	}
	var idx []int
	var inputs []string
	for i, t := range texts {
		if strings.TrimSpace(t) != "" {
			idx = append(idx, i)
			inputs = append(inputs, t)
		}
	}
	out := make([][]float32, len(texts))
	for start := 0; start < len(inputs); start += c.batch {
		end := min(start+c.batch, len(inputs))
		vecs, err := c.retry(ctx, inputs[start:end])
		if err != nil {
			return nil, err
		}
		for k, v := range vecs {
			out[idx[start+k]] = v
		}
	}
	if len(inputs) < len(texts) {
		if c.dim.Load() == 0 {
			// Only empty texts, and the dimension is still unknown.
			if _, err := c.retry(ctx, []string{"dimension probe"}); err != nil {
				return nil, err
			}
		}
		dim := int(c.dim.Load())
		zeros := make([]float32, dim*(len(texts)-len(inputs)))
		for i := range out {
			if out[i] == nil {
				out[i], zeros = zeros[:dim:dim], zeros[dim:]
			}
		}
	}
	return out, nil
}

// retry makes up to c.attempts attempts at one batch.
func (c *client) retry(ctx context.Context, inputs []string) ([][]float32, error) {
	for attempt := 1; ; attempt++ {
		start := time.Now()
		vecs, err := c.once(ctx, inputs)
		if err == nil {
			c.log.LogAttrs(ctx, slog.LevelDebug, "embedded",
				slog.String("provider", c.provider), slog.String("model", c.model),
				slog.Int("inputs", len(inputs)), slog.Duration("took", time.Since(start)))
			return vecs, nil
		}
		var e *Error
		if attempt >= c.attempts || ctx.Err() != nil || !errors.As(err, &e) || !e.Retryable || e.RetryAfter > MaxRetryAfter {
			return nil, err
		}
		wait := max(delay(attempt), e.RetryAfter)
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < wait {
			return nil, err // ctx would expire while waiting
		}
		c.log.LogAttrs(ctx, slog.LevelWarn, "embedding request failed, retrying",
			slog.String("provider", c.provider), slog.String("model", c.model),
			slog.Int("status", e.Status), slog.Int("attempt", attempt), slog.Int("max_attempts", c.attempts),
			slog.Duration("wait", wait), slog.String("error", e.Error()))
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, &Error{Err: fmt.Errorf("%w while waiting to retry after: %w", ctx.Err(), err), provider: c.provider, secret: c.key}
		}
	}
}

// once makes one attempt.
func (c *client) once(ctx context.Context, inputs []string) ([][]float32, error) {
	dim := int(c.dim.Load())
	if !c.fixedDim {
		dim = 0 // a learned dimension is checked, not requested
	}
	body, err := c.proto.body(c.model, dim, inputs)
	if err != nil {
		return nil, c.errorf(0, false, "encode request: %w", err)
	}
	actx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, c.errorf(0, false, "%w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "mnemo-embed")
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, c.transportError(ctx, actx, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxReply+1))
	if err != nil {
		return nil, c.transportError(ctx, actx, err)
	}
	if len(data) > maxReply {
		return nil, c.errorf(resp.StatusCode, false, "reply larger than %d bytes", maxReply)
	}
	if resp.StatusCode != http.StatusOK {
		status := resp.StatusCode
		e := c.errorf(status, status == http.StatusTooManyRequests || status >= 500, "%s", redact(c.message(data), c.key))
		e.RetryAfter = retryAfter(resp.Header, time.Now())
		return nil, e
	}
	vecs, err := c.proto.parse(data, len(inputs))
	if err != nil {
		return nil, c.errorf(resp.StatusCode, false, "malformed reply: %w", err)
	}
	if err := c.checkDim(vecs); err != nil {
		return nil, c.errorf(resp.StatusCode, false, "%w", err)
	}
	return vecs, nil
}

// transportError classifies a failure to get a reply: the caller's
// context ending is final; anything else (including the attempt's own
// timeout) is worth retrying.
func (c *client) transportError(ctx, attempt context.Context, err error) *Error {
	if ctx.Err() != nil {
		return &Error{Err: fmt.Errorf("%w: %w", ctx.Err(), err), provider: c.provider, secret: c.key}
	}
	if attempt.Err() != nil {
		err = fmt.Errorf("attempt timed out after %v: %w", c.timeout, err)
	}
	return &Error{Retryable: true, Err: err, provider: c.provider, secret: c.key}
}

func (c *client) message(data []byte) string {
	if msg := c.proto.message(data); msg != "" {
		return msg
	}
	s := strings.TrimSpace(string(data))
	if len(s) > 512 {
		s = s[:512] + "…"
	}
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "�")
	}
	if s == "" {
		s = "empty error reply"
	}
	return s
}

// checkDim checks that every vector has the embedder's dimension, learning
// it from the first reply when it was not configured.
func (c *client) checkDim(vecs [][]float32) error {
	if len(vecs) == 0 {
		return nil
	}
	n := len(vecs[0])
	for i, v := range vecs {
		if len(v) != n || n == 0 {
			return fmt.Errorf("%w: vector %d has %d components, vector 0 has %d", ErrDimension, i, len(v), n)
		}
	}
	if c.dim.CompareAndSwap(0, int64(n)) {
		return nil
	}
	if want := c.dim.Load(); int64(n) != want {
		return fmt.Errorf("%w: got %d components, want %d", ErrDimension, n, want)
	}
	return nil
}

// retryAfter reads retry-after-ms (OpenAI) or Retry-After (seconds or an
// HTTP date); 0 if absent or invalid.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if ms, err := strconv.ParseFloat(h.Get("Retry-After-Ms"), 64); err == nil && ms > 0 && ms < 1e9 {
		return time.Duration(ms * float64(time.Millisecond))
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s > 0 && s < 1e6 {
			return time.Duration(s * float64(time.Second))
		}
		return 0
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// decode is json.Unmarshal with its error wrapped.
func decode(data []byte, v any) error {
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("decode JSON: %w", err)
	}
	return nil
}
