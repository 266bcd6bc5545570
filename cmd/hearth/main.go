// Command hearth is the mnemo daemon: it keeps the conversation, the
// memory and the model, and serves mnemo clients over NDJSON/TCP.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/mnemo/mnemo/hearth/config"
	"github.com/mnemo/mnemo/hearth/daemon"
	"github.com/mnemo/mnemo/internal/buildinfo"
	"github.com/mnemo/mnemo/internal/logfile"
)

// version is set at build time with -ldflags "-X main.version=…"; main
// falls back on the commit the toolchain recorded.
var version = "dev"

func main() {
	version = buildinfo.Version(version)
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "hearth:", err)
		os.Exit(1)
	}
}

const usage = `usage: hearth [flags]          serve
       hearth [flags] config   print the effective configuration and where each value came from
       hearth [flags] reindex  rebuild the recall index from the journal (stop hearth first)
       hearth [flags] stop     stop the hearth serving this memory root, and wait until it has
       hearth service install|uninstall|status
                               run hearth as a systemd user service (see README)

Configuration comes from, in rising precedence: defaults, the file
$XDG_CONFIG_HOME/mnemo/hearth.toml (or -config), the environment, and
flags. Secrets (API keys, APP_AUTH_TOKEN) come from the environment only.

flags:
`

func run() error {
	flags := config.Bind(flag.CommandLine)
	flag.Usage = func() {
		fmt.Fprint(flag.CommandLine.Output(), usage)
		flag.PrintDefaults()
	}
	flag.Parse()
	cmd := ""
	if flag.NArg() > 0 && flag.Arg(0) == "service" { // service.go
		s, err := userService(os.Stdout)
		if err != nil {
			return err
		}
		return s.run(context.Background(), flag.Args()[1:])
	}
	switch {
	case flag.NArg() == 1 && (flag.Arg(0) == "reindex" || flag.Arg(0) == "config" || flag.Arg(0) == "stop"):
		cmd = flag.Arg(0)
	case flag.NArg() > 0:
		return fmt.Errorf("unexpected arguments %q", flag.Args())
	}

	cfg, err := config.Load(config.LoadOptions{Flags: flags})
	if cmd == "config" {
		cfg.Print(os.Stdout)
		if err != nil {
			return errors.Join(errors.New("the configuration is invalid"), err)
		}
		return nil
	}
	if err != nil {
		return err
	}
	if cmd == "stop" {
		// hearth gives a reply in flight 10s to finish, then stores it.
		return stopHearth(context.Background(), cfg.Root.Value, 30*time.Second, os.Stdout)
	}
	log, closeLog, err := openLog(cfg, os.Stderr)
	if err != nil {
		return err
	}
	defer closeLog.Close()
	rt := daemon.Runtime{Version: version, Log: log}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if cmd == "reindex" {
		return daemon.Reindex(ctx, cfg, rt, os.Stdout)
	}
	return daemon.Run(ctx, cfg, rt)
}

// openLog is hearth's logger: at cfg's level, to cfg's log file (rotated
// by size) or else to stderr, with e-mail addresses and token-looking
// strings redacted. The closer closes the file.
func openLog(cfg *config.Config, stderr io.Writer) (*slog.Logger, io.Closer, error) {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel.Value, ReplaceAttr: logfile.Redact}
	if cfg.LogFile.Value == "" {
		return slog.New(slog.NewTextHandler(stderr, opts)), io.NopCloser(nil), nil
	}
	backups := cfg.LogBackups.Value
	if backups == 0 {
		backups = -1 // logfile's "none"
	}
	f, err := logfile.Open(cfg.LogFile.Value, logfile.Options{
		MaxBytes: int64(cfg.LogMaxSize.Value) << 20,
		Backups:  backups,
		Compress: cfg.LogCompress.Value,
	})
	if err != nil {
		return nil, nil, err
	}
	return slog.New(slog.NewTextHandler(f, opts)), f, nil
}
