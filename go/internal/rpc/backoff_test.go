package rpc

import (
	"context"
	"testing"
	"time"
)

func TestBackoffGrowsAndCaps(t *testing.T) {
	b := Backoff{Initial: 100 * time.Millisecond, Max: time.Second}
	for n, want := range []time.Duration{100, 200, 400, 800, 1000, 1000, 1000} {
		want *= time.Millisecond
		for range 50 {
			got := b.Delay(n)
			if got < want/2 || got > want {
				t.Fatalf("delay(%d) = %v, want in [%v, %v]", n, got, want/2, want)
			}
		}
	}
	if got := b.Delay(1 << 20); got > time.Second {
		t.Errorf("delay of a huge retry count = %v, above the cap", got)
	}
	// Jitter: many draws at one level are not all equal.
	seen := map[time.Duration]bool{}
	for range 20 {
		seen[b.Delay(3)] = true
	}
	if len(seen) < 2 {
		t.Error("no jitter: 20 draws gave one value")
	}
}

// The acker's budget (config.go): 8 attempts, whose 7 pauses at 100ms..10s
// add up to at least 6.3s, so an outage of a few seconds does not fail an ack.
func TestAckRetryBudgetCoversAFewSeconds(t *testing.T) {
	b := Backoff{Initial: 100 * time.Millisecond, Max: 10 * time.Second}
	var least time.Duration
	for n := range 7 {
		d := b.Initial << n
		least += min(d, b.Max) / 2
	}
	if least < 6300*time.Millisecond {
		t.Fatalf("lower bound of 7 pauses = %v, want >= 6.3s", least)
	}
}

func TestSleepStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	if err := Sleep(ctx, time.Minute); err == nil {
		t.Fatal("Sleep on a cancelled context returned nil")
	}
	if time.Since(start) > time.Second {
		t.Errorf("Sleep ignored cancellation for %v", time.Since(start))
	}
	if err := Sleep(context.Background(), time.Millisecond); err != nil {
		t.Errorf("Sleep = %v, want nil", err)
	}
}
