package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/mnemo/mnemo/hearth/config"
	"github.com/mnemo/mnemo/hearth/daemon"
	"github.com/mnemo/mnemo/hearth/local"
	"github.com/mnemo/mnemo/ipc"
	"github.com/mnemo/mnemo/tui"
)

type localOptions struct {
	root, vectors, client string
}

// runLocal runs cmd against hearth's core in this process: the in-process
// door instead of a socket, over the same memory root a daemon would own.
func runLocal(ctx context.Context, lo localOptions, cmd string, args []string, hq tui.HistoryOptions) error {
	if cmd != "tui" && cmd != "send" && cmd != "history" && cmd != "status" {
		return usagef("%q is not available with --local (use tui, send, history or status)", cmd)
	}
	log, closeLog, err := tui.OpenLog(os.Getenv, slog.LevelInfo)
	if err != nil {
		return err
	}
	defer closeLog.Close()
	log.Info("mnemo --local starting", "version", version, "root", lo.root)

	// The same configuration as hearth's (file, environment), with the
	// root and vectors this command names.
	cfg, err := config.Load(config.LoadOptions{})
	if err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	if lo.root != "" {
		cfg.Root.Value = lo.root
	}
	if lo.vectors != "" {
		cfg.Recall.Vectors.Value = lo.vectors
	}
	sys, err := daemon.Open(ctx, cfg, daemon.Runtime{Version: version, Local: true, Log: log})
	if err != nil {
		return &tui.UnreachableError{Err: err} // the core could not be opened here
	}
	core := sys.Core()
	coreCtx, stopCore := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Go(func() { core.Run(coreCtx) })
	defer func() {
		stopCore()
		wg.Wait()
		sys.Close()
	}()

	o := tui.Options{Client: lo.client, Dial: func(ctx context.Context) (tui.Conn, error) {
		c, err := local.Dial(ctx, core, local.Options{Name: lo.client, Log: log})
		if err != nil {
			return nil, err
		}
		return c, nil
	}}
	switch cmd {
	case "tui":
		c := local.New(core, local.Options{Name: lo.client, Log: log})
		echo, err := voiceEcho(os.Getenv)
		if err != nil {
			return usagef("%v", err)
		}
		return runGuarded(log, func(out *os.File) error {
			return tui.Run(ctx, tui.RunOptions{Addr: "local · " + sys.RootDir(), Client: lo.client, Session: teaSession{c}, Log: log,
				Audio: newAudio(os.Getenv, log), VoiceEcho: echo, Output: out}) // audio.go
		})
	case "send":
		return tui.Send(ctx, o, strings.Join(args, " "), os.Stdout)
	case "history":
		return tui.History(ctx, o, hq, os.Stdout)
	case "status":
		return tui.Status(ctx, o, os.Stdout)
	}
	return fmt.Errorf("%q is not available with --local (use tui, send, history or status)", cmd)
}

// teaSession is the in-process client as the UI's session.
type teaSession struct{ c *local.Client }

func (s teaSession) Send(m ipc.Msg) { s.c.Send(m) }
func (s teaSession) Run(ctx context.Context, send func(tea.Msg)) error {
	return s.c.Run(ctx, func(m any) { send(m) })
}
