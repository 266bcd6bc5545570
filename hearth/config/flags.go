package config

import (
	"flag"
	"time"

	"github.com/mnemo/mnemo/hearth"
)

// Flags are hearth's command-line flags, registered on a FlagSet by Bind.
// Load reads the ones given explicitly (flag.FlagSet.Visit): a flag left
// out does not override the file or the environment.
type Flags struct {
	set    *flag.FlagSet
	config string

	// The registered values; Load reads them through the FlagSet.
	addr, root, gateway, tokenFile, vectors, logLevel, logFile string
	httpAddr                                                   string
	listenRemote, logCompress, tls                             bool
	history, maxIterations, contextBudget                      int
	logMaxSize, logBackups                                     int
	toolTimeout, confirmTimeout                                time.Duration
}

// Bind registers hearth's flags on fs, with the names, defaults and help
// they have always had, and -config. Parse fs, then pass the result to
// Load.
func Bind(fs *flag.FlagSet) *Flags {
	f := &Flags{set: fs}
	fs.StringVar(&f.config, "config", "", "config file (default $XDG_CONFIG_HOME/mnemo/hearth.toml; optional)")
	fs.StringVar(&f.addr, "addr", "", "listen address (default 127.0.0.1:$MNEMO_HEARTH_PORT or 127.0.0.1:7744)")
	fs.StringVar(&f.httpAddr, "http", "", "also serve the HTTP API (OpenAI-compatible, /engine/chat, /v1/query…) on this address, e.g. 127.0.0.1:7745 (default: none)")
	fs.BoolVar(&f.listenRemote, "listen-remote", false, "allow a non-loopback -addr (requires APP_AUTH_TOKEN)")
	fs.BoolVar(&f.tls, "tls", false, "serve the port over TLS with a self-signed certificate made in the config dir; clients pin its fingerprint")
	fs.StringVar(&f.root, "root", "", "memory root directory (default $XDG_DATA_HOME/mnemo)")
	fs.IntVar(&f.history, "history", 50, "turns sent to a client when it connects")
	fs.StringVar(&f.gateway, "gateway", "", "gateway.json listing MCP servers (default $XDG_CONFIG_HOME/mnemo/gateway.json)")
	fs.StringVar(&f.tokenFile, "token-file", "", "auth token file, used when APP_AUTH_TOKEN is unset (default $XDG_CONFIG_HOME/mnemo/token)")
	fs.DurationVar(&f.toolTimeout, "tool-timeout", 60*time.Second, "bound on one tool call (a tool may declare its own)")
	fs.DurationVar(&f.confirmTimeout, "confirm-timeout", 2*time.Minute, "how long a confirm-class tool waits for the owner; silence means no")
	fs.IntVar(&f.maxIterations, "max-iterations", 0, "safety bound on model calls in one turn (0: none)")
	fs.StringVar(&f.vectors, "vectors", "", "word-vector file of the offline embedder (default $MNEMO_VECTORS or $XDG_CACHE_HOME/mnemo/wink-sg100-100k.bin; `make vectors` builds it)")
	fs.IntVar(&f.contextBudget, "context-budget", hearth.DefaultContextTokens, "tokens of conversation the model gets each turn: recent turns, relevant older turns and tool results (shares and an override in preferences.json)")
	fs.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.StringVar(&f.logFile, "log-file", "", "log to this file, rotated by size, instead of stderr (or $MNEMO_LOG_FILE)")
	fs.IntVar(&f.logMaxSize, "log-max-size", DefaultLogMaxSize, "MiB at which -log-file rotates")
	fs.IntVar(&f.logBackups, "log-backups", DefaultLogBackups, "rotated log files kept beside -log-file")
	fs.BoolVar(&f.logCompress, "log-compress", true, "gzip rotated log files")
	return f
}

// visit calls fn with each of hearth's flags given explicitly, as the
// text it was given (flag.Value.String), and -config's.
func (f *Flags) visit(fn func(name, value string)) {
	if f == nil || f.set == nil {
		return
	}
	f.set.Visit(func(fl *flag.Flag) {
		if fl.Name == "config" {
			fn(fl.Name, f.config)
			return
		}
		if _, ok := fieldByFlag(fl.Name); ok {
			fn(fl.Name, fl.Value.String())
		}
	})
}
