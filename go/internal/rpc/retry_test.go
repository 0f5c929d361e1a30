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

// Deadlines, not the wall clock, show the bound: every attempt runs under
// one deadline, the policy's timeout after Do started (so no later than the
// timeout after the first attempt began), not AttemptTimeout's minute. A
// loaded machine that delays the retries changes their count, never this.
type attempts struct{ began, deadline []time.Time }

func (a *attempts) record(ctx context.Context) {
	dl, _ := ctx.Deadline()
	a.began = append(a.began, time.Now())
	a.deadline = append(a.deadline, dl)
}

func (a *attempts) within(t *testing.T, timeout time.Duration) {
	t.Helper()
	if len(a.began) == 0 {
		t.Fatal("no attempt")
	}
	for i, dl := range a.deadline {
		if dl.IsZero() || !dl.Equal(a.deadline[0]) || dl.After(a.began[0].Add(timeout)) {
			t.Errorf("attempt %d: deadline %v after the first attempt began, want one deadline for all, within %v",
				i, dl.Sub(a.began[0]), timeout)
		}
	}
}

func TestRetryGivesUpAtTimeout(t *testing.T) {
	// At least one retry: a second attempt is skipped only if the first
	// left less than one backoff (20 ms) of the 2 s.
	r := Policy{Backoff: Backoff{Initial: 10 * time.Millisecond, Max: 20 * time.Millisecond}, Timeout: 2 * time.Second}
	var a attempts
	n, err := r.Do(context.Background(), "op", func(ctx context.Context) error {
		a.record(ctx)
		return status.Error(codes.Unavailable, "down")
	})
	if Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "op: down (gave up after") {
		t.Errorf("err %v", err)
	}
	if n < 1 || n != len(a.began)-1 {
		t.Errorf("%d retries of %d attempts: want the failures retried until the timeout", n, len(a.began))
	}
	a.within(t, r.Timeout)
}

func TestRetryBoundsHungAttempt(t *testing.T) {
	r := Policy{Backoff: Backoff{Initial: time.Millisecond, Max: time.Millisecond}, Timeout: 100 * time.Millisecond}
	var a attempts
	_, err := r.Do(context.Background(), "op", func(ctx context.Context) error {
		a.record(ctx)
		<-ctx.Done() // a server that never answers
		return status.FromContextError(ctx.Err()).Err()
	})
	if Code(err) != codes.DeadlineExceeded {
		t.Errorf("err %v, want DEADLINE_EXCEEDED", err)
	}
	a.within(t, r.Timeout)
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
