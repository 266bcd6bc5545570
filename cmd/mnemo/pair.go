package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mnemo/mnemo/ipc"
)

// pairUsage is mnemo pair's help.
const pairUsage = `usage: mnemo pair [--actor A]            (on a client of the owner's)
       mnemo pair HOST:PORT CODE [--name N] (on the new device)
  With no address, ask hearth for a one-time pairing code (5 minutes,
  single use) for a new device of actor A (collaborator, or owner for
  another device of yours), and show it with hearth's TLS fingerprint.
  With an address (tls://HOST:PORT for a hearth run with -tls), trade the
  code for this device's own token, saved 0600 in
  $XDG_CONFIG_HOME/mnemo/device.json with the address and the pinned
  fingerprint; mnemo then connects there with it.`

// pairCmd is `mnemo pair`: start a pairing (owner) or join (new device).
func pairCmd(ctx context.Context, addr string, opts ipc.DialOptions, args []string, w io.Writer) error {
	fs := flag.NewFlagSet("pair", flag.ContinueOnError)
	fs.SetOutput(w)
	fs.Usage = func() { fmt.Fprintln(w, pairUsage) }
	name := fs.String("name", "", "this device's name (default: its host name)")
	actor := fs.String("actor", "", "the new device's actor: collaborator (default) or owner")
	var pos []string
	for { // flags may follow the positional arguments
		if err := fs.Parse(args); err != nil {
			return usageError{err}
		}
		if fs.NArg() == 0 {
			break
		}
		pos, args = append(pos, fs.Arg(0)), fs.Args()[1:]
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	switch len(pos) {
	case 0:
		return pairStart(ctx, addr, opts, *actor, w)
	case 2:
		return pairJoin(ctx, pos[0], pos[1], *name, opts.Client, w)
	}
	return usageError{errors.New(pairUsage)}
}

func pairStart(ctx context.Context, addr string, opts ipc.DialOptions, actor string, w io.Writer) error {
	pc, err := requestPairCode(ctx, addr, opts, actor)
	if err != nil {
		return err
	}
	fmt.Fprint(w, pairCodeText(pc, addr))
	return nil
}

// requestPairCode asks hearth for a pairing code.
func requestPairCode(ctx context.Context, addr string, opts ipc.DialOptions, actor string) (*ipc.PairCode, error) {
	conn, err := ipc.Dial(ctx, addr, opts)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	ref := newRef()
	if err := conn.Send(&ipc.PairStart{Actor: actor, Ref: ref}); err != nil {
		return nil, fmt.Errorf("send: %w", err)
	}
	m, err := recvRef(ctx, conn, ref)
	if err != nil {
		return nil, err
	}
	pc, ok := m.(*ipc.PairCode)
	if !ok {
		return nil, fmt.Errorf("hearth answered %q to pair_start", m.Type())
	}
	return pc, nil
}

// pairCodeText is how a pairing code is shown to the owner.
func pairCodeText(pc *ipc.PairCode, addr string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "pairing code: %s (a new %s device; single use, until %s)\n", pc.Code, pc.Actor, pc.Expires.Local().Format("15:04:05"))
	if pc.Fingerprint != "" {
		fmt.Fprintf(&b, "hearth's TLS fingerprint: %s\n", pc.Fingerprint)
		fmt.Fprintf(&b, "on the new device: mnemo pair tls://%s %s --name NAME\n", strings.TrimPrefix(addr, ipc.TLSScheme), pc.Code)
		fmt.Fprintln(&b, "and check it shows the same fingerprint")
	} else {
		fmt.Fprintf(&b, "on the new device: mnemo pair %s %s --name NAME\n", addr, pc.Code)
	}
	return b.String()
}

// recvRef reads until the answer to ref: an *ipc.Error with that ref is
// returned as the error.
func recvRef(ctx context.Context, conn *ipc.Conn, ref string) (ipc.Msg, error) {
	for {
		m, err := conn.Recv(ctx)
		if err != nil {
			return nil, err
		}
		switch m := m.(type) {
		case *ipc.Error:
			if m.Ref == ref {
				return nil, m
			}
		case *ipc.PairCode:
			if m.Ref == ref {
				return m, nil
			}
		case *ipc.DeviceList:
			if m.Ref == ref {
				return m, nil
			}
		case *ipc.DeviceRevoked:
			if m.Ref == ref {
				return m, nil
			}
		}
	}
}

func pairJoin(ctx context.Context, addr, code, name, client string, w io.Writer) error {
	if name == "" {
		name = hostName()
	}
	var pinned string
	opts := ipc.DialOptions{Client: client, OnPin: func(host, fp string) {
		pinned = fp
		fmt.Fprintf(w, "hearth at %s presents certificate %s: pinned (compare it with the one the owner's screen shows)\n", host, fp)
	}}
	p, err := ipc.PairDevice(ctx, addr, opts, code, name)
	if err != nil {
		var e *ipc.Error
		if errors.As(err, &e) && e.Code == ipc.CodeUnauthorized {
			return fmt.Errorf("hearth refused the code: it is wrong, expired or used; ask the owner for a new one (mnemo pair, or /pair in the UI)")
		}
		return err
	}
	if pinned != "" && p.Fingerprint != "" && p.Fingerprint != pinned {
		return fmt.Errorf("hearth says its certificate is %s but presented %s: not saved", p.Fingerprint, pinned)
	}
	path, err := ipc.DevicePath()
	if err != nil {
		return err
	}
	if err := ipc.SaveDevice(path, ipc.DeviceCredential{Addr: addr, Token: p.Token, Fingerprint: p.Fingerprint, ID: p.Device.ID, Name: p.Device.Name}); err != nil {
		return err
	}
	fmt.Fprintf(w, "paired as %q (device %s, %s); mnemo now connects to %s with this device's token\n", p.Device.Name, p.Device.ID, p.Device.Actor, addr)
	return nil
}

// devicesUsage is mnemo devices' help.
const devicesUsage = `usage: mnemo devices [revoke ID]
  List the paired devices (the owner only), or revoke one: its token stops
  working at once and its open connections are closed.`

func devicesCmd(ctx context.Context, addr string, opts ipc.DialOptions, args []string, w io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var m ipc.Msg
	ref := newRef()
	switch {
	case len(args) == 0:
		m = &ipc.Devices{Ref: ref}
	case len(args) == 2 && args[0] == "revoke":
		m = &ipc.DeviceRevoke{ID: args[1], Ref: ref}
	default:
		return usageError{errors.New(devicesUsage)}
	}
	conn, err := ipc.Dial(ctx, addr, opts)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.Send(m); err != nil {
		return fmt.Errorf("send: %w", err)
	}
	ans, err := recvRef(ctx, conn, ref)
	if err != nil {
		return err
	}
	switch ans := ans.(type) {
	case *ipc.DeviceRevoked:
		fmt.Fprintf(w, "revoked %s\n", ans.ID)
	case *ipc.DeviceList:
		if len(ans.Devices) == 0 {
			fmt.Fprintln(w, "no paired devices (mnemo pair makes a code for one)")
			return nil
		}
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tNAME\tACTOR\tPAIRED\tLAST USED\tSTATE")
		for _, d := range ans.Devices {
			state, last := "active", "-"
			if !d.RevokedAt.IsZero() {
				state = "revoked " + d.RevokedAt.Local().Format(time.DateTime)
			}
			if !d.LastUsed.IsZero() {
				last = d.LastUsed.Local().Format(time.DateTime)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", d.ID, d.Name, d.Actor, d.Created.Local().Format(time.DateTime), last, state)
		}
		return tw.Flush()
	}
	return nil
}

// trustUsage is mnemo trust's help.
const trustUsage = `usage: mnemo trust [--forget HOST:PORT]
  List the hearth certificates this client pinned (known_hearths), or
  forget one so the next connection pins the certificate it meets.`

func trustCmd(args []string, w io.Writer) error {
	known, err := ipc.DefaultKnownHearths()
	if err != nil {
		return err
	}
	switch {
	case len(args) == 0:
		fmt.Fprintf(w, "pinned hearths (%s):\n", known.Path)
		return known.List(w)
	case len(args) == 2 && (args[0] == "--forget" || args[0] == "-forget"):
		host, _ := ipc.SplitAddr(args[1])
		ok, err := known.Forget(host)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("no certificate is pinned for %s (mnemo trust lists them)", host)
		}
		fmt.Fprintf(w, "forgot %s's certificate; the next connection pins the one it presents\n", host)
		return nil
	}
	return usageError{errors.New(trustUsage)}
}

// hostName names this device by default.
func hostName() string {
	if h, err := os.Hostname(); err == nil && h != "" {
		return h
	}
	return "device"
}
