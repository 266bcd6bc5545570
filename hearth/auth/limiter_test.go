package auth

import (
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func TestLimiter(t *testing.T) {
	alice := Identity{Subject: "alice", Actor: ActorCollaborator}
	bob := Identity{Subject: "bob", Actor: ActorCollaborator}
	agent := Identity{Subject: "alice", Actor: ActorExternalAgent} // same name, another actor
	owner := Identity{Subject: "owner", Actor: ActorOwner}
	type step struct {
		wait time.Duration // the clock moves first
		who  Identity
		want time.Duration // 0: allowed; else the retry-after
	}
	for _, tt := range []struct {
		name  string
		per   map[Actor]int
		steps []step
	}{
		{"burst then refused, until a token comes back", map[Actor]int{ActorCollaborator: 2}, []step{
			{0, alice, 0}, {0, alice, 0}, {0, alice, 30 * time.Second},
			{10 * time.Second, alice, 20 * time.Second},
			{20 * time.Second, alice, 0},
			{0, alice, 30 * time.Second},
		}},
		{"identities are independent", map[Actor]int{ActorCollaborator: 1, ActorExternalAgent: 1}, []step{
			{0, alice, 0}, {0, alice, time.Minute}, {0, bob, 0}, {0, agent, 0}, {0, bob, time.Minute},
		}},
		{"an unlisted actor is not limited", map[Actor]int{ActorCollaborator: 1}, []step{
			{0, owner, 0}, {0, owner, 0}, {0, owner, 0}, {0, agent, 0}, {0, agent, 0},
		}},
		{"zero is no limit", map[Actor]int{ActorCollaborator: 0}, []step{
			{0, alice, 0}, {0, alice, 0},
		}},
		{"a long rest fills the allowance, never beyond it", map[Actor]int{ActorCollaborator: 2}, []step{
			{0, alice, 0}, {time.Hour, alice, 0}, {0, alice, 0}, {0, alice, 30 * time.Second},
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			clk := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
			l := NewLimiter(LimiterOptions{PerMinute: tt.per, Now: clk.now})
			refused := 0
			for i, s := range tt.steps {
				clk.add(s.wait)
				got := l.Allow(s.who)
				if got != s.want {
					t.Errorf("step %d (%s): Allow = %v, want %v", i, s.who.Subject, got, s.want)
				}
				if got > 0 {
					refused++
				}
			}
			if n := l.Limited(); n != uint64(refused) {
				t.Errorf("Limited() = %d, want %d", n, refused)
			}
		})
	}
}

// TestLimiterRealClock waits out a refusal in a synctest bubble, on the
// Limiter's default clock.
func TestLimiterRealClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := NewLimiter(LimiterOptions{PerMinute: map[Actor]int{ActorService: 6}})
		svc := Identity{Subject: "backup", Actor: ActorService}
		for range 6 {
			if d := l.Allow(svc); d != 0 {
				t.Fatalf("within the burst: refused for %v", d)
			}
		}
		d := l.Allow(svc)
		if d != 10*time.Second {
			t.Fatalf("past the burst: retry after %v, want 10s", d)
		}
		time.Sleep(d) // the bubble's clock: no real wait
		if d := l.Allow(svc); d != 0 {
			t.Fatalf("after the wait: refused for %v", d)
		}
	})
}

func TestLimiterNil(t *testing.T) {
	var l *Limiter
	if d := l.Allow(Identity{Actor: ActorService}); d != 0 || l.Limited() != 0 {
		t.Fatalf("nil Limiter refused")
	}
}

// TestLimiterBounded: a flood of identities keeps at most MaxSubjects.
func TestLimiterBounded(t *testing.T) {
	clk := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	l := NewLimiter(LimiterOptions{PerMinute: map[Actor]int{ActorService: 1}, MaxSubjects: 8, Now: clk.now})
	for i := range 100 {
		l.Allow(Identity{Subject: fmt.Sprint("s", i), Actor: ActorService})
		clk.add(time.Minute) // the earlier ones are whole again
		l.mu.Lock()
		n := len(l.subjects)
		l.mu.Unlock()
		if n > 8 {
			t.Fatalf("%d identities remembered, want at most 8", n)
		}
	}
	// The latest one spent its allowance a minute ago: whole again.
	if d := l.Allow(Identity{Subject: "s99", Actor: ActorService}); d != 0 {
		t.Fatalf("s99 refused after its minute: %v", d)
	}
}

func TestLimiterConcurrent(t *testing.T) {
	clk := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	l := NewLimiter(LimiterOptions{PerMinute: map[Actor]int{ActorCollaborator: 50}, Now: clk.now})
	var wg sync.WaitGroup
	var mu sync.Mutex
	allowed := 0
	for range 8 {
		wg.Go(func() {
			for range 20 {
				if l.Allow(Identity{Subject: "alice", Actor: ActorCollaborator}) == 0 {
					mu.Lock()
					allowed++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if allowed != 50 {
		t.Fatalf("%d of 160 allowed with the clock stopped, want exactly the burst of 50", allowed)
	}
}
