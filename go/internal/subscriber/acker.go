package subscriber

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	gax "github.com/googleapis/gax-go/v2"
	"github.com/googleapis/gax-go/v2/apierror"
	"google.golang.org/grpc/codes"

	"github.com/pubsub-go/pubsub-go/go/internal/rpc"
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
	retry        rpc.Backoff
}

// noRetry turns off the generated client's own retries: the acker's loop
// is the only one, so attempts are bounded and counted in one place.
var noRetry = gax.WithRetry(nil)

// AckOutcome is what one ack, nack or modack call achieved.
type AckOutcome struct {
	// Done counts the ack ids the service took.
	Done int `json:"done"`
	// Rejected counts, by reason, the ack ids the service refused for good
	// (exactly-once delivery: e.g. PERMANENT_FAILURE_INVALID_ACK_ID, an
	// expired lease). They were not acked: the message comes back.
	Rejected map[string]int `json:"rejected,omitempty"`
}

// RejectedCount is the number of rejected ack ids.
func (o AckOutcome) RejectedCount() int {
	n := 0
	for _, c := range o.Rejected {
		n += c
	}
	return n
}

func (o *AckOutcome) add(c AckOutcome) {
	o.Done += c.Done
	for k, v := range c.Rejected {
		if o.Rejected == nil {
			o.Rejected = map[string]int{}
		}
		o.Rejected[k] += v
	}
}

// ack acknowledges ids.
func (a *acker) ack(ctx context.Context, ids []string) (AckOutcome, error) {
	return a.each(ctx, "acknowledge", ids, func(ctx context.Context, chunk []string) error {
		return a.rpc.Acknowledge(ctx, &pb.AcknowledgeRequest{Subscription: a.subscription, AckIds: chunk}, noRetry)
	})
}

// modack sets the deadline of ids to secs seconds (0 nacks them).
func (a *acker) modack(ctx context.Context, ids []string, secs int32) (AckOutcome, error) {
	return a.each(ctx, "modify ack deadline", ids, func(ctx context.Context, chunk []string) error {
		return a.rpc.ModifyAckDeadline(ctx, &pb.ModifyAckDeadlineRequest{Subscription: a.subscription, AckIds: chunk, AckDeadlineSeconds: secs}, noRetry)
	})
}

// each runs call on chunks of ids, a few at a time, and reports the ids
// done or rejected, and the first error that is not a per-ack-id
// rejection (it keeps its gRPC code; the caller may retry those ids).
func (a *acker) each(ctx context.Context, what string, ids []string, call func(context.Context, []string) error) (AckOutcome, error) {
	var (
		mu       sync.Mutex
		out      AckOutcome
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
			got, left, err := a.chunk(ctx, chunk, call)
			mu.Lock()
			defer mu.Unlock()
			out.add(got)
			if err != nil {
				failed += left
				if firstErr == nil {
					firstErr = err
				}
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return out, fmt.Errorf("%s of %d of %d ids on %s failed: %w", what, failed, len(ids), a.subscription, firstErr)
	}
	return out, nil
}

// chunk sends one request's ids until each is done, rejected, or still
// failing after a.attempts tries (left counts those). On a subscription
// with exactly-once delivery the service answers an error whose ErrorInfo
// metadata maps failed ack ids to a reason; as in Google's clients, ids
// with a TRANSIENT_ reason are retried (only they), other listed ids are
// rejected for good, and unlisted ids share the fate of the status code.
func (a *acker) chunk(ctx context.Context, ids []string, call func(context.Context, []string) error) (out AckOutcome, left int, err error) {
	pending := ids
	for attempt := 0; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, a.timeout)
		err = call(actx, pending)
		cancel()
		if err == nil {
			out.Done += len(pending)
			return out, 0, nil
		}
		perID := ackIDErrors(err)
		if perID == nil {
			if !rpc.Retryable(err) || attempt+1 >= a.attempts || ctx.Err() != nil {
				return out, len(pending), err
			}
		} else {
			transient := rpc.Retryable(err)
			var retry []string
			for _, id := range pending {
				reason, listed := perID[id]
				switch {
				case listed && strings.HasPrefix(reason, "TRANSIENT_"), !listed && transient:
					retry = append(retry, id)
				default:
					if !listed {
						reason = rpc.Code(err).String()
					}
					if out.Rejected == nil {
						out.Rejected = map[string]int{}
					}
					out.Rejected[reason]++
				}
			}
			if len(retry) == 0 {
				return out, 0, nil
			}
			pending = retry
			if attempt+1 >= a.attempts || ctx.Err() != nil {
				return out, len(pending), rpc.Errorf(codes.Unavailable, "%d ack ids still failing transiently after %d attempts: %v", len(pending), a.attempts, err)
			}
		}
		if err := rpc.Sleep(ctx, a.retry.Delay(attempt)); err != nil {
			return out, len(pending), err
		}
	}
}

// ackIDErrors is the per-ack-id failure map of an exactly-once delivery
// error (ErrorInfo metadata), or nil when err carries none.
func ackIDErrors(err error) map[string]string {
	apiErr, ok := apierror.FromError(err)
	if !ok {
		return nil
	}
	md := apiErr.Metadata()
	if len(md) == 0 {
		return nil
	}
	return md
}
