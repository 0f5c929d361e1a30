package main

import (
	"context"
	"errors"
	"io"
	"time"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

const defaultStreamAckDeadline = 10 * time.Second

// StreamingPull serves synthetic messages as fast as the client's flow
// control (from the first request) and the transport allow. A goroutine
// reads acks and modacks; this one sends.
func (s *subscriberService) StreamingPull(stream pubsubpb.Subscriber_StreamingPullServer) error {
	req, err := stream.Recv()
	if err != nil {
		return err
	}
	f := s.faults.Load()
	if err := f.delay(stream.Context()); err != nil {
		return err
	}
	sub, err := s.reg.subscription(req.GetSubscription())
	if err != nil {
		return err
	}
	l := s.leases.open(sub, s.synth.size, req.MaxOutstandingMessages, req.MaxOutstandingBytes,
		streamAckDeadline(req.StreamAckDeadlineSeconds))
	defer l.close()
	s.stats.streamsOpened.Add(1)
	s.stats.streamsActive.Add(1)
	defer s.stats.streamsActive.Add(-1)
	if err := s.streamAcks(req); err != nil {
		return err
	}

	ctx, cancel := context.WithCancelCause(stream.Context())
	defer cancel(nil)
	go func() {
		for {
			req, err := stream.Recv()
			if err != nil {
				cancel(err) // io.EOF: the client is done
				return
			}
			if req.StreamAckDeadlineSeconds > 0 {
				l.setAckDeadline(streamAckDeadline(req.StreamAckDeadlineSeconds))
			}
			if err := s.streamAcks(req); err != nil {
				cancel(err)
				return
			}
		}
	}()
	return s.send(ctx, stream, sub, l, time.Duration(f.StreamCloseEvery))
}

func streamAckDeadline(secs int32) time.Duration {
	if secs <= 0 {
		return defaultStreamAckDeadline
	}
	return time.Duration(min(secs, maxAckDeadlineSeconds)) * time.Second
}

// send is the stream's delivery loop. Responses are encoded straight to
// wire format (wire.go) and sent through the codec as they are.
func (s *server) send(ctx context.Context, stream pubsubpb.Subscriber_StreamingPullServer, sub *subscription, l *lease, closeAfter time.Duration) error {
	limit := s.batchLimit()
	enc := newResponseEncoder(s.synth, sub.props, &s.bufs)
	if s.opts.rate > 0 {
		enc.at = sub.availableAt // each message's publish time: when it became available
	}
	ps := make([]pending, 0, limit)

	var closeC <-chan time.Time
	if closeAfter > 0 {
		t := time.NewTimer(closeAfter)
		defer t.Stop()
		closeC = t.C
	}
	heartbeat := time.NewTicker(s.opts.heartbeat)
	defer heartbeat.Stop()
	sent := false
	pace := time.NewTimer(time.Hour)
	defer pace.Stop()

	for {
		var avail <-chan struct{} // stays nil (never ready) without credit
		var paced <-chan time.Time
		ps = ps[:0]
		if k := l.credit(limit); k > 0 {
			var wait time.Duration
			ps, avail, wait = sub.claimPaced(ps, k, time.Now())
			if wait > 0 {
				pace.Reset(wait)
				paced = pace.C
			}
		}
		if len(ps) == 0 {
			select {
			case <-paced:
			case <-ctx.Done():
				return streamEnd(ctx)
			case <-sub.gone:
				return status.Errorf(codes.NotFound, "subscription %s deleted", sub.name)
			case <-closeC:
				s.stats.injected.Add(1)
				return status.Error(codes.Unavailable, "loadserver: injected stream close")
			case <-l.wake:
			case <-avail:
			case <-heartbeat.C:
				// Clients reopen streams they think are dead.
				if !sent {
					if err := stream.SendMsg(enc.encode(nil, l.id, 0, time.Now())); err != nil {
						return err
					}
				}
				sent = false
			}
			continue
		}
		now := time.Now()
		first := l.record(ps, now)
		if err := stream.SendMsg(enc.encode(ps, l.id, first, s.publishTime(now))); err != nil {
			return err
		}
		sent = true
		s.countDelivered(ps)
		// The client's half-close (or cancel) ends the stream even while it
		// has credit, as Google's pstest does: a client that is closing reads
		// the stream to its end, so sending on would feed it without bound.
		select {
		case <-ctx.Done():
			return streamEnd(ctx)
		case <-closeC:
			s.stats.injected.Add(1)
			return status.Error(codes.Unavailable, "loadserver: injected stream close")
		default:
		}
	}
}

// streamEnd is the status a stream ends with once its context is done.
func streamEnd(ctx context.Context) error {
	err := context.Cause(ctx)
	if errors.Is(err, io.EOF) {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	return status.FromContextError(err).Err()
}
