package rpc

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestRetryTransientCodes(t *testing.T) {
	for _, c := range []codes.Code{codes.Unavailable, codes.DeadlineExceeded, codes.ResourceExhausted,
		codes.Aborted, codes.Internal, codes.Unknown} {
		t.Run(c.String(), func(t *testing.T) {
			calls := 0
			r := Policy{Backoff: Backoff{Initial: time.Millisecond, Max: 2 * time.Millisecond}, Timeout: 5 * time.Second}
			n, err := r.Do(context.Background(), "op", func(context.Context) error {
				calls++
				if calls <= 3 {
					return status.Error(c, "flaky")
				}
				return nil
			})
			if err != nil || n != 3 || calls != 4 {
				t.Errorf("retries %d calls %d err %v, want 3 4 nil", n, calls, err)
			}
		})
	}
}

func TestRetryDefinitiveCodes(t *testing.T) {
	for _, c := range []codes.Code{codes.PermissionDenied, codes.NotFound, codes.InvalidArgument, codes.FailedPrecondition} {
		t.Run(c.String(), func(t *testing.T) {
			calls := 0
			r := Policy{Backoff: Backoff{Initial: time.Millisecond, Max: time.Millisecond}, Timeout: 5 * time.Second}
			n, err := r.Do(context.Background(), "publish to T", func(context.Context) error {
				calls++
				return status.Error(c, "server says no")
			})
			if calls != 1 || n != 0 {
				t.Errorf("calls %d retries %d, want 1 0", calls, n)
			}
			want := "publish to T: server says no"
			if err == nil || err.Error() != status.Error(c, want).Error() || Code(err) != c {
				t.Errorf("err %v, want code %v and text %q", err, c, want)
			}
		})
	}
}

func TestRetryGivesUpAtTimeout(t *testing.T) {
	r := Policy{Backoff: Backoff{Initial: 10 * time.Millisecond, Max: 20 * time.Millisecond}, Timeout: 200 * time.Millisecond}
	start := time.Now()
	n, err := r.Do(context.Background(), "op", func(context.Context) error {
		return status.Error(codes.Unavailable, "down")
	})
	el := time.Since(start)
	if Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "op: down (gave up after") {
		t.Errorf("err %v", err)
	}
	if n < 3 {
		t.Errorf("only %d retries in 200ms with 10-20ms backoff", n)
	}
	if el > 2*time.Second {
		t.Errorf("took %v, bound is 200ms", el)
	}
}

func TestRetryBoundsHungAttempt(t *testing.T) {
	r := Policy{Backoff: Backoff{Initial: time.Millisecond, Max: time.Millisecond}, Timeout: 100 * time.Millisecond}
	start := time.Now()
	_, err := r.Do(context.Background(), "op", func(ctx context.Context) error {
		<-ctx.Done() // a server that never answers
		return status.FromContextError(ctx.Err()).Err()
	})
	if Code(err) != codes.DeadlineExceeded || time.Since(start) > 2*time.Second {
		t.Errorf("err %v after %v, want DEADLINE_EXCEEDED after ~100ms", err, time.Since(start))
	}
}

func TestRetryReportsServerErrorNotOwnDeadline(t *testing.T) {
	r := Policy{Backoff: Backoff{Initial: time.Millisecond, Max: time.Millisecond}, Timeout: 100 * time.Millisecond}
	calls := 0
	_, err := r.Do(context.Background(), "op", func(ctx context.Context) error {
		calls++
		if calls == 1 {
			return status.Error(codes.Unavailable, "backend down")
		}
		<-ctx.Done() // the next attempt runs into the overall deadline
		return status.FromContextError(ctx.Err()).Err()
	})
	if Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "op: backend down (gave up after 2 attempts") {
		t.Errorf("err %v, want the server's UNAVAILABLE after 2 attempts", err)
	}
}

func TestRetryStopsOnCallerCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	r := Policy{Backoff: Backoff{Initial: time.Hour, Max: time.Hour}, Timeout: 10 * time.Hour}
	done := make(chan error, 1)
	go func() {
		_, err := r.Do(ctx, "op", func(context.Context) error { return status.Error(codes.Unavailable, "down") })
		done <- err
	}()
	cancel()
	select {
	case err := <-done:
		if Code(err) != codes.Canceled {
			t.Errorf("err %v, want CANCELLED", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Do kept sleeping after cancel")
	}
}
