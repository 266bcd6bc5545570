package httpdoor

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"
	"go.yaml.in/yaml/v3"

	"github.com/mnemo/mnemo/hearth"
	"github.com/mnemo/mnemo/hearth/llm"
	"github.com/mnemo/mnemo/memory"
	"github.com/mnemo/mnemo/memory/vault"
)

// transcript is what debug=true returns to the owner: the request's
// steps with their timings (seed 002, Telemetry).
type transcript struct {
	Route string           `json:"route"`
	Steps []transcriptStep `json:"steps"`
}

type transcriptStep struct {
	Name   string  `json:"name"`
	MS     float64 `json:"ms"`
	Detail string  `json:"detail,omitempty"`
}

func (t *transcript) step(name string, d time.Duration, detail string) {
	if t == nil {
		return
	}
	t.Steps = append(t.Steps, transcriptStep{Name: name, MS: float64(d.Microseconds()) / 1000, Detail: detail})
}

// ---- /v1/query

type queryRequest struct {
	Query     string   `json:"query"`
	TopK      int      `json:"top_k"`
	Kinds     []string `json:"kinds"`
	Summarize bool     `json:"summarize"`
}

type queryResponse struct {
	Answer    *string     `json:"answer"`
	Snippets  []snippet   `json:"snippets"`
	Citations []string    `json:"citations"`
	RequestID string      `json:"request_id"`
	Debug     *transcript `json:"debug,omitempty"`
}

type snippet struct {
	ID       string  `json:"id"`
	Kind     string  `json:"kind"`
	Text     string  `json:"text"`
	Score    float64 `json:"score"`
	Citation string  `json:"citation"`
	Role     string  `json:"role,omitempty"`
	TS       string  `json:"ts,omitempty"`
	Path     string  `json:"path,omitempty"`
	Heading  string  `json:"heading,omitempty"`
}

// citation names where a hit comes from: a note by file and heading, a
// turn or tool result by its thread and id.
func citation(h memory.Hit) string {
	if h.Path != "" {
		if h.Heading != "" {
			return h.Path + "#" + h.Heading
		}
		return h.Path
	}
	return "thread:" + h.Session + "/" + h.ID
}

func (d *Door) query(c *call) error {
	var req queryRequest
	if err := readJSON(c, d.o.MaxBody, "query_request", &req); err != nil {
		return err
	}
	if req.TopK == 0 {
		req.TopK = 5
	}
	kinds := req.Kinds
	if len(kinds) == 0 {
		kinds = []string{memory.KindTurn, memory.KindKnowledge}
	}
	t0 := time.Now()
	hits, err := d.core.Search(c.r.Context(), memory.SearchRequest{Query: req.Query, K: req.TopK, Kinds: kinds})
	if err != nil {
		return err
	}
	d.o.Metrics.Search(len(hits))
	c.trace.step("retrieval", time.Since(t0), fmt.Sprintf("%d hits over %s", len(hits), strings.Join(kinds, ",")))
	out := queryResponse{Snippets: []snippet{}, Citations: []string{}, RequestID: c.id, Debug: c.trace}
	seen := map[string]bool{}
	for _, h := range hits {
		s := snippetOf(h)
		out.Snippets = append(out.Snippets, s)
		if !seen[s.Citation] {
			seen[s.Citation] = true
			out.Citations = append(out.Citations, s.Citation)
		}
	}
	if req.Summarize && len(hits) > 0 {
		t1 := time.Now()
		a, err := d.summarize(c.r.Context(), req.Query, out.Snippets)
		if err != nil {
			return err
		}
		c.trace.step("compose", time.Since(t1), "")
		out.Answer = &a
	}
	writeJSON(c, http.StatusOK, out)
	return nil
}

// summarize phrases an answer to q from the snippets with the configured
// model, citing them by number; the snippets are the only source.
func (d *Door) summarize(ctx context.Context, q string, snips []snippet) (string, error) {
	if d.o.Models == nil {
		return "", unavailable("no model provider is configured to summarize; ask without summarize", nil)
	}
	m, err := d.o.Models.Resolve()
	if err != nil || m == nil {
		return "", unavailable("no model provider is configured to summarize; ask without summarize", err)
	}
	var b strings.Builder
	for i, s := range snips {
		fmt.Fprintf(&b, "[%d] (%s) %s\n", i+1, s.Citation, s.Text)
	}
	msgs := []llm.Message{
		{Role: llm.RoleSystem, Content: "Answer the question from the numbered snippets only, citing them as [n]. If they do not answer it, say so."},
		{Role: llm.RoleUser, Content: "Snippets:\n" + b.String() + "\nQuestion: " + q},
	}
	res, err := m.Stream(ctx, llm.Request{Messages: msgs}, func(string) {})
	if err != nil {
		return "", upstream("the model provider failed to summarize; try again, or ask without summarize", err)
	}
	return res.Text, nil
}

// ---- /v1/ingest

type ingestRequest struct {
	Source    string           `json:"source"`
	Documents []ingestDocument `json:"documents"`
}

type ingestDocument struct {
	Title      string   `json:"title"`
	Content    string   `json:"content"`
	SourceURI  string   `json:"source_uri"`
	AcquiredAt string   `json:"acquired_at"`
	Version    string   `json:"version"`
	Checksum   string   `json:"checksum"`
	Owner      string   `json:"owner"`
	Tags       []string `json:"tags"`
}

type ingestResponse struct {
	Results   []ingestResult `json:"results"`
	RequestID string         `json:"request_id"`
	Debug     *transcript    `json:"debug,omitempty"`
}

type ingestResult struct {
	Index      int    `json:"index"`
	Checksum   string `json:"checksum"`
	Path       string `json:"path"`
	Status     string `json:"status"` // applied, queued, duplicate, rejected
	ProposalID string `json:"proposal_id,omitempty"`
	Why        string `json:"why,omitempty"`
}

// IngestDir is where ingested documents become knowledge notes, one file
// per checksum, so that the same document is never stored twice.
const IngestDir = "knowledge/ingested/"

func ingestPath(checksum string) string { return IngestDir + checksum[:16] + ".md" }

// ingest answers POST /v1/ingest: every document becomes a knowledge note
// proposed through the vault's policy (author job:ingest-<source>), with its
// provenance in the note's front matter; the vault indexes what it
// applies. A document whose checksum was ingested (or is waiting for
// review) is a duplicate.
func (d *Door) ingest(c *call) error {
	var req ingestRequest
	if err := readJSON(c, d.o.MaxIngest, "ingest_request", &req); err != nil {
		return err
	}
	ctx := c.r.Context()
	pending := map[string]bool{}
	if props, err := d.core.Proposals(ctx); err == nil {
		for _, p := range props {
			pending[p.Path] = true
		}
	} else {
		return err
	}
	out := ingestResponse{Results: []ingestResult{}, RequestID: c.id, Debug: c.trace}
	batch := map[string]bool{}
	for i, doc := range req.Documents {
		sum := sha256.Sum256([]byte(doc.Content))
		checksum := hex.EncodeToString(sum[:])
		if doc.Checksum != "" && !strings.EqualFold(strings.TrimPrefix(doc.Checksum, "sha256:"), checksum) {
			return &apiError{status: http.StatusConflict, typ: "invalid_request_error", code: "checksum_mismatch",
				param: fmt.Sprintf("documents[%d].checksum", i), msg: fmt.Sprintf("document %d: its checksum is not the SHA-256 of its content", i)}
		}
		p := ingestPath(checksum)
		res := ingestResult{Index: i, Checksum: "sha256:" + checksum, Path: p}
		if batch[p] || pending[p] {
			res.Status = "duplicate"
			out.Results = append(out.Results, res)
			continue
		}
		if _, err := d.core.VaultRead(ctx, p, ""); err == nil {
			res.Status = "duplicate"
			out.Results = append(out.Results, res)
			continue
		}
		batch[p] = true
		t0 := time.Now()
		note, err := ingestNote(doc, "sha256:"+checksum, req.Source, time.Now().UTC())
		if err != nil {
			return err
		}
		o, err := d.core.Propose(ctx, vault.Proposal{
			Op: vault.OpCreate, Path: p, Content: note,
			Reason: fmt.Sprintf("ingested from %s", cmpStr(doc.SourceURI, "the HTTP API")),
			// Not a turn of a thread: the document itself, by checksum.
			Sources: []vault.Source{{Thread: "ingest:" + req.Source, ExcerptSHA256: checksum}},
			Author:  "job:ingest-" + req.Source, // the vault's name for a program writing memory
		})
		if err != nil {
			return err
		}
		c.trace.step("propose", time.Since(t0), p+": "+o.Decision)
		res.ProposalID, res.Why = o.ID, o.Why
		switch o.Decision {
		case hearth.DecisionApplied:
			res.Status = "applied"
		case hearth.DecisionQueued:
			res.Status = "queued"
		default:
			res.Status = "rejected"
		}
		out.Results = append(out.Results, res)
	}
	writeJSON(c, http.StatusOK, out)
	return nil
}

func cmpStr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// ingestNote is a document as a knowledge note: front matter with its
// provenance (seed 002: source_uri, acquired_at, version, checksum,
// owner), then the content.
func ingestNote(doc ingestDocument, checksum, source string, now time.Time) (string, error) {
	acquired := now
	if doc.AcquiredAt != "" {
		t, err := time.Parse(time.RFC3339, doc.AcquiredAt)
		if err != nil {
			return "", unprocessable("acquired_at must be an RFC 3339 time", &clarify{MissingFields: []string{}, BadTypes: []string{"documents[].acquired_at"}, OutOfRange: []string{}})
		}
		acquired = t.UTC()
	}
	title := doc.Title
	if title == "" {
		title = firstLine(doc.Content)
	}
	fm := struct {
		ID         string   `yaml:"id"`
		Title      string   `yaml:"title"`
		Type       string   `yaml:"type"`
		Status     string   `yaml:"status"`
		Tags       []string `yaml:"tags,omitempty"`
		Confidence float64  `yaml:"confidence"`
		CreatedAt  string   `yaml:"created_at"`
		UpdatedAt  string   `yaml:"updated_at"`
		SourceURI  string   `yaml:"source_uri,omitempty"`
		AcquiredAt string   `yaml:"acquired_at"`
		Version    string   `yaml:"version,omitempty"`
		Checksum   string   `yaml:"checksum"`
		Owner      string   `yaml:"owner,omitempty"`
		IngestedBy string   `yaml:"ingested_by"`
	}{
		ID: ulid.Make().String(), Title: title, Type: "document", Status: "active", Tags: doc.Tags, Confidence: 0.9,
		CreatedAt: now.Format(time.RFC3339), UpdatedAt: now.Format(time.RFC3339),
		SourceURI: doc.SourceURI, AcquiredAt: acquired.Format(time.RFC3339), Version: doc.Version,
		Checksum: checksum, Owner: doc.Owner, IngestedBy: "service:" + source,
	}
	b, err := yaml.Marshal(fm)
	if err != nil {
		return "", err
	}
	body := doc.Content
	if !strings.HasSuffix(body, "\n") {
		body += "\n"
	}
	return "---\n" + string(b) + "---\n" + body, nil
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	s = strings.TrimLeft(s, "# ")
	if r := []rune(s); len(r) > 80 {
		s = string(r[:80])
	}
	if s == "" {
		return "Ingested document"
	}
	return s
}

// ---- /v1/embeddings

type embeddingsRequest struct {
	Model          string `json:"model"`
	Input          any    `json:"input"`
	EncodingFormat string `json:"encoding_format"`
	Dimensions     *int   `json:"dimensions"`
	User           string `json:"user"`
}

type embeddingList struct {
	Object    string          `json:"object"`
	Data      []embeddingItem `json:"data"`
	Model     string          `json:"model"`
	Usage     embeddingUsage  `json:"usage"`
	RequestID string          `json:"request_id"`
}

type embeddingItem struct {
	Object string `json:"object"`
	Index  int    `json:"index"`
	// Embedding is the vector as numbers, or with encoding_format
	// base64 as its little-endian float32s in base64 (what the npm
	// openai package asks for by default).
	Embedding any `json:"embedding"`
}

func base64Floats(v []float32) string {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return base64.StdEncoding.EncodeToString(b)
}

type embeddingUsage struct {
	PromptTokens int64 `json:"prompt_tokens"`
	TotalTokens  int64 `json:"total_tokens"`
}

func (d *Door) embeddings(c *call) error {
	var req embeddingsRequest
	if err := readJSON(c, d.o.MaxBody, "embeddings_request", &req); err != nil {
		return err
	}
	var texts []string
	switch v := req.Input.(type) {
	case string:
		texts = []string{v}
	case []any:
		for _, e := range v {
			s, _ := e.(string) // the schema allows strings only
			texts = append(texts, s)
		}
	}
	if d.o.Embedder == nil {
		return unavailable("no embedder is configured (MNEMO_EMBEDDER)", nil)
	}
	model, vecs, err := d.o.Embedder.Embed(c.r.Context(), texts)
	if errors.Is(err, ErrNoEmbedder) {
		return unavailable("no embedder is ready: recall is lexical only or still opening", err)
	}
	if err != nil {
		return upstream("the embedder failed; details are in hearth's log", err)
	}
	out := embeddingList{Object: "list", Data: make([]embeddingItem, len(vecs)), Model: model, RequestID: c.id}
	var toks int64
	for i, t := range texts {
		toks += int64((len(t) + 3) / 4)
		out.Data[i] = embeddingItem{Object: "embedding", Index: i, Embedding: vecs[i]}
		if req.EncodingFormat == "base64" {
			out.Data[i].Embedding = base64Floats(vecs[i])
		}
	}
	out.Usage = embeddingUsage{PromptTokens: toks, TotalTokens: toks}
	writeJSON(c, http.StatusOK, out)
	return nil
}

// ErrNoEmbedder is what an Embedder returns when it has no model to
// embed with (503).
var ErrNoEmbedder = errors.New("httpdoor: no embedder")

// ---- /v1/stats, /health

type statsResponse struct {
	State       string      `json:"state"`
	Subscribers int         `json:"subscribers"`
	Dropped     int         `json:"dropped"`
	Provider    string      `json:"provider"`
	Model       string      `json:"model"`
	Index       *indexStats `json:"index"`
	Vault       *vaultStats `json:"vault"`
	UptimeS     float64     `json:"uptime_s"`
	RequestID   string      `json:"request_id"`
}

type indexStats struct {
	Backend           string `json:"backend"`
	Embedder          string `json:"embedder"`
	Opening           bool   `json:"opening"`
	Unavailable       bool   `json:"unavailable"`
	Ready             bool   `json:"ready"`
	Rebuilding        bool   `json:"rebuilding"`
	IndexedSinceStart int    `json:"indexed_since_start"`
}

type vaultStats struct {
	Uncommitted int  `json:"uncommitted"`
	Failing     bool `json:"failing"`
}

func (d *Door) statsOf(c *call) statsResponse {
	h := d.core.Health()
	out := statsResponse{State: h.State, Subscribers: h.Subscribers, Dropped: h.Dropped, Provider: h.Provider, Model: h.Model,
		UptimeS: time.Since(d.started).Seconds(), RequestID: c.id}
	if ix := h.Index; ix != nil {
		out.Index = &indexStats{Backend: ix.Backend, Embedder: ix.Embedder, Opening: ix.Opening, Unavailable: ix.Unavailable,
			Ready: ix.Ready, Rebuilding: ix.Rebuilding, IndexedSinceStart: ix.IndexedSinceStart}
	}
	if v := h.Vault; v != nil {
		out.Vault = &vaultStats{Uncommitted: v.Uncommitted, Failing: v.Failing != ""}
	}
	return out
}

func (d *Door) stats(c *call) error {
	writeJSON(c, http.StatusOK, d.statsOf(c))
	return nil
}

type healthResponse struct {
	Status    string `json:"status"`
	RequestID string `json:"request_id"`
}

// health is open to anyone and says only that hearth answers.
func (d *Door) health(c *call) error {
	writeJSON(c, http.StatusOK, healthResponse{Status: "ok", RequestID: c.id})
	return nil
}

type detailedHealth struct {
	Status     string            `json:"status"` // ok, degraded
	Components map[string]string `json:"components"`
	Version    string            `json:"version"`
	Stats      statsResponse     `json:"stats"`
	RequestID  string            `json:"request_id"`
}

// healthDetailed is the owner's: each component's state.
func (d *Door) healthDetailed(c *call) error {
	st := d.statsOf(c)
	comp := map[string]string{"core": "ok", "model": "ok", "recall": "ok", "vault": "ok"}
	if st.Provider == "" {
		comp["model"] = "not_configured"
	}
	switch ix := st.Index; {
	case ix == nil:
		comp["recall"] = "opening"
	case ix.Unavailable:
		comp["recall"] = "unavailable"
	case ix.Opening || ix.Rebuilding || !ix.Ready:
		comp["recall"] = "catching_up"
	}
	switch v := st.Vault; {
	case v == nil:
		comp["vault"] = "none"
	case v.Failing:
		comp["vault"] = "failing"
	}
	status := "ok"
	if comp["recall"] == "unavailable" || comp["vault"] == "failing" {
		status = "degraded"
	}
	writeJSON(c, http.StatusOK, detailedHealth{Status: status, Components: comp, Version: d.o.Version, Stats: st, RequestID: c.id})
	return nil
}

// snippetOf is a hit as /v1/query and the MCP door's memory_search show it.
func snippetOf(h memory.Hit) snippet {
	s := snippet{ID: h.ID, Kind: h.Kind, Text: h.Text, Score: h.Score, Citation: citation(h), Role: h.Role, Path: h.Path, Heading: h.Heading}
	if !h.TS.IsZero() {
		s.TS = h.TS.UTC().Format(time.RFC3339Nano)
	}
	return s
}
