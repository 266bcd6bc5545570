package daemon

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/mnemo/mnemo/data"
	"github.com/mnemo/mnemo/hearth"
	"github.com/mnemo/mnemo/hearth/auth"
	"github.com/mnemo/mnemo/hearth/config"
	"github.com/mnemo/mnemo/hearth/httpdoor"
	"github.com/mnemo/mnemo/hearth/llm"
	"github.com/mnemo/mnemo/hearth/ndjson"
	"github.com/mnemo/mnemo/hearth/telemetry"
	"github.com/mnemo/mnemo/hearth/tools"
	"github.com/mnemo/mnemo/hearth/voicekey"
	"github.com/mnemo/mnemo/ipc"
	"github.com/mnemo/mnemo/memory"
	"github.com/mnemo/mnemo/memory/graph"
	"github.com/mnemo/mnemo/memory/journal"
	"github.com/mnemo/mnemo/memory/recall/indexer"
	"github.com/mnemo/mnemo/memory/recollect"
	"github.com/mnemo/mnemo/memory/vault"
)

// Runtime is what a run of hearth needs besides its configuration.
type Runtime struct {
	Version string
	Log     *slog.Logger
	// Ready, when set, is called with the bound address once hearth
	// accepts connections.
	Ready func(net.Addr)
	// Local says the core runs inside a client (`mnemo --local`), not as
	// the daemon: it holds the memory root as such.
	Local bool

	// recallRetry is how opening recall backs off; zero takes the
	// defaults (tests shorten it).
	recallRetry recollect.RetryPolicy
	// ownerToken is the shared token, the owner's (set by Run).
	ownerToken string
}

func (rt *Runtime) setDefaults() {
	if rt.Log == nil {
		rt.Log = slog.New(slog.DiscardHandler)
	}
}

// InjectedSentinel marks text that hearth injects as context, so that it
// is never harvested back into memory.
const InjectedSentinel = indexer.InjectedSentinel

// Run boots hearth and serves until ctx ends: it binds the listener first
// (a second hearth on the same port fails before touching anything), then
// opens the memory root with its version history, the journal, memory and
// the tools, builds the core, and runs it with the NDJSON door.
//
// cfg has been validated by config.Load: its listen address is loopback
// unless the owner asked otherwise with a token.
func Run(ctx context.Context, cfg *config.Config, rt Runtime) error {
	rt.setDefaults()
	log := rt.Log
	addr := cfg.Addr.Value
	token, err := authToken(cfg)
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
	// The HTTP door binds with the NDJSON port, before the root is touched.
	var httpLn net.Listener
	if a := cfg.HTTPAddr.Value; a != "" {
		if httpLn, err = lc.Listen(ctx, "tcp", a); err != nil {
			return fmt.Errorf("listen for HTTP on %s: %w", a, err)
		}
		defer httpLn.Close()
	}

	var tlsCfg *tls.Config
	var fingerprint string
	if cfg.TLS.Value {
		if tlsCfg, fingerprint, err = auth.ServerTLS(authDir(cfg)); err != nil {
			return err
		}
		log.Info("TLS on; clients pin this certificate", "fingerprint", fingerprint)
	}
	rt.ownerToken = token
	s, err := open(ctx, cfg, rt, ln.Addr().String())
	if err != nil {
		return err
	}
	defer s.Close()
	// The door and the core stop together: on ctx, when the door fails
	// (its listener broke), so that hearth does not run deaf, or when the
	// owner asks over the protocol (mnemo stop), as SIGTERM does.
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	var metrics *telemetry.Metrics
	var metricsWait func() error
	if httpLn != nil {
		// Telemetry is served by the HTTP door (/metrics), so it is
		// kept when there is one.
		reg := prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		metrics = telemetry.New(reg)
		if metricsWait, err = metrics.Watch(ctx, s.core); err != nil {
			return err
		}
	}
	door, err := ndjson.New(s.core, ndjson.Options{Token: token, Auth: s.auth, Throttle: s.throttle, Limiter: s.limiter, Metrics: metrics,
		TLS: tlsCfg, Fingerprint: fingerprint, Log: log, Shutdown: stop})
	if err != nil {
		return err
	}
	var web *httpdoor.Door
	if httpLn != nil {
		web, err = httpdoor.New(s.core, httpdoor.Options{
			Metrics:  metrics,
			Auth:     s.auth,
			Throttle: s.throttle,
			Limiter:  s.limiter,
			Models:   s.models,
			Embedder: embedder{s.mem},
			Log:      log,
			Version:  rt.Version,
		})
		if err != nil {
			return err
		}
		log.Info("http door listening", "http_addr", httpLn.Addr().String())
	}
	log.Info("listening", "addr", ln.Addr().String(), "root", s.root.Dir())
	if rt.Ready != nil {
		rt.Ready(ln.Addr())
	}
	var wg sync.WaitGroup
	var serveErr error
	wg.Go(func() {
		defer stop()
		serveErr = door.Serve(ctx, ln)
	})
	var httpErr error
	if web != nil {
		wg.Go(func() {
			defer stop()
			httpErr = web.Serve(ctx, httpLn)
		})
	}
	var telemetryErr error
	if metricsWait != nil {
		wg.Go(func() { telemetryErr = metricsWait() })
	}
	runErr := s.core.Run(ctx)
	wg.Wait()
	return errors.Join(runErr, serveErr, httpErr, telemetryErr)
}

// embedder is recall's embedder as the HTTP door asks for it.
type embedder struct{ mem *recollect.Memory }

func (e embedder) Embed(ctx context.Context, texts []string) (string, [][]float32, error) {
	name, vecs, err := e.mem.Embed(ctx, texts)
	if errors.Is(err, recollect.ErrNoEmbedder) {
		err = fmt.Errorf("%w: %w", httpdoor.ErrNoEmbedder, err)
	}
	return name, vecs, err
}

// Open assembles hearth's core over the memory root o names, for a process
// that is its own client (`mnemo --local`): the caller runs the core
// (System.Core().Run) and closes the System when done.
func Open(ctx context.Context, cfg *config.Config, rt Runtime) (*System, error) {
	rt.setDefaults()
	return open(ctx, cfg, rt, "")
}

// RootDir is the memory root's directory.
func (s *System) RootDir() string { return s.root.Dir() }

// Core is the assembled core.
func (s *System) Core() *hearth.Hearth { return s.core }

// System is hearth assembled: the memory root, the journal, memory, the
// tools and the core over them.
type System struct {
	// auth is the auth layer of every door (devices, rules, pairing);
	// throttle slows guessing sources at every door.
	auth     *auth.Store
	throttle *auth.Throttle
	limiter  *auth.Limiter // per identity, every door's

	lock     *memory.RootLock
	root     *memory.Root
	journal  *journal.Journal
	core     *hearth.Hearth
	registry *tools.Registry
	log      *slog.Logger
	models   *preferences      // the model of each turn
	mem      *recollect.Memory // recall
	// stopRecall ends recall's background work; recallDone closes after.
	stopRecall context.CancelFunc
	recallDone chan struct{}
	// stopEntities ends the entity graph's background work, saving it.
	stopEntities func()
}

// open assembles hearth over the memory root o names.
func open(ctx context.Context, cfg *config.Config, rt Runtime, addr string) (_ *System, err error) {
	log := rt.Log
	rootDir, err := filepath.Abs(cfg.Root.Value)
	if err != nil {
		return nil, fmt.Errorf("memory root: %w", err)
	}
	lock, err := lockRoot(rootDir, rt.Local, addr)
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
	// The vault lays itself out in the root and commits what it created;
	// a failed commit leaves the files written for the next commit.
	vlt, err := vault.Open(ctx, root.Dir(), data.Vault(), log)
	var cerr *vault.CommitError
	if errors.As(err, &cerr) {
		log.Warn("vault: the layout is written but not committed", "err", err)
	} else if err != nil {
		return nil, fmt.Errorf("open vault: %w", err)
	}
	// What the owner edited while hearth was stopped is theirs: the core
	// commits it as "owner" in the background once it runs (see
	// hearth's vault keeper), off the start-up path.
	j, err := journal.Open(root.ThreadsDir(), journalOptions(root, log))
	if err != nil {
		return nil, fmt.Errorf("open journal: %w", err)
	}
	s.journal = j

	prefs := newPreferences(cfg, root.Dir(), log)
	// No provider is a choice (history only) until a turn needs a model:
	// that turn warns, and its client is told what to set.
	if _, err := prefs.Resolve(); errors.Is(err, llm.ErrNoProvider) {
		log.Info("no model provider configured: hearth serves history but cannot answer yet", "hint", err.Error())
	} else if err != nil {
		log.Warn("the model provider is not usable yet: hearth serves history and says what to fix", "err", err)
	}

	// Recall opens in the background (a large index takes seconds to
	// load) while hearth already serves, retrying while its backend is
	// unreachable; until it is up, and if its configuration is wrong,
	// memory search falls back to keywords over the journal.
	recallCtx, stopRecall := context.WithCancel(context.WithoutCancel(ctx))
	s.stopRecall = stopRecall
	mem := recollect.New(recollect.Options{Root: root.Dir(), Journal: j, Session: hearth.MainConversation, Settings: recallSettings(cfg), Retry: rt.recallRetry, Log: log})
	go func() {
		defer close(s.recallDone)
		mem.Run(recallCtx)
	}()

	var notesCore atomic.Pointer[hearth.Hearth] // the entity notes are written through it once it is up
	entities, stopEntities := startEntities(ctx, root, j, vlt, &notesCore, log)
	s.stopEntities = stopEntities

	// The auth layer lives beside the token file: auth.json, the TLS
	// certificate. A client's own core (--local) keeps none.
	dir := authDir(cfg)
	if rt.Local {
		dir = ""
	}
	authStore, err := auth.Open(auth.Options{Dir: dir, OwnerToken: rt.ownerToken})
	if err != nil {
		return nil, err
	}
	s.auth, s.throttle = authStore, auth.NewThrottle(auth.ThrottleOptions{})
	s.limiter = auth.NewLimiter(auth.LimiterOptions{PerMinute: cfg.RateLimits()})

	var core *hearth.Hearth // the cache_store tool commits through it
	s.registry = tools.New(tools.Options{
		GatewayPath: cfg.Gateway.Value,
		ManifestDir: filepath.Join(root.Dir(), "tools"),
		Builtins: append([]tools.Builtin{
			tools.CurrentTime(time.Now),
			// Through the core: the search is expanded with the entities.
			tools.MemorySearch(func(ctx context.Context, req memory.SearchRequest) ([]memory.Hit, error) {
				return core.Search(ctx, req)
			}),
			tools.MemoryEntities(func(_ context.Context, q graph.Query) ([]graph.Entity, error) {
				return core.FindEntities(q)
			}),
			tools.MemoryRelated(func(_ context.Context, name string, limit int) (graph.Entity, []graph.Neighbor, error) {
				return core.RelatedEntities(name, limit)
			}),
			tools.CacheStore(func(ctx context.Context, label, content string) (string, error) {
				return core.Keep(ctx, label, content)
			}),
			tools.Forget(func(ctx context.Context, ids []string, purge bool) ([]string, []string, error) {
				res, err := core.Forget(ctx, hearth.ForgetRequest{IDs: ids, By: hearth.ByAgent, Purge: purge})
				return res.Forgotten, res.Unknown, err
			}),
			tools.MemoryPropose(func(ctx context.Context, p vault.Proposal) (tools.Proposed, error) {
				// The proposal cites the turn it answers, and the
				// earlier turns it names, in the main thread.
				for i := range p.Sources {
					if p.Sources[i].Thread == "" {
						p.Sources[i].Thread = hearth.MainConversation
					}
				}
				if cur := core.CurrentSourceIn(ctx); cur.Turn != "" && !slices.Contains(p.Sources, cur) {
					p.Sources = append(p.Sources, cur)
				}
				out, err := core.Propose(ctx, p)
				return tools.Proposed{ID: out.ID, Decision: out.Decision, Why: out.Why, Commit: out.Commit}, err
			}, vlt.Read),
			tools.MemoryRead(func(ctx context.Context, path, at string) ([]byte, string, error) {
				f, err := core.VaultRead(ctx, path, at)
				return f.Content, f.Commit, err
			}),
			tools.MemoryList(func(ctx context.Context, f vault.ListFilter) ([]vault.NoteInfo, error) {
				return core.VaultList(ctx, f)
			}),
			tools.MemoryHistory(func(ctx context.Context, path string, limit int) ([]vault.Change, error) {
				return core.VaultHistory(ctx, path, limit)
			}),
			tools.MemoryExport(func(ctx context.Context) (string, int64, error) {
				res, err := core.Export(ctx, "")
				return res.Path, res.Bytes, err
			}),
			tools.History(func(n int) ([]memory.Hit, error) {
				recs, err := j.Tail(n)
				out := make([]memory.Hit, len(recs))
				for i, r := range recs {
					out[i] = recollect.Provenance(r, hearth.MainConversation)
				}
				return out, err
			}),
		}, tools.AuthTools(authStore)...),
		Log: log,
	})
	voice, err := voiceMinter(cfg, log)
	if err != nil {
		return nil, err
	}
	curatorCfg, jobsCfg := curatorConfigs(cfg, root.IndexDir())
	core, err = hearth.New(hearth.Config{
		Journal:        j,
		Models:         prefs,
		Budget:         cfg.Budget(),
		Budgets:        prefs,
		Memory:         mem,
		Entities:       entities,
		Tools:          s.registry,
		Anchor:         anchor{root},
		Voice:          voice,
		Vault:          vlt,
		ToolCatalog:    true,
		Curator:        curatorCfg,
		Jobs:           jobsCfg,
		HistoryTurns:   cfg.HistoryTurns.Value,
		ToolTimeout:    cfg.ToolTimeout.Value,
		ConfirmTimeout: cfg.ConfirmTimeout.Value,
		MaxIterations:  cfg.MaxIterations.Value,
		Version:        rt.Version,
		Log:            log,
		// A cache of what the journal says (DESIGN.md "Conversations").
		ConversationsFile: filepath.Join(root.IndexDir(), "conversations.json"),
	})
	if err != nil {
		return nil, err
	}
	notesCore.Store(core)
	prefs.mu.Lock()
	prefs.announce = core.Announce
	prefs.mu.Unlock()
	s.core, s.models, s.mem = core, prefs, mem
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
	if s.stopEntities != nil {
		s.stopEntities()
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
	h := memory.Holder{Mode: memory.ModeDaemon, Addr: addr}
	if local {
		h.Mode = memory.ModeLocal
	}
	lock, err := memory.LockRoot(dir, h)
	var held *memory.HeldError
	switch {
	case !errors.As(err, &held):
		return lock, err
	case local && held.Holder.Mode == memory.ModeDaemon:
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

// authDir is where auth.json and the TLS certificate live: beside the
// token file, in hearth's config dir.
func authDir(cfg *config.Config) string {
	if cfg.TokenFile.Value == "" {
		return ""
	}
	return filepath.Dir(cfg.TokenFile.Value)
}

// Auth is hearth's auth layer, for the other doors (the HTTP door).
func (s *System) Auth() *auth.Store { return s.auth }

// Throttle is the failed-credential throttle every door shares.
func (s *System) Throttle() *auth.Throttle { return s.throttle }

// authToken returns APP_AUTH_TOKEN, else the token file's, minting the
// file (0600) on first start.
func authToken(cfg *config.Config) (string, error) {
	if t := strings.TrimSpace(cfg.AuthToken.Value.Reveal()); t != "" {
		return t, nil
	}
	path := cfg.TokenFile.Value
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

// voiceMinter is the configured voice provider's minter; nil (no
// voice) when none is configured.
func voiceMinter(cfg *config.Config, log *slog.Logger) (hearth.VoiceMinter, error) {
	provider, key := cfg.VoiceProvider()
	if provider == "" {
		log.Info("no voice provider configured: voice_request is refused with what to set")
		return nil, nil
	}
	v := cfg.Voice
	vad := hearth.VoiceVAD{Type: v.VAD.Value}
	if vad.Type == config.VADServer {
		vad.Threshold, vad.Silence, vad.PrefixPadding = v.VADThreshold.Value, v.VADSilence.Value, v.VADPrefixPadding.Value
	}
	m, err := voicekey.New(voicekey.Settings{
		Provider: provider, Key: key.Reveal(), BaseURL: v.BaseURL.Value,
		Model: v.Model.Value, Voice: v.Voice.Value, Transcription: v.TranscriptionModel.Value,
		VAD: vad, Log: log,
	})
	if err != nil {
		return nil, fmt.Errorf("voice: %w", err)
	}
	log.Info("voice provider configured", "provider", provider)
	return m, nil
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

// Reindex drops the recall index and rebuilds it from the journal, the
// truth it derives from (`hearth reindex`). Stop hearth first: the root's
// lock refuses a reindex while hearth runs.
func Reindex(ctx context.Context, cfg *config.Config, rt Runtime, w io.Writer) error {
	rt.setDefaults()
	rootDir, err := filepath.Abs(cfg.Root.Value)
	if err != nil {
		return fmt.Errorf("memory root: %w", err)
	}
	lock, err := memory.LockRoot(rootDir, memory.Holder{Mode: memory.ModeDaemon})
	if err != nil {
		return fmt.Errorf("%w: stop it before reindexing", err)
	}
	defer lock.Close()
	root, err := memory.Open(ctx, rootDir, data.Defaults(), rt.Log)
	if err != nil {
		return err
	}
	j, err := journal.Open(root.ThreadsDir(), journalOptions(root, rt.Log))
	if err != nil {
		return fmt.Errorf("open journal: %w", err)
	}
	defer j.Close()
	return recollect.Reindex(ctx, recollect.Options{Root: root.Dir(), Journal: j, Session: hearth.MainConversation, Settings: recallSettings(cfg), Log: rt.Log}, w)
}

// journalOptions opens the journal so that damage it has warned of once
// (a torn or corrupt line) is a debug line at later starts.
func journalOptions(root *memory.Root, log *slog.Logger) journal.Options {
	return journal.Options{Log: log, Reported: filepath.Join(root.IndexDir(), "journal-reported")}
}

// recallSettings are recall's settings from the configuration.
func recallSettings(cfg *config.Config) recollect.Settings {
	r := cfg.Recall
	kind := r.Embedder.Value
	if kind == config.EmbedderAuto {
		kind = ""
	}
	return recollect.Settings{
		Embedder:     kind,
		Vectors:      r.Vectors.Value,
		EmbedModel:   r.EmbedModel.Value,
		EmbedDim:     r.EmbedDim.Value,
		EmbedBaseURL: r.EmbedBaseURL.Value,
		EmbedAPIKey:  r.EmbedKey.Value.Reveal(),
		QdrantAddr:   r.QdrantAddr.Value,
		QdrantAPIKey: r.QdrantKey.Value.Reveal(),
		QdrantTLS:    r.QdrantTLS.Value,
	}
}

// curatorConfigs are the curator's and the jobs' settings. The curator
// pass (DESIGN.md "The curator") runs with the chat's provider, with its
// flush pass unless curator.flush is off; its cursor is machine state,
// kept beside the index. The vault's jobs (DESIGN.md "Jobs") call the
// model in the background like the curator, so they follow its switch
// and model, and jobs.enabled.
func curatorConfigs(cfg *config.Config, indexDir string) (*hearth.CuratorConfig, *hearth.JobsConfig) {
	if !cfg.Curator.Enabled.Value {
		return nil, nil
	}
	c := &hearth.CuratorConfig{StateDir: filepath.Join(indexDir, "curator"), ModelName: cfg.Curator.Model.Value}
	if !cfg.Curator.Flush.Value {
		c.FlushAt = -1 // no flush pass: the window trims as without a curator
	}
	if !cfg.Jobs.Enabled.Value {
		return c, nil
	}
	return c, &hearth.JobsConfig{StateDir: filepath.Join(indexDir, "jobs"), ModelName: cfg.Curator.Model.Value}
}
