package publisher

import (
	"context"
	"testing"
	"time"

	"github.com/pubsub-go/pubsub-go/go/internal/rpc"
	"google.golang.org/grpc/codes"
)

// acquireAsync runs acquire in a goroutine and returns its result channel.
func acquireAsync(ctx context.Context, f *flowController, stop chan struct{}, n int64) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- f.acquire(ctx, stop, n) }()
	return ch
}

func waiting(f *flowController) int { _, _, w := f.stats(); return w }

func TestFlowControlBlocksAndResumes(t *testing.T) {
	f := newFlowController(100)
	ctx := context.Background()
	if err := f.acquire(ctx, nil, 60); err != nil {
		t.Fatal(err)
	}
	done := acquireAsync(ctx, f, nil, 50) // 110 > 100: must wait
	waitFor(t, 5*time.Second, "acquire to block", func() bool { return waiting(f) == 1 })
	select {
	case err := <-done:
		t.Fatalf("acquire returned (%v) while over the bound", err)
	default:
	}
	f.release(60)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("acquire did not resume after release")
	}
	if used, peak, _ := f.stats(); used != 50 || peak != 60 {
		t.Errorf("used %d peak %d, want 50 and 60", used, peak)
	}
}

func TestFlowControlFIFO(t *testing.T) {
	f := newFlowController(100)
	ctx := context.Background()
	f.acquire(ctx, nil, 90)
	big := acquireAsync(ctx, f, nil, 80)
	waitFor(t, 5*time.Second, "big waiter", func() bool { return waiting(f) == 1 })
	small := acquireAsync(ctx, f, nil, 5) // would fit, but queues behind big
	waitFor(t, 5*time.Second, "small waiter", func() bool { return waiting(f) == 2 })
	f.release(90)
	if err := <-big; err != nil {
		t.Fatal(err)
	}
	if err := <-small; err != nil { // 80 + 5 fits
		t.Fatal(err)
	}
}

func TestFlowControlOversizeAloneAdmitted(t *testing.T) {
	f := newFlowController(10)
	if err := f.acquire(context.Background(), nil, 1000); err != nil {
		t.Fatalf("oversize request with nothing in flight: %v", err)
	}
	done := acquireAsync(context.Background(), f, nil, 1)
	waitFor(t, 5*time.Second, "waiter behind oversize", func() bool { return waiting(f) == 1 })
	f.release(1000)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestFlowControlCancel(t *testing.T) {
	f := newFlowController(100)
	f.acquire(context.Background(), nil, 100)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	err := f.acquire(ctx, nil, 10)
	if rpc.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("err %v, want DEADLINE_EXCEEDED", err)
	}
	stop := make(chan struct{})
	done := acquireAsync(context.Background(), f, stop, 10)
	waitFor(t, 5*time.Second, "waiter", func() bool { return waiting(f) == 1 })
	close(stop)
	if err := <-done; err != errClosed {
		t.Fatalf("err %v, want errClosed", err)
	}
	// Abandoned waits must not hold capacity.
	f.release(100)
	if used, _, w := f.stats(); used != 0 || w != 0 {
		t.Errorf("used %d waiting %d after release, want 0 0", used, w)
	}
}

// A waiter whose bytes are granted just as its context ends must either
// keep them (nil error) or hand them back (error), never leak them.
func TestFlowControlGrantRacesCancel(t *testing.T) {
	f := newFlowController(100)
	for i := range 300 {
		f.acquire(context.Background(), nil, 100)
		ctx, cancel := context.WithCancel(context.Background())
		done := acquireAsync(ctx, f, nil, 10)
		waitFor(t, 5*time.Second, "waiter", func() bool { return waiting(f) == 1 })
		if i%2 == 0 { // grant and cancel as close together as possible
			f.release(100)
			cancel()
		} else {
			cancel()
			f.release(100)
		}
		err := <-done
		used, _, _ := f.stats()
		if (err == nil && used != 10) || (err != nil && used != 0) {
			t.Fatalf("iteration %d: err %v with %d bytes in use", i, err, used)
		}
		if err == nil {
			f.release(10)
		}
	}
}
