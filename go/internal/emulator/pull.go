package emulator

import (
	"context"
	"time"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// pullWait is how long a Pull with nothing to deliver waits for a message
// before it returns empty (the service also holds an empty Pull a while;
// short here so that callers checking "nothing left" do not wait long).
const pullWait = 500 * time.Millisecond

func (s *subscriberService) Pull(ctx context.Context, req *pubsubpb.PullRequest) (*pubsubpb.PullResponse, error) {
	sub, err := s.st.subscription(req.Subscription)
	if err != nil {
		return nil, err
	}
	if req.MaxMessages <= 0 {
		return nil, status.Errorf(codes.InvalidArgument, "pull: max_messages is %d, expected a positive number", req.MaxMessages)
	}
	limit := int(min(req.MaxMessages, maxBatchMessages))
	sub.mu.Lock()
	c := newConsumer(0, 0, sub.set.ackDeadline)
	msgs := sub.claim(c, limit, time.Now(), nil)
	if len(msgs) > 0 || req.ReturnImmediately || sub.deleted {
		sub.mu.Unlock()
		return &pubsubpb.PullResponse{ReceivedMessages: msgs}, nil
	}
	sub.consumers[c] = struct{}{}
	sub.mu.Unlock()
	defer func() {
		sub.mu.Lock()
		delete(sub.consumers, c)
		sub.mu.Unlock()
	}()
	t := time.NewTimer(pullWait)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, status.FromContextError(ctx.Err()).Err()
		case <-sub.gone:
			return nil, notFound("Subscription", sub.name)
		case <-t.C:
			return &pubsubpb.PullResponse{}, nil
		case <-c.wake:
		}
		sub.mu.Lock()
		msgs = sub.claim(c, limit, time.Now(), nil)
		sub.mu.Unlock()
		if len(msgs) > 0 {
			return &pubsubpb.PullResponse{ReceivedMessages: msgs}, nil
		}
	}
}
