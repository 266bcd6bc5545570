package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/mnemo/mnemo/hearth/config"
	"github.com/mnemo/mnemo/ipc"
	"github.com/mnemo/mnemo/memory"
	"github.com/mnemo/mnemo/tui/voicectl"
	"github.com/mnemo/mnemo/voice/audio"
)

// finding is one check of mnemo doctor: what was looked at, whether it is
// well, what was found, and how to fix it when it is not.
type finding struct {
	name   string
	ok     bool
	detail string
	fix    string
	// warn marks a finding that is ok but worth a look (shown "warn",
	// with its fix, and not failing doctor).
	warn bool
}

// warning is an ok finding worth a look.
func warning(name, detail, fix string) finding {
	return finding{name: name, ok: true, detail: detail, fix: fix, warn: true}
}

// doctorEnv is what doctor looks at; tests fake it.
type doctorEnv struct {
	clientVersion string
	// token reads the auth token; health asks hearth how it is, with the
	// handshake's history (its server name).
	token  func() (string, error)
	health func(ctx context.Context, token string) (*ipc.HealthReport, *ipc.History, error)
	root   string // the memory root
	gw     string // gateway.json
	free   func(dir string) (uint64, error)
	now    func() time.Time
	// config is what loading hearth's configuration here said: nil, or
	// why it is invalid.
	config error
	// reach checks that one MCP server of gateway.json could be reached:
	// its URL answers, or its command is found.
	reach func(ctx context.Context, s gatewayServer) error
	// audio lists the sound devices; nil when this mnemo is built without
	// voice.
	audio func(ctx context.Context) ([]voicectl.Device, error)
	// audioBackend says which audio backend voice would use now
	// (MNEMO_AUDIO_BACKEND); nil: not asked.
	audioBackend func(ctx context.Context) (string, error)
	// tls, when set, says which TLS certificate this client trusts for
	// hearth ("" when it speaks plain TCP).
	tls func() string
	// provider, when set (doctor --provider), asks hearth to make one
	// cheap call to its chat model.
	provider func(ctx context.Context, token string) (*ipc.ProviderStatus, error)
}

// minFree is the free space under the memory root below which doctor
// warns, and failFree below which it fails: a journal write that fails
// for want of space fails a turn.
const (
	minFree  = 1 << 30
	failFree = 64 << 20
)

// maxSkew is how far hearth's clock may be from the client's.
const maxSkew = 2 * time.Second

// doctor runs every check and writes them; it returns an error (exit 1)
// when any failed.
func doctor(ctx context.Context, env doctorEnv, w io.Writer) error {
	var fs []finding
	add := func(f finding) { fs = append(fs, f) }

	if env.config != nil {
		add(finding{"config", false, "hearth's configuration here is invalid: " + env.config.Error(), "`hearth config` shows each value and where it came from; fix the file or the variable it names", false})
	}
	tok, terr := env.token()
	if terr != nil {
		add(finding{"token", false, terr.Error(), "start hearth once (it writes its token file), or set APP_AUTH_TOKEN or --token-file", false})
	} else {
		add(finding{"token", true, "readable", "", false})
	}
	var h *ipc.HealthReport
	var asked, answered time.Time
	if terr == nil {
		hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		asked = env.now()
		rep, hist, err := env.health(hctx, tok)
		answered = env.now()
		cancel()
		if err != nil {
			add(finding{"hearth", false, "unreachable: " + err.Error(), "start it: `hearth` (or `hearth service install`, or `make run`); check --addr and the token", false})
		} else {
			h = rep
			add(versionFinding(env.clientVersion, hist.Server))
		}
	}
	if h != nil {
		if env.provider != nil {
			pctx, cancel := context.WithTimeout(ctx, providerWait)
			st, err := env.provider(pctx, tok)
			cancel()
			add(providerCheckFinding(st, err))
		} else {
			add(providerFinding(h))
		}
		add(recallFinding(h.Index))
	}
	if env.tls != nil {
		if line := env.tls(); line != "" {
			add(finding{"tls", true, line, "", false})
		}
	}
	add(rootFinding(env.root))
	add(journalFinding(filepath.Join(env.root, "threads")))
	add(gatewayFinding(env.gw))
	if env.reach != nil {
		for _, f := range reachFindings(ctx, env.gw, env.reach) {
			add(f)
		}
	}
	add(audioFinding(ctx, env.audio, env.audioBackend))
	add(diskFinding(env.root, env.free))
	add(clockFinding(filepath.Join(env.root, "threads"), env.now()))
	if h != nil {
		add(skewFinding(h.Time, asked, answered))
	}

	bad := 0
	for _, f := range fs {
		mark := "ok  "
		switch {
		case !f.ok:
			mark = "FAIL"
			bad++
		case f.warn:
			mark = "warn"
		}
		fmt.Fprintf(w, "%s %-8s %s\n", mark, f.name, f.detail)
		if (!f.ok || f.warn) && f.fix != "" {
			fmt.Fprintf(w, "     %-8s fix: %s\n", "", f.fix)
		}
	}
	if bad > 0 {
		return fmt.Errorf("%d check(s) failed", bad)
	}
	fmt.Fprintln(w, "all good")
	return nil
}

// versionFinding compares hearth's version with the client's: both name
// themselves "mnemo/<version>" and "hearth/<version>".
func versionFinding(client, server string) finding {
	sv := strings.TrimPrefix(server, "hearth/")
	d := fmt.Sprintf("reachable, %s (this mnemo: %s)", server, client)
	if sv != client && sv != "dev" && client != "dev" {
		return finding{"hearth", false, d + ": versions differ", "install both from the same checkout (`make install`) and restart hearth (`mnemo stop`, then start it)", false}
	}
	return finding{"hearth", true, d, "", false}
}

func providerFinding(h *ipc.HealthReport) finding {
	if h.Provider == "" {
		return finding{"model", false, "no model provider configured: hearth keeps history but cannot answer", "set a provider and its key (README: Configure a model), e.g. in hearth's environment file", false}
	}
	return finding{"model", true, fmt.Sprintf("%s %s (configured; not called)", h.Provider, h.Model), "", false}
}

// providerWait bounds doctor --provider's wait for hearth's answer; the
// model's own timeouts and retries end the call in hearth first.
const providerWait = 3 * time.Minute

// providerCheckFinding explains hearth's answer to a provider check.
func providerCheckFinding(st *ipc.ProviderStatus, err error) finding {
	var e *ipc.Error
	switch {
	case errors.As(err, &e) && e.Code == ipc.CodeForbidden:
		return finding{"model", false, "hearth refused the provider check: this client is not the owner", "run doctor --provider with hearth's own token (on hearth's machine)", false}
	case errors.As(err, &e) && e.Code == ipc.CodeUnknownType:
		return finding{"model", false, "this hearth cannot check its provider (it is older than this mnemo)", "install both from the same checkout (`make install`) and restart hearth", false}
	case err != nil:
		return finding{"model", false, "the provider check did not finish: " + err.Error(), "try again; hearth's log says what it was doing", false}
	}
	what := strings.TrimSpace(st.Provider + " " + st.Model)
	if st.OK {
		return finding{"model", true, fmt.Sprintf("%s answered in %d ms", what, st.LatencyMS), "", false}
	}
	// hearth's problem reads "what went wrong — what to do".
	detail, fix, split := strings.Cut(st.Problem, " — ")
	if !split {
		fix = providerFixes[st.Category]
	}
	if what != "" {
		detail = what + ": " + detail
	}
	return finding{"model", false, detail, fix, false}
}

// providerFixes are the fixes of the failures whose problem names none.
var providerFixes = map[string]string{
	"no_provider": "set a provider and its key (README: Configure a model), e.g. in hearth's environment file, then restart hearth",
	"bad_request": "see hearth's log for the provider's answer; check MNEMO_MODEL (model.name)",
	"other":       "see hearth's log",
}

// askProvider dials hearth and asks it to check its model provider.
func askProvider(addr, client string) func(context.Context, string) (*ipc.ProviderStatus, error) {
	return func(ctx context.Context, tok string) (*ipc.ProviderStatus, error) {
		conn, err := ipc.Dial(ctx, addr, ipc.DialOptions{Token: tok, Client: client})
		if err != nil {
			return nil, err
		}
		defer conn.Close()
		if err := conn.Send(&ipc.ProviderCheck{Ref: "doctor"}); err != nil {
			return nil, err
		}
		for {
			m, err := conn.Recv(ctx)
			if err != nil {
				return nil, err
			}
			switch m := m.(type) {
			case *ipc.ProviderStatus:
				return m, nil
			case *ipc.Error:
				if m.Ref == "doctor" || m.Code == ipc.CodeUnknownType {
					return nil, m
				}
			}
		}
	}
}

// doctorFlags parses doctor's own flags: --provider.
func doctorFlags(args []string) (provider bool, err error) {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.BoolVar(&provider, "provider", false, "also make one cheap call to the model provider, through hearth")
	if err := fs.Parse(args); err != nil {
		return false, usagef("doctor: %v (doctor takes --provider)", err)
	}
	if fs.NArg() > 0 {
		return false, usagef("doctor: unexpected %q (doctor takes --provider)", fs.Arg(0))
	}
	return provider, nil
}

func recallFinding(ix *ipc.IndexHealth) finding {
	switch {
	case ix == nil:
		return finding{"recall", false, "not running (opening, or off)", "wait for it to open; hearth's log says why it is off", false}
	case ix.Unavailable:
		return finding{"recall", false, fmt.Sprintf("the %s index is unavailable: %s", ix.Backend, ix.Failing), "see hearth's log; for Qdrant check MNEMO_QDRANT_ADDR and that the server answers", false}
	case ix.Note != "":
		return finding{"recall", false, ix.Note, "`make vectors` (or `make install`), then restart hearth", false}
	case ix.Failing != "":
		return finding{"recall", false, ix.Failing, "see hearth's log", false}
	}
	state := "catching up"
	if ix.Ready {
		state = "ready"
	}
	return finding{"recall", true, fmt.Sprintf("%s index, embedder %s, %s", ix.Backend, ix.Embedder, state), "", false}
}

// rootFinding checks that the memory root exists, takes a file and is a
// git repository.
func rootFinding(root string) finding {
	fi, err := os.Stat(root)
	if err != nil {
		return finding{"memory", false, err.Error(), "start hearth once: it creates the root (or pass --root)", false}
	}
	if !fi.IsDir() {
		return finding{"memory", false, root + " is not a directory", "move it aside and start hearth", false}
	}
	f, err := os.CreateTemp(root, ".doctor-*")
	if err != nil {
		return finding{"memory", false, root + " is not writable: " + err.Error(), "chmod u+rwx " + root + " (and check the disk is not read-only)", false}
	}
	f.Close()
	os.Remove(f.Name())
	if _, err := os.Stat(filepath.Join(root, ".git")); err != nil {
		return finding{"memory", false, root + " is writable but not under git", "start hearth once: it makes the root a git repository", false}
	}
	return finding{"memory", true, root + " writable, under git", "", false}
}

// journalFinding counts the journal's damaged lines (not JSON, or torn:
// the last line without its newline) by reading the shards, without
// repairing anything: hearth does that when it opens the journal.
func journalFinding(dir string) finding {
	shards, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil || len(shards) == 0 {
		return finding{"journal", true, "empty (no conversation yet)", "", false}
	}
	sort.Strings(shards)
	records, damaged := 0, 0
	for _, p := range shards {
		r, d, err := scanShard(p)
		if err != nil {
			return finding{"journal", false, err.Error(), "check the file's permissions", false}
		}
		records, damaged = records+r, damaged+d
	}
	d := fmt.Sprintf("%d record(s) in %d file(s)", records, len(shards))
	if damaged > 0 {
		return finding{"journal", false, fmt.Sprintf("%s, %d damaged line(s) skipped when read", d, damaged),
			"nothing is lost beyond those lines; hearth terminates a torn last line at start; `mnemo export` keeps a copy", false}
	}
	return finding{"journal", true, d + ", no damaged lines", "", false}
}

func scanShard(path string) (records, damaged int, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			torn := line[len(line)-1] != '\n'
			body := bytes.TrimSpace(line)
			switch {
			case len(body) == 0:
			case torn || !json.Valid(body):
				damaged++
			default:
				records++
			}
		}
		if errors.Is(err, io.EOF) {
			return records, damaged, nil
		}
		if err != nil {
			return records, damaged, err
		}
	}
}

// gatewayFinding counts the MCP servers gateway.json configures; it does
// not start them.
func gatewayFinding(path string) finding {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return finding{"tools", true, "no " + path + ": no MCP servers configured", "", false}
	}
	if err != nil {
		return finding{"tools", false, err.Error(), "check its permissions", false}
	}
	var g struct {
		Servers []json.RawMessage `json:"servers"`
	}
	if err := json.Unmarshal(b, &g); err != nil {
		return finding{"tools", false, path + " does not parse: " + err.Error(), "fix the JSON (README: Tools)", false}
	}
	return finding{"tools", true, fmt.Sprintf("%d MCP server(s) configured in %s", len(g.Servers), path), "", false}
}

func diskFinding(root string, free func(string) (uint64, error)) finding {
	dir := root
	if _, err := os.Stat(dir); err != nil {
		dir = filepath.Dir(root)
	}
	n, err := free(dir)
	if err != nil {
		return finding{"disk", false, err.Error(), "", false}
	}
	d := fmt.Sprintf("%d MiB free under %s", n>>20, dir)
	const fix = "free some space: a journal write that cannot be stored fails the turn"
	switch {
	case n < failFree:
		return finding{"disk", false, d, fix, false}
	case n < minFree:
		return warning("disk", d+", less than 1 GiB", fix)
	}
	return finding{"disk", true, d, "", false}
}

// clockFinding: the clock should not be before the journal's last write
// (a clock that jumped back orders new turns before old ones).
func clockFinding(threads string, now time.Time) finding {
	var newest time.Time
	shards, _ := filepath.Glob(filepath.Join(threads, "*.jsonl"))
	for _, p := range shards {
		if fi, err := os.Stat(p); err == nil && fi.ModTime().After(newest) {
			newest = fi.ModTime()
		}
	}
	if !newest.IsZero() && now.Before(newest.Add(-time.Minute)) {
		return finding{"clock", false, fmt.Sprintf("now is %s, before the journal's last write at %s", now.Format(time.RFC3339), newest.Format(time.RFC3339)),
			"set the clock (timedatectl set-ntp true)", false}
	}
	if now.Year() < 2025 {
		return finding{"clock", false, "now is " + now.Format(time.RFC3339), "set the clock (timedatectl set-ntp true)", false}
	}
	return finding{"clock", true, now.Format(time.RFC3339), "", false}
}

// skewFinding compares hearth's clock, as its health report says, with
// this machine's between asking and the answer: turns are stamped by
// hearth, reminders and "yesterday" are read by both.
func skewFinding(server, asked, answered time.Time) finding {
	if server.IsZero() {
		return finding{name: "skew", ok: true, detail: "hearth does not report its clock (an older hearth)"}
	}
	rtt := answered.Sub(asked)
	mid := asked.Add(rtt / 2)
	skew := server.Sub(mid).Round(time.Millisecond)
	d := fmt.Sprintf("hearth's clock is %v from this machine's (round trip %v)", skew, rtt.Round(time.Millisecond))
	if skew.Abs() > maxSkew+rtt/2 {
		return warning("skew", d, "synchronise both clocks (timedatectl set-ntp true)")
	}
	return finding{name: "skew", ok: true, detail: d}
}

// gatewayServer is what doctor needs of a gateway.json entry.
type gatewayServer struct {
	Label    string `json:"label"`
	URL      string `json:"url"`
	Command  string `json:"command"`
	Disabled bool   `json:"disabled"`
}

// reachFindings checks each enabled MCP server in gateway.json; none when
// the file is missing or does not parse (gatewayFinding says so).
func reachFindings(ctx context.Context, path string, reach func(context.Context, gatewayServer) error) []finding {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var g struct {
		Servers []json.RawMessage `json:"servers"`
	}
	if json.Unmarshal(b, &g) != nil {
		return nil
	}
	var out []finding
	for i, raw := range g.Servers {
		var s gatewayServer
		if json.Unmarshal(raw, &s) != nil || s.Disabled {
			continue
		}
		name := s.Label
		if name == "" {
			name = fmt.Sprintf("#%d", i+1)
		}
		rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		err := reach(rctx, s)
		cancel()
		switch {
		case err != nil && s.URL != "":
			out = append(out, finding{"tools", false, fmt.Sprintf("MCP server %s: %s does not answer: %v", name, redactURL(s.URL), err),
				"start the server, or fix its url in " + path + " (or set \"disabled\": true)", false})
		case err != nil:
			out = append(out, finding{"tools", false, fmt.Sprintf("MCP server %s: %v", name, err),
				"install its command, or fix it in " + path + " (or set \"disabled\": true)", false})
		case s.URL != "":
			out = append(out, finding{"tools", true, fmt.Sprintf("MCP server %s: %s answers", name, redactURL(s.URL)), "", false})
		default:
			out = append(out, finding{"tools", true, fmt.Sprintf("MCP server %s: command %s found", name, s.Command), "", false})
		}
	}
	return out
}

// redactURL shows a URL without its query and user info, which may hold
// a key.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(an unparsable url)"
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}

// reachServer is doctor's reach: an HTTP server answers a GET with any
// status (MCP's streamable HTTP may refuse a bare GET, but it answers);
// a stdio server's command is found on PATH. Nothing is started.
func reachServer(hc *http.Client, getenv func(string) string) func(context.Context, gatewayServer) error {
	return func(ctx context.Context, s gatewayServer) error {
		if s.URL != "" {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, os.Expand(s.URL, getenv), nil)
			if err != nil {
				return err
			}
			resp, err := hc.Do(req)
			if err != nil {
				var ue *url.Error
				if errors.As(err, &ue) {
					return ue.Err // without the url, which may hold a key
				}
				return err
			}
			resp.Body.Close()
			return nil
		}
		if s.Command == "" {
			return errors.New("neither url nor command")
		}
		if _, err := exec.LookPath(os.Expand(s.Command, getenv)); err != nil {
			return fmt.Errorf("command %s not found", s.Command)
		}
		return nil
	}
}

// doctorAudio is the sound card's device list and the backend voice
// would use.
func doctorAudio() (func(context.Context) ([]voicectl.Device, error), func(context.Context) (string, error)) {
	a := newAudio(os.Getenv, slog.New(slog.DiscardHandler))
	return a.Devices, a.Backend
}

// audioFinding lists the sound devices voice would use, and through which
// backend.
func audioFinding(ctx context.Context, devices func(context.Context) ([]voicectl.Device, error), backend func(context.Context) (string, error)) finding {
	if devices == nil {
		return finding{name: "audio", ok: true, detail: "voice is not built into this mnemo (PortAudio was missing at build: `make voice-deps`, then `make build`)"}
	}
	via := ""
	if backend != nil {
		b, err := backend(ctx)
		switch {
		case errors.Is(err, audio.ErrNoPulse) && !audio.HavePortAudio:
			return warning("audio", "voice has no sound server here: "+err.Error(),
				"start PulseAudio or PipeWire (its pulse socket), or build mnemo with PortAudio: `make voice-deps`, then `make build`")
		case err != nil:
			return finding{"audio", false, err.Error(), "MNEMO_AUDIO_BACKEND is auto, pulse or portaudio; pulse needs a PulseAudio (or PipeWire) server running", false}
		}
		via = "backend " + b + "; "
	}
	ds, err := devices(ctx)
	if err != nil {
		return finding{"audio", false, "cannot list sound devices: " + err.Error(), "check the sound server (PulseAudio/PipeWire) is running", false}
	}
	var in, out int
	var defIn, defOut string
	for _, d := range ds {
		if d.Inputs > 0 {
			in++
		}
		if d.Outputs > 0 {
			out++
		}
		if d.DefaultInput {
			defIn = d.Name
		}
		if d.DefaultOutput {
			defOut = d.Name
		}
	}
	detail := fmt.Sprintf("%s%d input and %d output device(s); default in %q, out %q", via, in, out, defIn, defOut)
	if in == 0 || out == 0 {
		return warning("audio", detail, "voice needs a microphone and a speaker: plug them in or start the sound server; MNEMO_AUDIO_INPUT/OUTPUT pick a device")
	}
	return finding{name: "audio", ok: true, detail: detail}
}

// statfsFree is the space free to an unprivileged user under dir.
func statfsFree(dir string) (uint64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, fmt.Errorf("statfs %s: %w", dir, err)
	}
	return st.Bavail * uint64(st.Bsize), nil
}

// askHealth dials hearth and asks for its health report.
func askHealth(addr, client string) func(context.Context, string) (*ipc.HealthReport, *ipc.History, error) {
	return func(ctx context.Context, tok string) (*ipc.HealthReport, *ipc.History, error) {
		conn, err := ipc.Dial(ctx, addr, ipc.DialOptions{Token: tok, Client: client})
		if err != nil {
			return nil, nil, err
		}
		defer conn.Close()
		if err := conn.Send(&ipc.Health{Ref: "doctor"}); err != nil {
			return nil, nil, err
		}
		for {
			m, err := conn.Recv(ctx)
			if err != nil {
				return nil, nil, err
			}
			if r, ok := m.(*ipc.HealthReport); ok {
				return r, conn.History(), nil
			}
		}
	}
}

// doctorDefaults are the memory root and gateway.json hearth's
// configuration names on this machine (root, when set, overrides), and
// whether that configuration is invalid.
func doctorDefaults(root string) (string, string, error) {
	cfg, cerr := config.Load(config.LoadOptions{})
	if cfg == nil {
		return "", "", cerr
	}
	if root == "" {
		root = cfg.Root.Value
	}
	if root == "" {
		var err error
		if root, err = memory.DefaultDir(); err != nil {
			return "", "", err
		}
	}
	return root, cfg.Gateway.Value, cerr
}

// tlsLine says which certificate this client pins for a tls:// address,
// for doctor; "" for plain TCP.
func tlsLine(addr string) string {
	host, ok := ipc.SplitAddr(addr)
	if !ok {
		return ""
	}
	known, err := ipc.DefaultKnownHearths()
	if err != nil {
		return ""
	}
	fp, err := known.Lookup(host)
	switch {
	case err != nil:
		return "known_hearths unreadable: " + err.Error()
	case fp == "":
		return host + ": no certificate pinned yet (the first connection pins it)"
	}
	return host + " pinned as " + fp + " (mnemo trust --forget " + host + " re-pins)"
}

// doctorProvider is doctor's provider check: askProvider when asked for,
// else none.
func doctorProvider(on bool, addr, client string) func(context.Context, string) (*ipc.ProviderStatus, error) {
	if !on {
		return nil
	}
	return askProvider(addr, client)
}
