package main

import (
	"context"
	"time"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// pullWait bounds how long a Pull without return_immediately waits for
// messages when none are available (the service also returns empty-handed
// after a while).
const pullWait = 2 * time.Second

// Pull hands out up to max_messages; unary pulls have no flow control.
func (s *subscriberService) Pull(ctx context.Context, req *pubsubpb.PullRequest) (*pubsubpb.PullResponse, error) {
	s.stats.pullRPCs.Add(1)
	if err := s.faults.Load().delay(ctx); err != nil {
		return nil, err
	}
	sub, err := s.reg.subscription(req.GetSubscription())
	if err != nil {
		return nil, err
	}
	if req.GetMaxMessages() <= 0 {
		return nil, status.Error(codes.InvalidArgument, "max_messages must be > 0")
	}
	limit := min(int(req.MaxMessages), s.batchLimit())
	var ps []pending
	var wait *time.Timer
	for {
		var avail <-chan struct{}
		ps, avail = sub.claim(ps[:0], limit)
		if len(ps) > 0 || req.GetReturnImmediately() {
			break
		}
		if wait == nil {
			wait = time.NewTimer(pullWait)
			defer wait.Stop()
		}
		select {
		case <-avail:
		case <-wait.C:
			return &pubsubpb.PullResponse{}, nil
		case <-sub.gone:
			return nil, status.Errorf(codes.NotFound, "subscription %s deleted", sub.name)
		case <-ctx.Done():
			return nil, status.FromContextError(ctx.Err()).Err()
		}
	}
	now := time.Now()
	first := sub.pull.record(ps, now)
	// The response is marshalled after we return, so it gets fresh structs.
	rms := s.synth.newReceived(len(ps))
	s.synth.fill(rms, ps, sub.pull.id, first, timestamppb.New(s.publishTime(now)), &idScratch{})
	s.countDelivered(ps)
	return &pubsubpb.PullResponse{ReceivedMessages: rms}, nil
}

// batchLimit is the most messages one response may carry.
func (s *server) batchLimit() int {
	return max(1, min(s.opts.batch, s.opts.maxResponseBytes/int(s.synth.size+idOverhead)))
}

func (s *server) countDelivered(ps []pending) {
	re := 0
	for _, p := range ps {
		if p.attempt > 1 {
			re++
		}
	}
	s.stats.delivered.Add(int64(len(ps)))
	s.stats.deliveredBytes.Add(int64(len(ps) * len(s.synth.payload)))
	if re > 0 {
		s.stats.redelivered.Add(int64(re))
	}
}
