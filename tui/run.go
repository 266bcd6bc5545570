package tui

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/mnemo/mnemo/internal/logfile"
	"github.com/mnemo/mnemo/tui/voicectl"
	"github.com/mnemo/mnemo/voice/audio"
)

// RunOptions configure the interactive UI.
type RunOptions struct {
	Addr   string
	Client string // e.g. "mnemo/0.1"
	// Token returns the auth token; see RemoteOptions.Token.
	Token func() (string, error)
	// Local means hearth is expected on this machine: when it is not
	// running, the UI says how to start it, and waits for it.
	Local bool
	// Session, when set, is the backend instead of a Remote dialling Addr:
	// an in-process hearth (`mnemo --local`).
	Session Session
	Log     *slog.Logger
	// Audio is the sound card for voice (nil: a build without audio);
	// VoiceEcho the echo mode voice starts in.
	Audio     voicectl.Audio
	VoiceEcho audio.Mode
	// Output is the terminal the UI draws on (nil: standard output). The
	// styles take their colours from lipgloss's default renderer: a caller
	// that moves standard output off the terminal pins them first.
	Output *os.File
}

// Session is a Backend that also delivers hearth's events to the UI:
// Remote for a hearth over TCP, or an in-process door.
type Session interface {
	Backend
	Run(ctx context.Context, send func(tea.Msg)) error
}

// Run opens the terminal UI on hearth and returns when the owner quits or
// ctx ends. The terminal is restored on the way out, whatever happened.
func Run(ctx context.Context, o RunOptions) error {
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var remote Session = o.Session
	if remote == nil {
		remote = NewRemote(RemoteOptions{Addr: o.Addr, Client: o.Client, Token: o.Token, Log: log})
	}
	out := o.Output
	if out == nil {
		out = os.Stdout
	}
	style := "light"
	if lipgloss.HasDarkBackground() {
		style = "dark"
	}
	m := New(Config{
		Backend:  remote,
		Addr:     o.Addr,
		Local:    o.Local,
		Markdown: style,
		Profile:  lipgloss.ColorProfile(),
		Log:      log,
	})
	m.audio, m.voiceEcho = o.Audio, o.VoiceEcho
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	p := tea.NewProgram(m,
		tea.WithContext(ctx),
		tea.WithOutput(out),
		tea.WithAltScreen(),
		tea.WithMouseCellMotion(),
	)
	var wg sync.WaitGroup
	wg.Go(func() { remote.Run(ctx, p.Send) })
	_, err := p.Run()
	if f, ok := remote.(interface{ Flush(context.Context) error }); ok {
		// What the UI sent last (stop_voice, transcripts) reaches hearth.
		fctx, fcancel := context.WithTimeout(ctx, voiceQuitWait)
		if ferr := f.Flush(fctx); ferr != nil {
			log.Warn("quit before every request reached hearth", "err", ferr)
		}
		fcancel()
	}
	cancel()
	wg.Wait()
	if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		return nil // ctx ended: a signal, not a failure
	}
	if err != nil {
		log.Error("terminal UI", "err", err)
	}
	return err
}

// LogPath is the client's log file: mnemo/mnemo.log under the user's
// state dir ($XDG_STATE_HOME, else ~/.local/state).
func LogPath(getenv func(string) string) (string, error) {
	dir := getenv("XDG_STATE_HOME")
	if dir == "" || !filepath.IsAbs(dir) {
		home := getenv("HOME")
		if home == "" {
			h, err := os.UserHomeDir()
			if err != nil {
				return "", fmt.Errorf("locate state dir: %w", err)
			}
			home = h
		}
		dir = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(dir, "mnemo", "mnemo.log"), nil
}

// logRotation bounds the log: it rotates at 8 MiB, as it grows, keeping
// two gzip'd older files (mnemo.log.1.gz, mnemo.log.2.gz).
var logRotation = logfile.Options{MaxBytes: 8 << 20, Backups: 2, Compress: true}

// OpenLog opens the log file for appending, creating its directory, and
// returns a logger on it. The terminal UI never logs to the terminal.
// E-mail addresses and token-looking strings are redacted.
func OpenLog(getenv func(string) string, level slog.Level) (*slog.Logger, io.Closer, error) {
	path, err := LogPath(getenv)
	if err != nil {
		return nil, nil, err
	}
	return openLogAt(path, level, logRotation)
}

func openLogAt(path string, level slog.Level, o logfile.Options) (*slog.Logger, io.Closer, error) {
	f, err := logfile.Open(path, o)
	if err != nil {
		return nil, nil, fmt.Errorf("open log: %w", err)
	}
	w := newAsyncWriter(f)
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level, ReplaceAttr: logfile.Redact})), w, nil
}

// asyncWriter hands writes to a goroutine, so that logging from Update
// does no I/O on the UI goroutine. When the log falls far behind, lines
// are dropped and counted rather than stalling the UI.
type asyncWriter struct {
	w    io.WriteCloser
	ch   chan []byte
	done chan struct{}

	mu      sync.Mutex
	closed  bool
	dropped int
}

func newAsyncWriter(w io.WriteCloser) *asyncWriter {
	a := &asyncWriter{w: w, ch: make(chan []byte, 1024), done: make(chan struct{})}
	go func() {
		defer close(a.done)
		for b := range a.ch {
			a.w.Write(b)
		}
	}()
	return a
}

func (a *asyncWriter) Write(p []byte) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return 0, os.ErrClosed
	}
	select {
	case a.ch <- bytes.Clone(p):
	default:
		a.dropped++
	}
	return len(p), nil
}

// Close writes what is queued and closes the file.
func (a *asyncWriter) Close() error {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return nil
	}
	a.closed = true
	close(a.ch)
	dropped := a.dropped
	a.mu.Unlock()
	<-a.done
	if dropped > 0 {
		fmt.Fprintf(a.w, "(%d log lines dropped: the log fell behind)\n", dropped)
	}
	return a.w.Close()
}
