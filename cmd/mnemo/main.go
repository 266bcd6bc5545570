// Command mnemo is the client of the mnemo companion.
//
//	mnemo                 chat line by line with the local hearth
//	mnemo send "text"     send one message and stream the reply
//	mnemo history         print the recent conversation
//	mnemo ping [-wait d]  check that hearth answers
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/mnemo/mnemo/ipc"
	"github.com/mnemo/mnemo/tui"
)

var version = "dev"

const usage = `usage: mnemo [-addr host:port] [-token-file path] [command]

commands:
  chat            chat line by line (the default)
  send TEXT...    send one message and stream the reply
  history         print the recent conversation
  ping [-wait D]  check that hearth answers, waiting up to D

The token comes from APP_AUTH_TOKEN, else from the file hearth writes.
`

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "mnemo:", err)
		os.Exit(1)
	}
}

func run() error {
	fs := flag.NewFlagSet("mnemo", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(os.Stderr, usage) }
	addr := fs.String("addr", "", "hearth address (default 127.0.0.1:$MNEMO_HEARTH_PORT or 127.0.0.1:7744)")
	tokenFile := fs.String("token-file", "", "auth token file (default: APP_AUTH_TOKEN, else hearth's token file)")
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	o := tui.Options{Addr: *addr, Client: "mnemo/" + version}
	if o.Addr == "" {
		a, err := ipc.DefaultAddr(os.Getenv)
		if err != nil {
			return err
		}
		o.Addr = a
	}
	token := func() (string, error) {
		if *tokenFile != "" {
			return ipc.ReadTokenFile(*tokenFile)
		}
		return ipc.DiscoverToken(os.Getenv)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	args := fs.Args()
	cmd := "chat"
	if len(args) > 0 {
		cmd, args = args[0], args[1:]
	}
	if cmd == "ping" {
		return ping(ctx, o, token, args)
	}
	var err error
	if o.Token, err = token(); err != nil {
		return err
	}
	switch cmd {
	case "chat":
		return tui.Chat(ctx, o, os.Stdin, os.Stdout)
	case "send":
		text := strings.Join(args, " ")
		if strings.TrimSpace(text) == "" {
			return errors.New(`send needs the text: mnemo send "hello"`)
		}
		return tui.Send(ctx, o, text, os.Stdout)
	case "history":
		return tui.History(ctx, o, os.Stdout)
	default:
		return fmt.Errorf("unknown command %q\n%s", cmd, usage)
	}
}

// ping checks that hearth answers. With -wait it keeps trying, token
// discovery included: a hearth starting for the first time writes its
// token file only as it boots.
func ping(ctx context.Context, o tui.Options, token func() (string, error), args []string) error {
	pfs := flag.NewFlagSet("ping", flag.ContinueOnError)
	wait := pfs.Duration("wait", 0, "keep trying this long")
	if err := pfs.Parse(args); err != nil {
		return err
	}
	if *wait == 0 {
		var err error
		if o.Token, err = token(); err != nil {
			return err
		}
		dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		return tui.PingOnce(dctx, o)
	}
	ctx, cancel := context.WithTimeout(ctx, *wait)
	defer cancel()
	for {
		tok, err := token()
		if err == nil {
			o.Token = tok
			return tui.Ping(ctx, o)
		}
		if !errors.Is(err, ipc.ErrNoToken) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
}
