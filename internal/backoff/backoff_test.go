package backoff

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

const ms = time.Millisecond

func TestDelayWithoutJitter(t *testing.T) {
	tests := []struct {
		name    string
		p       Policy
		attempt int
		want    time.Duration
	}{
		{"first", Policy{Initial: 250 * ms, Max: 10 * time.Second}, 1, 250 * ms},
		{"zero counts as first", Policy{Initial: 250 * ms, Max: 10 * time.Second}, 0, 250 * ms},
		{"doubles", Policy{Initial: 250 * ms, Max: 10 * time.Second}, 3, time.Second},
		{"capped", Policy{Initial: 250 * ms, Max: 10 * time.Second}, 7, 10 * time.Second},
		{"stays capped, no overflow", Policy{Initial: time.Nanosecond, Max: 1 << 62}, 1000, 1 << 62},
		{"max below initial", Policy{Initial: 3 * ms, Max: ms}, 5, 3 * ms},
		{"times four", Policy{Initial: 250 * ms, Max: 2 * time.Second, Multiplier: 4}, 2, time.Second},
		{"times four, capped", Policy{Initial: 250 * ms, Max: 2 * time.Second, Multiplier: 4}, 3, 2 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.p.Delay(tt.attempt); got != tt.want {
				t.Errorf("Delay(%d) = %v, want %v", tt.attempt, got, tt.want)
			}
		})
	}
}

func TestDelayJitterStaysInItsRangeAndSpreads(t *testing.T) {
	tests := []struct {
		name   string
		p      Policy
		lo, hi time.Duration
	}{
		{"both ways", Policy{Initial: time.Second, Max: time.Second, JitterBelow: 0.2, JitterAbove: 0.2}, 800 * ms, 1200 * ms},
		{"below only", Policy{Initial: time.Second, Max: time.Second, JitterBelow: 0.5}, 500 * ms, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var low, high bool
			mid := (tt.lo + tt.hi) / 2
			for range 1000 {
				d := tt.p.Delay(1)
				if d < tt.lo || d > tt.hi {
					t.Fatalf("Delay = %v, want within [%v, %v]", d, tt.lo, tt.hi)
				}
				low, high = low || d < mid, high || d > mid
			}
			if !low || !high {
				t.Errorf("1000 delays all on one side of %v: no spread", mid)
			}
		})
	}
}

func TestSleep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		if !Sleep(context.Background(), time.Minute) || time.Since(start) != time.Minute {
			t.Errorf("Sleep did not wait its minute")
		}
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(time.Second, cancel)
		if Sleep(ctx, time.Hour) {
			t.Errorf("Sleep returned true after its context ended")
		}
	})
}
