// Command mnemo is the client of the mnemo companion.
//
//	mnemo                 the terminal UI on the local hearth (line chat when piped)
//	mnemo --addr h:7744   the terminal UI on a remote hearth
//	mnemo chat            chat line by line
//	mnemo send "text"     send one message and stream the reply
//	mnemo history [-n N | --all] [--since T] [--json]   print the conversation
//	mnemo ping [-wait d]  check that hearth answers
//	mnemo export FILE     write the memory root to one .tar.gz
//	mnemo import FILE     restore it into a new root
//	mnemo --local ...     the same with hearth's core in this process (no daemon)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/charmbracelet/lipgloss"
	"golang.org/x/term"

	"github.com/mnemo/mnemo/internal/buildinfo"
	"github.com/mnemo/mnemo/ipc"
	"github.com/mnemo/mnemo/tui"
)

var version = "dev"

const usage = `usage: mnemo [--addr host:port] [--token-file path] [command]
       mnemo --local [--root dir] [command]

With no command, mnemo opens the terminal UI (or, when its input is not a
terminal, chats line by line). In the UI: enter sends, alt+enter or ctrl+j
starts a new line, esc cancels a reply, ctrl+c quits, /help lists the rest.
Logs go to $XDG_STATE_HOME/mnemo/mnemo.log.

commands:
  tui             the terminal UI
  help            this
  chat            chat line by line
  send TEXT...    send one message and stream the reply
  history         print the recent conversation (the turns a client gets
                  on connect, 50 by default); -n N the last N turns,
                  --all every turn, --since T those from T on (2h, 3d,
                  2026-11-01, or RFC 3339), --json one turn per line as
                  JSON, the wire's turn object
  search QUERY    search memory (turns, tool results, knowledge notes); each hit
                  shows the id mnemo forget takes (-kind, -status, -min-confidence)
  forget ID...    forget turns for good (--purge: erase their text from disk)
  memory list|read|write|edit|delete|history|pending|approve|reject
                  the vault's notes, their history, and the agent's
                  proposals to review (mnemo memory lists the commands)
  conversations   the conversations: id, title, turns, last activity
                  (--json); history --conversation ID prints one
  jobs [run NAME] the vault's jobs (daily, weekly, session summary): last run,
                  result, errors, next run; run one now (the owner only)
  status          hearth's health: agent state, model, recall index progress
  ping [-wait D]  check that hearth answers, waiting up to D
  stop            ask hearth to shut down gracefully (the owner only)
  pair [--actor A]             show a one-time code to pair a new device
  pair HOST:PORT CODE [--name N]  pair this device with that code: it
                  gets a token of its own (tls://HOST:PORT for hearth -tls)
  devices [revoke ID]          list the paired devices, or revoke one
  trust [--forget HOST:PORT]   list or forget pinned hearth certificates
  doctor [--provider]          check the set-up, each problem with its fix
                  (exit 1 if any); --provider also has hearth make one cheap
                  call to the model provider (costs a few tokens; the owner)
  export FILE     write the memory root to one .tar.gz (--root DIR: that
                  root); tar and git read it; hearth may keep running
  import FILE     restore an export into a new, empty root (--root DIR)

chat with its input piped prints each message it sends as "> text"
before the reply.

The token comes from APP_AUTH_TOKEN, else from the file hearth writes,
else (with no --addr) from the device credential mnemo pair saved, which
also names the hearth to connect to.

exit status:
  0  done
  1  the request failed: the model provider failed, hearth refused the
     message, or (chat) any message failed
  2  usage: an unknown command or flag, a missing argument
  3  hearth is unreachable, or refused this client (not running, wrong
     token, no token yet, the connection broke)

With --local, mnemo runs hearth's core in its own process over the memory
root (--root, default $XDG_DATA_HOME/mnemo) instead of connecting to a
daemon: no port, no token. A root that a running hearth holds is refused:
connect to that hearth instead. The model, recall and tools are configured
by the same environment as hearth; hearth's log goes to mnemo's.
`

// Exit statuses; usage documents them.
const (
	exitFailed      = 1
	exitUsage       = 2
	exitUnreachable = 3
)

func main() {
	version = buildinfo.Version(version)
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "mnemo:", err)
		os.Exit(exitCode(err))
	}
}

// usageError is a command line mnemo cannot carry out as written.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// exitCode is the exit status for err (see usage).
func exitCode(err error) int {
	var ue usageError
	var unreachable *tui.UnreachableError
	var netErr *net.OpError
	var refused *ipc.Error
	switch {
	case errors.As(err, &ue):
		return exitUsage
	case errors.As(err, &unreachable), errors.Is(err, ipc.ErrNoToken), errors.As(err, &netErr):
		return exitUnreachable
	case errors.As(err, &refused):
		switch refused.Code {
		case ipc.CodeUnauthorized, ipc.CodeProtocol, ipc.CodeHandshake, ipc.CodeTooManyClients:
			return exitUnreachable // commands that dial by themselves (forget, search)
		}
	}
	return exitFailed
}

func run() error {
	fs := flag.NewFlagSet("mnemo", flag.ContinueOnError)
	fs.Usage = func() {}
	fs.SetOutput(io.Discard) // run reports the error once, briefly
	addr := fs.String("addr", "", "hearth address (default 127.0.0.1:$MNEMO_HEARTH_PORT or 127.0.0.1:7744)")
	tokenFile := fs.String("token-file", "", "auth token file (default: APP_AUTH_TOKEN, else hearth's token file)")
	localMode := fs.Bool("local", false, "run hearth's core in this process instead of connecting to a daemon")
	root := fs.String("root", "", "memory root for --local (default $XDG_DATA_HOME/mnemo)")
	vectors := fs.String("vectors", "", "word-vector file for --local (default as hearth's)")
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Print(usage)
			return nil
		}
		return usagef("%w (mnemo help lists the commands and flags)", err)
	}
	o := tui.Options{Addr: *addr, Client: "mnemo/" + version}
	if o.Addr == "" {
		a, err := ipc.DefaultAddr(os.Getenv)
		if err != nil {
			return err
		}
		o.Addr = a
	}
	// A paired device connects where it paired, with its own token,
	// unless told otherwise or it has hearth's own token.
	var device *ipc.DeviceCredential
	if *addr == "" && *tokenFile == "" {
		if _, err := ipc.DiscoverToken(os.Getenv); errors.Is(err, ipc.ErrNoToken) {
			if p, perr := ipc.DevicePath(); perr == nil {
				if d, derr := ipc.ReadDevice(p); derr == nil {
					device, o.Addr = &d, d.Addr
				}
			}
		}
	}
	token := func() (string, error) {
		tok, err := ipc.DiscoverToken(os.Getenv)
		if *tokenFile != "" {
			tok, err = ipc.ReadTokenFile(*tokenFile)
		}
		if device != nil {
			tok, err = device.Token, nil
		}
		if err != nil {
			return "", &tui.UnreachableError{Err: err} // no way in: as unreachable
		}
		return tok, nil
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	args := fs.Args()
	cmd := "chat"
	if term.IsTerminal(int(os.Stdin.Fd())) && term.IsTerminal(int(os.Stdout.Fd())) {
		cmd = "tui"
	}
	if len(args) > 0 {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "help":
		fmt.Print(usage)
		return nil
	case "tui", "chat", "status", "history", "ping", "forget", "search", "devices":
	case "trust": // pair.go; needs no hearth
		return trustCmd(args, os.Stdout)
	case "pair":
		if len(args) > 0 && !strings.HasPrefix(args[0], "-") { // joining: needs no token
			return pairCmd(ctx, o.Addr, ipc.DialOptions{Client: o.Client}, args, os.Stdout)
		}
	case "doctor": // doctor.go
		checkProvider, err := doctorFlags(args)
		if err != nil {
			return err
		}
		r, gw, cerr := doctorDefaults(*root)
		if r == "" {
			return cerr
		}
		tok := func() (string, error) {
			if *tokenFile != "" {
				return ipc.ReadTokenFile(*tokenFile)
			}
			return ipc.DiscoverToken(os.Getenv)
		}
		devices, backend := doctorAudio()
		return doctor(ctx, doctorEnv{clientVersion: version, token: tok, health: askHealth(o.Addr, o.Client),
			root: r, gw: gw, free: statfsFree, now: time.Now, config: cerr,
			reach: reachServer(&http.Client{}, os.Getenv), audio: devices, audioBackend: backend,
			tls: func() string { return tlsLine(o.Addr) }, provider: doctorProvider(checkProvider, o.Addr, o.Client)}, os.Stdout)
	case "stop": // stop.go
		if *localMode {
			return usagef("stop asks a running hearth to stop; with --local there is none")
		}
	case "export": // archive.go; needs no hearth
		return exportRoot(ctx, args, *root, os.Stdout, os.Stderr)
	case "import":
		return importRoot(ctx, args, *root, os.Stdout, os.Stderr)
	case "memory":
		if _, err := memoryArgs(args); err != nil {
			return err
		}
	case "jobs": // jobs.go
		if *localMode {
			return usagef("jobs asks a running hearth; with --local there is none")
		}
	case "conversations": // conversations.go
		if *localMode {
			return usagef("conversations asks a running hearth; with --local there is none")
		}
	case "send":
		if strings.TrimSpace(strings.Join(args, " ")) == "" {
			return usagef(`send needs the text: mnemo send "hello"`)
		}
	default:
		return usagef("unknown command %q (mnemo help lists the commands)", cmd)
	}
	var hq tui.HistoryOptions
	if cmd == "history" {
		var err error
		if hq, err = historyFlags(args, time.Now()); err != nil {
			return err
		}
	}
	if *localMode {
		return runLocal(ctx, localOptions{root: *root, vectors: *vectors, client: o.Client}, cmd, args, hq)
	}
	switch cmd {
	case "ping":
		return ping(ctx, o, token, args)
	case "tui":
		return runTUI(ctx, o, *addr == "" || isLoopback(o.Addr), token)
	}
	var err error
	if o.Token, err = token(); err != nil {
		return err
	}
	switch cmd {
	case "chat":
		return tui.Chat(ctx, o, os.Stdin, os.Stdout, !term.IsTerminal(int(os.Stdin.Fd())))
	case "send":
		return tui.Send(ctx, o, strings.Join(args, " "), os.Stdout)
	case "status":
		return tui.Status(ctx, o, os.Stdout)
	case "history":
		return tui.History(ctx, o, hq, os.Stdout)
	case "forget": // forget.go
		return forget(ctx, o.Addr, ipc.DialOptions{Token: o.Token, Client: o.Client}, args, os.Stdout)
	case "memory": // memory.go
		return memoryCmd(ctx, o.Addr, ipc.DialOptions{Token: o.Token, Client: o.Client}, args, os.Stdin, os.Stdout)
	case "search":
		return search(ctx, o.Addr, ipc.DialOptions{Token: o.Token, Client: o.Client}, args, os.Stdout)
	case "stop":
		return stopHearth(ctx, o.Addr, ipc.DialOptions{Token: o.Token, Client: o.Client}, args, os.Stdout)
	case "pair": // pair.go
		return pairCmd(ctx, o.Addr, ipc.DialOptions{Token: o.Token, Client: o.Client}, args, os.Stdout)
	case "conversations": // conversations.go
		return conversationsCmd(ctx, o.Addr, ipc.DialOptions{Token: o.Token, Client: o.Client}, args, os.Stdout)
	case "jobs": // jobs.go
		return jobsCmd(ctx, o.Addr, ipc.DialOptions{Token: o.Token, Client: o.Client}, args, os.Stdout)
	case "devices":
		return devicesCmd(ctx, o.Addr, ipc.DialOptions{Token: o.Token, Client: o.Client}, args, os.Stdout)
	default:
		return usagef("unknown command %q (mnemo help lists the commands)", cmd)
	}
}

// runTUI opens the terminal UI. A local hearth that never ran has no
// token file yet: the UI says how to start it and waits. A remote one
// without a token is an error now.
func runTUI(ctx context.Context, o tui.Options, local bool, token func() (string, error)) error {
	if !local {
		if _, err := token(); err != nil {
			return err
		}
	}
	log, closeLog, err := tui.OpenLog(os.Getenv, slog.LevelInfo)
	if err != nil {
		return err
	}
	defer closeLog.Close()
	log.Info("mnemo starting", "version", version, "addr", o.Addr)
	echo, err := voiceEcho(os.Getenv)
	if err != nil {
		return usagef("%v", err)
	}
	err = runGuarded(log, func(out *os.File) error {
		return tui.Run(ctx, tui.RunOptions{Addr: o.Addr, Client: o.Client, Token: token, Local: local, Log: log,
			Audio: newAudio(os.Getenv, log), VoiceEcho: echo, Output: out}) // audio.go
	})
	if err != nil {
		log.Error("mnemo stopped", "err", err)
	}
	return err
}

// runGuarded runs the UI on out with stray output moved off the screen
// (guardStray). When the UI fails and something strayed (a panic's trace
// does), the error says where it is.
func runGuarded(log *slog.Logger, run func(out *os.File) error) error {
	out, restore, err := guardStray(log)
	if err != nil {
		return err
	}
	err = run(out)
	if stray := restore(); err != nil && stray != "" {
		err = fmt.Errorf("%w (what was printed outside the UI is in %s)", err, stray)
	}
	return err
}

// guardStray moves what libraries print on their own off the screen, into
// stray.log beside the log file, while the UI runs (guardTerminal). The
// UI draws on out; restore puts the terminal back, logs what strayed and
// returns the file's path when anything did.
func guardStray(log *slog.Logger) (out *os.File, restore func() (stray string), err error) {
	path, err := tui.LogPath(os.Getenv)
	if err != nil {
		return nil, nil, err
	}
	stray := filepath.Join(filepath.Dir(path), "stray.log")
	// The styles' colours come from standard output: learn them (the
	// background was asked when Bubble Tea started) while it is still the
	// terminal, and keep them.
	lipgloss.SetColorProfile(lipgloss.ColorProfile())
	lipgloss.SetHasDarkBackground(lipgloss.HasDarkBackground())
	out, back, err := guardTerminal(stray, func(fd int) bool { return term.IsTerminal(fd) })
	if err != nil {
		return nil, nil, err
	}
	return out, func() string {
		n, err := back()
		if err != nil {
			log.Error("terminal not restored", "err", err)
		}
		if n == 0 {
			return ""
		}
		log.Warn("libraries printed outside the UI", "bytes", n, "file", stray)
		return stray
	}, nil
}

func isLoopback(addr string) bool {
	addr, _ = ipc.SplitAddr(addr)
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ping checks that hearth answers. With -wait it keeps trying, token
// discovery included: a hearth starting for the first time writes its
// token file only as it boots.
func ping(ctx context.Context, o tui.Options, token func() (string, error), args []string) error {
	pfs := flag.NewFlagSet("ping", flag.ContinueOnError)
	wait := pfs.Duration("wait", 0, "keep trying this long")
	if err := pfs.Parse(args); err != nil {
		return usageError{err}
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
