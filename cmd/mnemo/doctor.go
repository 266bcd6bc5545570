package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/mnemo/mnemo/hearth/config"
	"github.com/mnemo/mnemo/ipc"
	"github.com/mnemo/mnemo/memory"
)

// finding is one check of mnemo doctor: what was looked at, whether it is
// well, what was found, and how to fix it when it is not.
type finding struct {
	name   string
	ok     bool
	detail string
	fix    string
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
	// tls, when set, says which TLS certificate this client trusts for
	// hearth ("" when it speaks plain TCP).
	tls func() string
}

// minFree is the free space under the memory root below which doctor
// complains: a journal write that fails for want of space fails a turn.
const minFree = 512 << 20

// doctor runs every check and writes them; it returns an error (exit 1)
// when any failed.
func doctor(ctx context.Context, env doctorEnv, w io.Writer) error {
	var fs []finding
	add := func(f finding) { fs = append(fs, f) }

	if env.config != nil {
		add(finding{"config", false, "hearth's configuration here is invalid: " + env.config.Error(), "`hearth config` shows each value and where it came from; fix the file or the variable it names"})
	}
	tok, terr := env.token()
	if terr != nil {
		add(finding{"token", false, terr.Error(), "start hearth once (it writes its token file), or set APP_AUTH_TOKEN or --token-file"})
	} else {
		add(finding{"token", true, "readable", ""})
	}
	var h *ipc.HealthReport
	if terr == nil {
		hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		rep, hist, err := env.health(hctx, tok)
		cancel()
		if err != nil {
			add(finding{"hearth", false, "unreachable: " + err.Error(), "start it: `hearth` (or `hearth service install`, or `make run`); check --addr and the token"})
		} else {
			h = rep
			add(versionFinding(env.clientVersion, hist.Server))
		}
	}
	if h != nil {
		add(providerFinding(h))
		add(recallFinding(h.Index))
	}
	if env.tls != nil {
		if line := env.tls(); line != "" {
			add(finding{"tls", true, line, ""})
		}
	}
	add(rootFinding(env.root))
	add(journalFinding(filepath.Join(env.root, "threads")))
	add(gatewayFinding(env.gw))
	add(diskFinding(env.root, env.free))
	add(clockFinding(filepath.Join(env.root, "threads"), env.now()))

	bad := 0
	for _, f := range fs {
		mark := "ok  "
		if !f.ok {
			mark = "FAIL"
			bad++
		}
		fmt.Fprintf(w, "%s %-8s %s\n", mark, f.name, f.detail)
		if !f.ok && f.fix != "" {
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
		return finding{"hearth", false, d + ": versions differ", "install both from the same checkout (`make install`) and restart hearth (`mnemo stop`, then start it)"}
	}
	return finding{"hearth", true, d, ""}
}

func providerFinding(h *ipc.HealthReport) finding {
	if h.Provider == "" {
		return finding{"model", false, "no model provider configured: hearth keeps history but cannot answer", "set a provider and its key (README: Configure a model), e.g. in hearth's environment file"}
	}
	return finding{"model", true, fmt.Sprintf("%s %s (configured; not called)", h.Provider, h.Model), ""}
}

func recallFinding(ix *ipc.IndexHealth) finding {
	switch {
	case ix == nil:
		return finding{"recall", false, "not running (opening, or off)", "wait for it to open; hearth's log says why it is off"}
	case ix.Unavailable:
		return finding{"recall", false, fmt.Sprintf("the %s index is unavailable: %s", ix.Backend, ix.Failing), "see hearth's log; for Qdrant check MNEMO_QDRANT_ADDR and that the server answers"}
	case ix.Note != "":
		return finding{"recall", false, ix.Note, "`make vectors` (or `make install`), then restart hearth"}
	case ix.Failing != "":
		return finding{"recall", false, ix.Failing, "see hearth's log"}
	}
	state := "catching up"
	if ix.Ready {
		state = "ready"
	}
	return finding{"recall", true, fmt.Sprintf("%s index, embedder %s, %s", ix.Backend, ix.Embedder, state), ""}
}

// rootFinding checks that the memory root exists, takes a file and is a
// git repository.
func rootFinding(root string) finding {
	fi, err := os.Stat(root)
	if err != nil {
		return finding{"memory", false, err.Error(), "start hearth once: it creates the root (or pass --root)"}
	}
	if !fi.IsDir() {
		return finding{"memory", false, root + " is not a directory", "move it aside and start hearth"}
	}
	f, err := os.CreateTemp(root, ".doctor-*")
	if err != nil {
		return finding{"memory", false, root + " is not writable: " + err.Error(), "chmod u+rwx " + root + " (and check the disk is not read-only)"}
	}
	f.Close()
	os.Remove(f.Name())
	if _, err := os.Stat(filepath.Join(root, ".git")); err != nil {
		return finding{"memory", false, root + " is writable but not under git", "start hearth once: it makes the root a git repository"}
	}
	return finding{"memory", true, root + " writable, under git", ""}
}

// journalFinding counts the journal's damaged lines (not JSON, or torn:
// the last line without its newline) by reading the shards, without
// repairing anything: hearth does that when it opens the journal.
func journalFinding(dir string) finding {
	shards, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil || len(shards) == 0 {
		return finding{"journal", true, "empty (no conversation yet)", ""}
	}
	sort.Strings(shards)
	records, damaged := 0, 0
	for _, p := range shards {
		r, d, err := scanShard(p)
		if err != nil {
			return finding{"journal", false, err.Error(), "check the file's permissions"}
		}
		records, damaged = records+r, damaged+d
	}
	d := fmt.Sprintf("%d record(s) in %d file(s)", records, len(shards))
	if damaged > 0 {
		return finding{"journal", false, fmt.Sprintf("%s, %d damaged line(s) skipped when read", d, damaged),
			"nothing is lost beyond those lines; hearth terminates a torn last line at start; `mnemo export` keeps a copy"}
	}
	return finding{"journal", true, d + ", no damaged lines", ""}
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
		return finding{"tools", true, "no " + path + ": no MCP servers configured", ""}
	}
	if err != nil {
		return finding{"tools", false, err.Error(), "check its permissions"}
	}
	var g struct {
		Servers []json.RawMessage `json:"servers"`
	}
	if err := json.Unmarshal(b, &g); err != nil {
		return finding{"tools", false, path + " does not parse: " + err.Error(), "fix the JSON (README: Tools)"}
	}
	return finding{"tools", true, fmt.Sprintf("%d MCP server(s) configured in %s", len(g.Servers), path), ""}
}

func diskFinding(root string, free func(string) (uint64, error)) finding {
	dir := root
	if _, err := os.Stat(dir); err != nil {
		dir = filepath.Dir(root)
	}
	n, err := free(dir)
	if err != nil {
		return finding{"disk", false, err.Error(), ""}
	}
	d := fmt.Sprintf("%d MiB free under %s", n>>20, dir)
	if n < minFree {
		return finding{"disk", false, d, "free some space: a journal write that cannot be stored fails the turn"}
	}
	return finding{"disk", true, d, ""}
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
			"set the clock (timedatectl set-ntp true)"}
	}
	if now.Year() < 2025 {
		return finding{"clock", false, "now is " + now.Format(time.RFC3339), "set the clock (timedatectl set-ntp true)"}
	}
	return finding{"clock", true, now.Format(time.RFC3339), ""}
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
