// Command hearth is the mnemo daemon: it keeps the conversation, the
// memory and the model, and serves mnemo clients over NDJSON/TCP.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/mnemo/mnemo/hearth"
	"github.com/mnemo/mnemo/hearth/daemon"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "hearth:", err)
		os.Exit(1)
	}
}

func run() error {
	var o daemon.Options
	flag.StringVar(&o.Addr, "addr", "", "listen address (default 127.0.0.1:$MNEMO_HEARTH_PORT or 127.0.0.1:7744)")
	flag.BoolVar(&o.ListenRemote, "listen-remote", false, "allow a non-loopback -addr (requires APP_AUTH_TOKEN)")
	flag.StringVar(&o.Root, "root", "", "memory root directory (default $XDG_DATA_HOME/mnemo)")
	flag.IntVar(&o.HistoryTurns, "history", 50, "turns sent to a client when it connects")
	flag.StringVar(&o.Gateway, "gateway", "", "gateway.json listing MCP servers (default $XDG_CONFIG_HOME/mnemo/gateway.json)")
	flag.StringVar(&o.TokenFile, "token-file", "", "auth token file, used when APP_AUTH_TOKEN is unset (default $XDG_CONFIG_HOME/mnemo/token)")
	flag.DurationVar(&o.ToolTimeout, "tool-timeout", 60*time.Second, "bound on one tool call (a tool may declare its own)")
	flag.DurationVar(&o.ConfirmTimeout, "confirm-timeout", 2*time.Minute, "how long a confirm-class tool waits for the owner; silence means no")
	flag.IntVar(&o.MaxIterations, "max-iterations", 0, "safety bound on model calls in one turn (0: none)")
	flag.StringVar(&o.Vectors, "vectors", "", "word-vector file of the offline embedder (default $MNEMO_VECTORS or $XDG_CACHE_HOME/mnemo/wink-sg100-100k.bin; `make vectors` builds it)")
	flag.IntVar(&o.ContextBudget, "context-budget", hearth.DefaultContextTokens, "tokens of conversation the model gets each turn: recent turns, relevant older turns and tool results (shares and an override in preferences.json)")
	level := flag.String("log-level", "info", "log level: debug, info, warn, error")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: hearth [flags]          serve\n       hearth [flags] reindex  rebuild the recall index from the journal (stop hearth first)\n\nflags:\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	reindex := false
	switch {
	case flag.NArg() == 1 && flag.Arg(0) == "reindex":
		reindex = true
	case flag.NArg() > 0:
		return fmt.Errorf("unexpected arguments %q", flag.Args())
	}

	var lv slog.Level
	if err := lv.UnmarshalText([]byte(*level)); err != nil {
		return fmt.Errorf("-log-level: %w", err)
	}
	o.Log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lv}))
	o.Version = version
	o.Getenv = os.Getenv

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if reindex {
		return daemon.Reindex(ctx, o, os.Stdout)
	}
	return daemon.Run(ctx, o)
}
