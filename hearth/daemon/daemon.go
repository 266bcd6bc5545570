package daemon

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mnemo/mnemo/data"
	"github.com/mnemo/mnemo/hearth"
	"github.com/mnemo/mnemo/hearth/llm"
	"github.com/mnemo/mnemo/hearth/ndjson"
	"github.com/mnemo/mnemo/hearth/tools"
	"github.com/mnemo/mnemo/ipc"
	"github.com/mnemo/mnemo/memory"
	"github.com/mnemo/mnemo/memory/journal"
	"github.com/mnemo/mnemo/memory/recall/indexer"
	"github.com/mnemo/mnemo/memory/recollect"
)

// Options are what cmd/hearth gathers from flags and the environment.
type Options struct {
	Addr         string // host:port; "" = 127.0.0.1 on MNEMO_HEARTH_PORT or 7744
	ListenRemote bool   // allow a non-loopback address (requires APP_AUTH_TOKEN)
	Root         string // memory root; "" = memory.DefaultDir()
	HistoryTurns int
	TokenFile    string // "" = ipc.TokenPath()
	Gateway      string // gateway.json listing MCP servers; "" = $XDG_CONFIG_HOME/mnemo/gateway.json
	// Agent bounds; zero values take Config's defaults.
	ToolTimeout    time.Duration
	ConfirmTimeout time.Duration
	MaxIterations  int
	// Vectors is the word-vector file of the offline embedder; "" means
	// MNEMO_VECTORS or $XDG_CACHE_HOME/mnemo/wink-sg100-100k.bin.
	Vectors string
	// ContextBudget is the total of the context budget in tokens
	// (-context-budget); 0 means DefaultContextTokens. PreferencesFile
	// overrides it.
	ContextBudget int
	Version       string
	Getenv        func(string) string
	Log           *slog.Logger
	// Ready, when set, is called with the bound address once hearth
	// accepts connections.
	Ready func(net.Addr)
	// Local says the core runs inside a client (`mnemo --local`), not as
	// the daemon: it holds the memory root as such.
	Local bool

	// recallRetry is how opening recall backs off; zero takes the
	// defaults (tests shorten it).
	recallRetry recollect.RetryPolicy
}

// InjectedSentinel marks text that hearth injects as context, so that it
// is never harvested back into memory.
const InjectedSentinel = indexer.InjectedSentinel

// minRemoteToken is the shortest APP_AUTH_TOKEN accepted for a network bind.
const minRemoteToken = 16

// Run boots hearth and serves until ctx ends: it binds the listener first
// (a second hearth on the same port fails before touching anything), then
// opens the memory root with its version history, the journal, memory and
// the tools, builds the core, and runs it with the NDJSON door.
func Run(ctx context.Context, o Options) error {
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	log := o.Log
	addr, err := bindAddr(o)
	if err != nil {
		return err
	}
	budget, err := baseBudget(o.ContextBudget)
	if err != nil {
		return err
	}
	token, err := authToken(o)
	if err != nil {
		return err
	}
	lc := net.ListenConfig{KeepAliveConfig: net.KeepAliveConfig{Enable: true, Idle: 30 * time.Second, Interval: 10 * time.Second, Count: 3}}
	ln, err := lc.Listen(ctx, "tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("listen on %s: %w (is hearth already running there? `mnemo --addr %s status` tells)", addr, err, addr)
	}
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	defer ln.Close()

	s, err := open(ctx, o, budget, ln.Addr().String())
	if err != nil {
		return err
	}
	defer s.Close()
	door, err := ndjson.New(s.core, ndjson.Options{Token: token, Log: log})
	if err != nil {
		return err
	}
	log.Info("listening", "addr", ln.Addr().String(), "root", s.root.Dir())
	if o.Ready != nil {
		o.Ready(ln.Addr())
	}
	var wg sync.WaitGroup
	var serveErr error
	wg.Go(func() { serveErr = door.Serve(ctx, ln) })
	runErr := s.core.Run(ctx)
	wg.Wait()
	return errors.Join(runErr, serveErr)
}

// Open assembles hearth's core over the memory root o names, for a process
// that is its own client (`mnemo --local`): the caller runs the core
// (System.Core().Run) and closes the System when done.
func Open(ctx context.Context, o Options) (*System, error) {
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	budget, err := baseBudget(o.ContextBudget)
	if err != nil {
		return nil, err
	}
	return open(ctx, o, budget, "")
}

// RootDir is the memory root's directory.
func (s *System) RootDir() string { return s.root.Dir() }

// Core is the assembled core.
func (s *System) Core() *hearth.Hearth { return s.core }

// System is hearth assembled: the memory root, the journal, memory, the
// tools and the core over them.
type System struct {
	lock     *memory.RootLock
	root     *memory.Root
	journal  *journal.Journal
	core     *hearth.Hearth
	registry *tools.Registry
	log      *slog.Logger
	// stopRecall ends recall's background work; recallDone closes after.
	stopRecall context.CancelFunc
	recallDone chan struct{}
}

// open assembles hearth over the memory root o names.
func open(ctx context.Context, o Options, budget hearth.ContextBudget, addr string) (_ *System, err error) {
	log := o.Log
	rootDir := o.Root
	if rootDir == "" {
		if rootDir, err = memory.DefaultDir(); err != nil {
			return nil, err
		}
	}
	if rootDir, err = filepath.Abs(rootDir); err != nil {
		return nil, fmt.Errorf("memory root: %w", err)
	}
	lock, err := lockRoot(rootDir, o.Local, addr)
	if err != nil {
		return nil, err
	}
	s := &System{lock: lock, log: log, recallDone: make(chan struct{})}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if s.root, err = memory.Open(ctx, rootDir, data.Defaults(), log); err != nil {
		return nil, err
	}
	root := s.root
	j, err := journal.Open(root.ThreadsDir(), journal.Options{Log: log})
	if err != nil {
		return nil, fmt.Errorf("open journal: %w", err)
	}
	s.journal = j

	prefs := newPrefsReader(root.ReadFile, log)
	resolver := newModelResolver(prefs, o.Getenv, log)
	budgets := &budgetResolver{prefs: prefs, base: budget}
	if _, err := resolver.Resolve(); errors.Is(err, llm.ErrNoProvider) {
		log.Warn("no model provider configured: hearth serves history but cannot answer", "hint", err.Error())
	} else if err != nil {
		return nil, fmt.Errorf("provider configuration: %w", err)
	}

	gateway := o.Gateway
	if gateway == "" {
		if gateway, err = defaultGatewayPath(); err != nil {
			return nil, err
		}
	}
	// Recall opens in the background (a large index takes seconds to
	// load) while hearth already serves, retrying while its backend is
	// unreachable; until it is up, and if its configuration is wrong,
	// memory search falls back to keywords over the journal.
	recallCtx, stopRecall := context.WithCancel(context.WithoutCancel(ctx))
	s.stopRecall = stopRecall
	mem := recollect.New(recollect.Options{Root: root.Dir(), Journal: j, Session: hearth.MainConversation, Settings: recallSettings(o), Retry: o.recallRetry, Log: log})
	go func() {
		defer close(s.recallDone)
		mem.Run(recallCtx)
	}()

	var core *hearth.Hearth // the cache_store tool commits through it
	s.registry = tools.New(tools.Options{
		GatewayPath: gateway,
		Builtins: []tools.Builtin{
			tools.CurrentTime(time.Now),
			tools.MemorySearch(mem.Search),
			tools.CacheStore(func(ctx context.Context, label, content string) (string, error) {
				return core.Keep(ctx, label, content)
			}),
			tools.History(func(n int) ([]memory.Hit, error) {
				recs, err := j.Tail(n)
				out := make([]memory.Hit, len(recs))
				for i, r := range recs {
					out[i] = recollect.Provenance(r, hearth.MainConversation)
				}
				return out, err
			}),
		},
		Log:    log,
		Getenv: o.Getenv,
	})
	core, err = hearth.New(hearth.Config{
		Journal:        j,
		Models:         resolver,
		Budget:         budget,
		Budgets:        budgets,
		Memory:         mem,
		Tools:          s.registry,
		Anchor:         anchor{root},
		HistoryTurns:   o.HistoryTurns,
		ToolTimeout:    o.ToolTimeout,
		ConfirmTimeout: o.ConfirmTimeout,
		MaxIterations:  o.MaxIterations,
		Version:        o.Version,
		Log:            log,
	})
	if err != nil {
		return nil, err
	}
	s.core = core
	return s, nil
}

// Close stops recall and the tools and closes the journal, in that order:
// nothing writes after the journal closes. Call it after the core's Run
// has returned.
func (s *System) Close() {
	if s.stopRecall != nil {
		s.stopRecall()
		<-s.recallDone
	}
	if s.registry != nil {
		s.registry.Close()
	}
	if s.journal != nil {
		if err := s.journal.Close(); err != nil {
			s.log.Error("journal close", "err", err)
		}
	}
	if err := s.lock.Close(); err != nil {
		s.log.Error("memory root lock release", "err", err)
	}
}

// lockRoot makes this process the memory root's one owner. A root that
// a running hearth holds is refused with what to do instead.
func lockRoot(dir string, local bool, addr string) (*memory.RootLock, error) {
	h := memory.Holder{Mode: memory.HolderDaemon, Addr: addr}
	if local {
		h.Mode = memory.HolderLocal
	}
	lock, err := memory.LockRoot(dir, h)
	var held *memory.HeldError
	switch {
	case !errors.As(err, &held):
		return lock, err
	case local && held.Holder.Mode == memory.HolderDaemon:
		how := "connect to it with mnemo (without --local)"
		if held.Holder.Addr != "" {
			how = fmt.Sprintf("connect to it with `mnemo --addr %s` (without --local)", held.Holder.Addr)
		}
		return nil, fmt.Errorf("%w: %s", err, how)
	case !local:
		return nil, fmt.Errorf("%w: stop it first, or give this hearth another -root", err)
	}
	return nil, err
}

// bindAddr resolves the listen address and refuses a network bind that
// was not asked for explicitly or has no token.
func bindAddr(o Options) (string, error) {
	addr := o.Addr
	if addr == "" {
		var err error
		if addr, err = ipc.DefaultAddr(o.Getenv); err != nil {
			return "", err
		}
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("listen address %q: %w", addr, err)
	}
	if isLoopback(host) {
		return addr, nil
	}
	if !o.ListenRemote {
		return "", fmt.Errorf("refusing to listen on %s: it is not a loopback address; pass -listen-remote to serve the network", addr)
	}
	if len(strings.TrimSpace(o.Getenv("APP_AUTH_TOKEN"))) < minRemoteToken {
		return "", fmt.Errorf("refusing to listen on %s without a token: set APP_AUTH_TOKEN (at least %d characters)", addr, minRemoteToken)
	}
	return addr, nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// authToken returns APP_AUTH_TOKEN, else the token file's, minting the
// file (0600) on first start.
func authToken(o Options) (string, error) {
	if t := strings.TrimSpace(o.Getenv("APP_AUTH_TOKEN")); t != "" {
		return t, nil
	}
	path := o.TokenFile
	if path == "" {
		var err error
		if path, err = ipc.TokenPath(); err != nil {
			return "", err
		}
	}
	tok, err := ipc.ReadTokenFile(path)
	if err == nil {
		return tok, nil
	}
	if !errors.Is(err, ipc.ErrNoToken) {
		return "", err
	}
	return mintToken(path)
}

func mintToken(path string) (string, error) {
	var b [32]byte
	rand.Read(b[:])
	tok := base64.RawURLEncoding.EncodeToString(b[:])
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("create token dir: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return ipc.ReadTokenFile(path) // another hearth won the race
	}
	if err != nil {
		return "", fmt.Errorf("create token file: %w", err)
	}
	if _, err := f.WriteString(tok + "\n"); err != nil {
		f.Close()
		return "", fmt.Errorf("write token file: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return "", fmt.Errorf("write token file: %w", err)
	}
	return tok, f.Close()
}

// anchor is the one system message that opens every session: the agent's
// instructions and the continuity anchor, marked as injected.
type anchor struct{ root *memory.Root }

func (a anchor) SessionContext() ([]llm.Message, error) {
	root := a.root
	var b strings.Builder
	b.WriteString(InjectedSentinel + "\n")
	var errs []error
	if agent, err := root.ReadFile("AGENT.md"); err != nil {
		errs = append(errs, err)
	} else {
		b.Write(agent)
		b.WriteString("\n\n")
	}
	if anchor, err := root.ReadFile("continuity.json"); err != nil {
		errs = append(errs, err)
	} else {
		b.WriteString("## Continuity anchor (continuity.json)\n\n```json\n")
		b.Write(anchor)
		b.WriteString("\n```\n")
	}
	return []llm.Message{{Role: "system", Content: b.String()}}, errors.Join(errs...)
}

// defaultGatewayPath is gateway.json beside the token, outside the memory
// root: it may hold bearer tokens, which must never be committed.
func defaultGatewayPath() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("locate config dir: %w", err)
	}
	return filepath.Join(dir, "mnemo", "gateway.json"), nil
}

// Reindex drops the recall index and rebuilds it from the journal, the
// truth it derives from (`hearth reindex`). Stop hearth first: the index
// has one writer.
func Reindex(ctx context.Context, o Options, w io.Writer) error {
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	rootDir := o.Root
	if rootDir == "" {
		var err error
		if rootDir, err = memory.DefaultDir(); err != nil {
			return err
		}
	}
	root, err := memory.Open(ctx, rootDir, data.Defaults(), o.Log)
	if err != nil {
		return err
	}
	j, err := journal.Open(root.ThreadsDir(), journal.Options{Log: o.Log})
	if err != nil {
		return fmt.Errorf("open journal: %w", err)
	}
	defer j.Close()
	return recollect.Reindex(ctx, recollect.Options{Root: root.Dir(), Journal: j, Session: hearth.MainConversation, Settings: recallSettings(o), Log: o.Log}, w)
}

// recallSettings reads recall's settings from the environment.
func recallSettings(o Options) recollect.Settings {
	dim, _ := strconv.Atoi(o.Getenv("MNEMO_EMBED_DIM"))
	kind := strings.ToLower(o.Getenv("MNEMO_EMBEDDER"))
	base := o.Getenv("MNEMO_EMBED_BASE_URL")
	if kind == "openai" {
		base = cmp.Or(base, o.Getenv("OPENAI_BASE_URL"))
	}
	return recollect.Settings{
		Embedder:     kind,
		Vectors:      cmp.Or(o.Vectors, o.Getenv("MNEMO_VECTORS")),
		EmbedModel:   o.Getenv("MNEMO_EMBED_MODEL"),
		EmbedDim:     dim,
		EmbedBaseURL: base,
		EmbedAPIKey:  cmp.Or(o.Getenv("MNEMO_EMBED_API_KEY"), o.Getenv("OPENAI_API_KEY")),
		QdrantAddr:   o.Getenv("MNEMO_QDRANT_ADDR"),
		QdrantAPIKey: o.Getenv("MNEMO_QDRANT_API_KEY"),
		QdrantTLS:    o.Getenv("MNEMO_QDRANT_TLS") == "1",
	}
}
