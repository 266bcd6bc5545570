package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"text/template"
)

// unitName is hearth's systemd user unit.
const unitName = "hearth.service"

// service is where `hearth service` writes and whom it asks: the unit
// directory, the environment file for secrets, the hearth binary the unit
// runs, and systemctl ("" when this machine has none).
type service struct {
	unitDir   string
	envFile   string
	exe       string
	systemctl string
	out       io.Writer
	// logFile, when set, is the unit's -log-file: hearth logs there,
	// rotated by size, rather than to journald.
	logFile string
}

// userService is the service of this user on this machine.
func userService(out io.Writer) (*service, error) {
	cfg, err := os.UserConfigDir()
	if err != nil {
		return nil, fmt.Errorf("config directory: %w", err)
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("hearth's own path: %w", err)
	}
	if p, err := filepath.EvalSymlinks(exe); err == nil {
		exe = p
	}
	sc, _ := exec.LookPath("systemctl")
	return &service{
		unitDir: filepath.Join(cfg, "systemd", "user"), envFile: filepath.Join(cfg, "mnemo", "hearth.env"),
		exe: exe, systemctl: sc, out: out,
	}, nil
}

const serviceUsage = "usage: hearth service install [-log-file PATH]|uninstall|status"

// run carries out `hearth service <cmd>`.
func (s *service) run(ctx context.Context, args []string) error {
	if len(args) == 0 || (len(args) > 1 && args[0] != "install") {
		return errors.New(serviceUsage)
	}
	switch args[0] {
	case "install":
		fs := flag.NewFlagSet("hearth service install", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		fs.StringVar(&s.logFile, "log-file", "", "")
		if err := fs.Parse(args[1:]); err != nil || fs.NArg() > 0 {
			return errors.New(serviceUsage)
		}
		if s.logFile != "" {
			abs, err := filepath.Abs(s.logFile)
			if err != nil {
				return fmt.Errorf("log file: %w", err)
			}
			s.logFile = abs
		}
		return s.install(ctx)
	case "uninstall":
		return s.uninstall(ctx)
	case "status":
		return s.status(ctx)
	}
	return fmt.Errorf("unknown service command %q (%s)", args[0], serviceUsage)
}

var unitTemplate = template.Must(template.New("unit").Parse(`# hearth, the mnemo daemon, as a systemd user service.
# Written by ` + "`hearth service install`" + `; ` + "`hearth service uninstall`" + ` removes it.
{{if .LogFile}}# Logs: {{.LogFile}} (rotated by size); before it is open, journalctl --user -u hearth.
# {{else}}# Logs: journalctl --user -u hearth. {{end}}Secrets (API keys): {{.EnvFile}}
[Unit]
Description=hearth, the mnemo companion's daemon
After=network-online.target

[Service]
Type=simple
ExecStart={{.Exe}}{{if .LogFile}} -log-file "{{.LogFile}}"{{end}}
EnvironmentFile=-{{.EnvFile}}
Restart=on-failure
RestartSec=2s
# hearth finishes the reply in flight (10 s at most) before it exits.
TimeoutStopSec=40s
StandardOutput=journal
StandardError=journal

[Install]
WantedBy=default.target
`))

// envTemplate starts the environment file; it is the place for secrets,
// which the unit file and the config file never hold.
const envTemplate = `# hearth's environment (secrets belong here; this file is yours alone, 0600).
# One VAR=value a line, read by the systemd unit at start.
# OPENAI_API_KEY=
# ANTHROPIC_API_KEY=
# XAI_API_KEY=
`

// unit is the unit file's text.
func (s *service) unit() ([]byte, error) {
	var b bytes.Buffer
	if strings.ContainsAny(s.exe+s.envFile+s.logFile, "\n\"\\%$") {
		return nil, fmt.Errorf("%s, %s or %s has a character a unit file cannot hold", s.exe, s.envFile, s.logFile)
	}
	err := unitTemplate.Execute(&b, struct{ Exe, EnvFile, LogFile string }{s.exe, s.envFile, s.logFile})
	return b.Bytes(), err
}

func (s *service) unitPath() string { return filepath.Join(s.unitDir, unitName) }

func (s *service) install(ctx context.Context) error {
	unit, err := s.unit()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(s.envFile), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(s.envFile, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	switch {
	case err == nil:
		_, werr := f.WriteString(envTemplate)
		if err := errors.Join(werr, f.Sync(), f.Close()); err != nil {
			return fmt.Errorf("write %s: %w", s.envFile, err)
		}
		fmt.Fprintf(s.out, "wrote %s (0600): put API keys there\n", s.envFile)
	case errors.Is(err, fs.ErrExist):
		if fi, err := os.Stat(s.envFile); err == nil && fi.Mode().Perm()&0o077 != 0 {
			fmt.Fprintf(s.out, "warning: %s is readable by others (chmod 600 it)\n", s.envFile)
		}
	default:
		return fmt.Errorf("create %s: %w", s.envFile, err)
	}
	if err := os.MkdirAll(s.unitDir, 0o755); err != nil {
		return err
	}
	tmp := s.unitPath() + ".tmp"
	if err := os.WriteFile(tmp, unit, 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, s.unitPath()); err != nil {
		return err
	}
	fmt.Fprintf(s.out, "wrote %s (runs %s)\n", s.unitPath(), s.exe)
	if s.systemctl == "" {
		fmt.Fprintf(s.out, "systemctl is not on this machine: on one with systemd, enable it with\n  systemctl --user daemon-reload && systemctl --user enable --now %s\n", unitName)
		return nil
	}
	if err := s.ctl(ctx, "daemon-reload"); err != nil {
		return err
	}
	if err := s.ctl(ctx, "enable", "--now", unitName); err != nil {
		return err
	}
	logs := "journalctl --user -u hearth"
	if s.logFile != "" {
		logs = s.logFile
	}
	fmt.Fprintf(s.out, "enabled and started: hearth now runs at login and restarts if it fails (logs: %s)\n", logs)
	return nil
}

func (s *service) uninstall(ctx context.Context) error {
	if s.systemctl != "" {
		if err := s.ctl(ctx, "disable", "--now", unitName); err != nil {
			fmt.Fprintf(s.out, "warning: %v\n", err)
		}
	}
	err := os.Remove(s.unitPath())
	switch {
	case errors.Is(err, fs.ErrNotExist):
		fmt.Fprintf(s.out, "no unit at %s\n", s.unitPath())
	case err != nil:
		return err
	default:
		fmt.Fprintf(s.out, "removed %s\n", s.unitPath())
	}
	if s.systemctl != "" {
		if err := s.ctl(ctx, "daemon-reload"); err != nil {
			return err
		}
	}
	fmt.Fprintf(s.out, "kept %s (your secrets) and your memory\n", s.envFile)
	return nil
}

func (s *service) status(ctx context.Context) error {
	if _, err := os.Stat(s.unitPath()); err != nil {
		fmt.Fprintf(s.out, "not installed: no %s (hearth service install writes it)\n", s.unitPath())
		return nil
	}
	fmt.Fprintf(s.out, "unit: %s\n", s.unitPath())
	if s.systemctl == "" {
		fmt.Fprintln(s.out, "systemctl is not on this machine: the unit is written but nothing runs it here")
		return nil
	}
	// is-enabled and is-active exit non-zero for "disabled" and
	// "inactive": their output is the answer.
	enabled, _ := s.output(ctx, "is-enabled", unitName)
	active, _ := s.output(ctx, "is-active", unitName)
	fmt.Fprintf(s.out, "enabled: %s\nactive: %s\n", orUnknown(enabled), orUnknown(active))
	if active == "failed" {
		fmt.Fprintln(s.out, "it failed: journalctl --user -u hearth says why")
	}
	return nil
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// ctl runs systemctl --user args.
func (s *service) ctl(ctx context.Context, args ...string) error {
	out, err := s.output(ctx, args...)
	if err != nil {
		return fmt.Errorf("systemctl --user %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

func (s *service) output(ctx context.Context, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, s.systemctl, append([]string{"--user"}, args...)...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}
