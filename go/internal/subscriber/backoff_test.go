package subscriber

import (
	"context"
	"testing"
	"time"
)

func TestBackoffGrowsAndCaps(t *testing.T) {
	b := backoff{initial: 100 * time.Millisecond, max: time.Second, factor: 2}
	for n, want := range []time.Duration{100, 200, 400, 800, 1000, 1000, 1000} {
		want *= time.Millisecond
		for range 50 {
			got := b.delay(n)
			if got < want/2 || got > want {
				t.Fatalf("delay(%d) = %v, want in [%v, %v]", n, got, want/2, want)
			}
		}
	}
	if got := b.delay(1 << 20); got > time.Second {
		t.Errorf("delay of a huge retry count = %v, above the cap", got)
	}
}

func TestSleepStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	if err := sleep(ctx, time.Minute); err == nil {
		t.Fatal("sleep on a cancelled context returned nil")
	}
	if time.Since(start) > time.Second {
		t.Errorf("sleep ignored cancellation for %v", time.Since(start))
	}
	if err := sleep(context.Background(), time.Millisecond); err != nil {
		t.Errorf("sleep = %v, want nil", err)
	}
}
