package subscriber

import (
	"context"
	"fmt"
	"sync"
	"time"

	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	gax "github.com/googleapis/gax-go/v2"

	"github.com/pubsub-go/pubsub-go/go/internal/conn"
)

// maxIDsPerRequest caps the ack ids in one Acknowledge or
// ModifyAckDeadline request (the service limit is on request size; 2500
// ids of ~200 bytes stay well below it).
const maxIDsPerRequest = 2500

// parallelRequests bounds the chunks of one call in flight at once.
const parallelRequests = 4

// ackRPCs is the part of the generated client the acker uses.
type ackRPCs interface {
	Acknowledge(context.Context, *pb.AcknowledgeRequest, ...gax.CallOption) error
	ModifyAckDeadline(context.Context, *pb.ModifyAckDeadlineRequest, ...gax.CallOption) error
}

// acker sends acks, nacks and deadline modifications as unary RPCs,
// chunked and retried a bounded number of times on transient errors.
type acker struct {
	rpc          ackRPCs
	subscription string
	attempts     int
	timeout      time.Duration // per attempt
	retry        backoff
}

// noRetry turns off the generated client's own retries: the acker's loop
// is the only one, so attempts are bounded and counted in one place.
var noRetry = gax.WithRetry(nil)

// ack acknowledges ids. It returns how many were acknowledged.
func (a *acker) ack(ctx context.Context, ids []string) (int, error) {
	return a.each(ctx, "acknowledge", ids, func(ctx context.Context, chunk []string) error {
		return a.rpc.Acknowledge(ctx, &pb.AcknowledgeRequest{Subscription: a.subscription, AckIds: chunk}, noRetry)
	})
}

// modack sets the deadline of ids to secs seconds (0 nacks them). It
// returns how many were modified.
func (a *acker) modack(ctx context.Context, ids []string, secs int32) (int, error) {
	return a.each(ctx, "modify ack deadline", ids, func(ctx context.Context, chunk []string) error {
		return a.rpc.ModifyAckDeadline(ctx, &pb.ModifyAckDeadlineRequest{Subscription: a.subscription, AckIds: chunk, AckDeadlineSeconds: secs}, noRetry)
	})
}

// each runs call on chunks of ids, a few at a time, and reports the ids
// done and the first error, which keeps its gRPC code.
func (a *acker) each(ctx context.Context, what string, ids []string, call func(context.Context, []string) error) (int, error) {
	var (
		mu       sync.Mutex
		done     int
		failed   int
		firstErr error
		wg       sync.WaitGroup
		sem      = make(chan struct{}, parallelRequests)
	)
	for start := 0; start < len(ids); start += maxIDsPerRequest {
		chunk := ids[start:min(start+maxIDsPerRequest, len(ids))]
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			err := a.withRetry(ctx, func(ctx context.Context) error { return call(ctx, chunk) })
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed += len(chunk)
				if firstErr == nil {
					firstErr = err
				}
				return
			}
			done += len(chunk)
		})
	}
	wg.Wait()
	if firstErr != nil {
		return done, fmt.Errorf("%s of %d of %d ids on %s failed: %w", what, failed, len(ids), a.subscription, firstErr)
	}
	return done, nil
}

// withRetry runs f until it succeeds, fails permanently, or has been tried
// a.attempts times.
func (a *acker) withRetry(ctx context.Context, f func(context.Context) error) error {
	for attempt := 0; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, a.timeout)
		err := f(actx)
		cancel()
		if err == nil || !conn.Retryable(err) || attempt+1 >= a.attempts || ctx.Err() != nil {
			return err
		}
		if err := sleep(ctx, a.retry.delay(attempt)); err != nil {
			return err
		}
	}
}
