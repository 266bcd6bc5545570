package nettest

import (
	"bufio"
	"io"
	"net"
	"testing"
	"time"
)

// echo starts a line echo server and returns its address.
func echo(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

// roundTrip sends line through c and reads it back; err is the read's.
func roundTrip(c net.Conn, r *bufio.Reader, line string) (string, error) {
	if _, err := io.WriteString(c, line+"\n"); err != nil {
		return "", err
	}
	got, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	return got[:len(got)-1], nil
}

func dial(t *testing.T, g *Gate) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", g.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second)) // a broken gate fails, not hangs
	return c, bufio.NewReader(c)
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(time.Millisecond) // polling the gate's counter
	}
}

func TestGateForwards(t *testing.T) {
	g := NewGate(t, echo(t))
	c, r := dial(t, g)
	if got, err := roundTrip(c, r, "hello"); err != nil || got != "hello" {
		t.Fatalf("through the gate: %q, %v", got, err)
	}
}

func TestGateHangHoldsUntilResume(t *testing.T) {
	g := NewGate(t, echo(t))
	c, r := dial(t, g)
	if _, err := roundTrip(c, r, "warm"); err != nil {
		t.Fatal(err)
	}
	g.Hang()
	got := make(chan string, 1)
	go func() {
		s, _ := roundTrip(c, r, "held")
		got <- s
	}()
	waitFor(t, "the write held at the gate", func() bool { return g.Held() == 1 })
	select {
	case s := <-got:
		t.Fatalf("read %q through a hung gate", s)
	default:
	}
	g.Resume()
	if s := <-got; s != "held" {
		t.Fatalf("after Resume: %q, want held", s)
	}
	if n := g.Held(); n != 0 {
		t.Errorf("Held after Resume = %d", n)
	}
}

func TestGateDownAndUp(t *testing.T) {
	target := echo(t)
	g := NewGate(t, target)
	addr := g.Addr()
	old, oldR := dial(t, g)
	if _, err := roundTrip(old, oldR, "before"); err != nil {
		t.Fatal(err)
	}
	g.Hang()
	go io.WriteString(old, "dropped\n")
	waitFor(t, "the write held at the gate", func() bool { return g.Held() == 1 })

	g.Down()
	if s, err := oldR.ReadString('\n'); err == nil {
		t.Fatalf("a connection open at Down read %q, want it closed", s)
	}
	c, r := dial(t, g)
	if s, err := roundTrip(c, r, "down"); err == nil {
		t.Fatalf("a connection made while down read %q, want it reset", s)
	}

	g.Up()
	if g.Addr() != addr {
		t.Fatalf("address changed: %s → %s", addr, g.Addr())
	}
	c, r = dial(t, g)
	if got, err := roundTrip(c, r, "again"); err != nil || got != "again" {
		t.Fatalf("after Up: %q, %v", got, err)
	}
}
