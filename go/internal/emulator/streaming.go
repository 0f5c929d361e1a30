package emulator

import (
	"context"
	"errors"
	"io"
	"time"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// heartbeatEvery: a stream that sent nothing for this long sends an empty
// response, so clients that watch for dead streams keep it.
const heartbeatEvery = 15 * time.Second

// StreamingPull delivers as messages arrive, in batches, within the
// stream's flow control. A goroutine reads acks, modacks and deadline
// changes; this one sends. A stream that ends (half-closed or cut) leaves
// its messages leased until their deadlines, as the service does.
func (s *subscriberService) StreamingPull(stream pubsubpb.Subscriber_StreamingPullServer) error {
	req, err := stream.Recv()
	if err != nil {
		return err
	}
	sub, err := s.st.subscription(req.Subscription)
	if err != nil {
		return err
	}
	secs := req.StreamAckDeadlineSeconds
	if secs < 10 || secs > maxAckDeadline {
		return status.Errorf(codes.InvalidArgument, "invalid stream_ack_deadline_seconds %d: expected 10 to %d", secs, maxAckDeadline)
	}
	// Flow control: any value <= 0 means no limit (the API's words; Google's
	// Go client sends -1 for "unlimited").
	c := newConsumer(max(req.MaxOutstandingMessages, 0), max(req.MaxOutstandingBytes, 0), time.Duration(secs)*time.Second)
	sub.mu.Lock()
	if sub.deleted {
		sub.mu.Unlock()
		return notFound("Subscription", sub.name)
	}
	sub.consumers[c] = struct{}{}
	props := &pubsubpb.StreamingPullResponse_SubscriptionProperties{
		ExactlyOnceDeliveryEnabled: sub.set.exactlyOnce, MessageOrderingEnabled: sub.set.ordered,
	}
	sub.mu.Unlock()
	defer func() {
		sub.mu.Lock()
		delete(sub.consumers, c)
		sub.mu.Unlock()
	}()
	if conf, err := streamAcks(sub, req); err != nil {
		return err
	} else if conf != nil {
		conf.SubscriptionProperties = props
		if err := stream.Send(conf); err != nil {
			return err
		}
	}

	ctx, cancel := context.WithCancelCause(stream.Context())
	defer cancel(nil)
	deadlines := make(chan time.Duration, 1)
	confirms := make(chan *pubsubpb.StreamingPullResponse, 16)
	go func() {
		for {
			req, err := stream.Recv()
			if err != nil {
				cancel(err) // io.EOF: the client half-closed
				return
			}
			if d := req.StreamAckDeadlineSeconds; d != 0 {
				if d < 10 || d > maxAckDeadline {
					cancel(status.Errorf(codes.InvalidArgument, "invalid stream_ack_deadline_seconds %d: expected 10 to %d", d, maxAckDeadline))
					return
				}
				select {
				case <-deadlines:
				default:
				}
				deadlines <- time.Duration(d) * time.Second
			}
			conf, err := streamAcks(sub, req)
			if err != nil {
				cancel(err)
				return
			}
			if conf != nil {
				select {
				case confirms <- conf:
				case <-ctx.Done():
					return
				}
			}
		}
	}()

	heartbeat := time.NewTicker(heartbeatEvery)
	defer heartbeat.Stop()
	sent := false
	var batch []*pubsubpb.ReceivedMessage
	for {
		select {
		case <-ctx.Done():
			return streamEnd(ctx)
		case conf := <-confirms: // confirmations go out ahead of more messages
			conf.SubscriptionProperties = props
			if err := stream.Send(conf); err != nil {
				return err
			}
			sent = true
			continue
		default:
		}
		sub.mu.Lock()
		select {
		case d := <-deadlines:
			c.ackDeadline = d
		default:
		}
		batch = sub.claim(c, maxBatchMessages, time.Now(), batch[:0])
		sub.mu.Unlock()
		if len(batch) > 0 {
			err := stream.Send(&pubsubpb.StreamingPullResponse{ReceivedMessages: batch, SubscriptionProperties: props})
			if err != nil {
				return err
			}
			clear(batch)
			sent = true
			continue
		}
		select {
		case <-ctx.Done():
			return streamEnd(ctx)
		case <-sub.gone:
			return notFound("Subscription", sub.name)
		case <-c.wake:
		case conf := <-confirms:
			conf.SubscriptionProperties = props
			if err := stream.Send(conf); err != nil {
				return err
			}
			sent = true
		case <-heartbeat.C:
			if !sent {
				if err := stream.Send(&pubsubpb.StreamingPullResponse{SubscriptionProperties: props}); err != nil {
					return err
				}
			}
			sent = false
		}
	}
}

// streamAcks applies the acks and modacks a stream request carries. On an
// exactly-once subscription it returns the response that confirms them, as
// the service sends: which ack ids succeeded and which were invalid.
func streamAcks(sub *subscription, req *pubsubpb.StreamingPullRequest) (*pubsubpb.StreamingPullResponse, error) {
	if len(req.ModifyDeadlineSeconds) != len(req.ModifyDeadlineAckIds) {
		return nil, status.Errorf(codes.InvalidArgument, "modify_deadline_seconds has %d entries and modify_deadline_ack_ids %d: expected one deadline per ack id",
			len(req.ModifyDeadlineSeconds), len(req.ModifyDeadlineAckIds))
	}
	for _, secs := range req.ModifyDeadlineSeconds {
		if err := checkAckDeadline(secs); err != nil {
			return nil, err
		}
	}
	sub.mu.Lock()
	eos := sub.set.exactlyOnce
	sub.mu.Unlock()
	var conf *pubsubpb.StreamingPullResponse
	if eos && len(req.AckIds)+len(req.ModifyDeadlineAckIds) > 0 {
		conf = &pubsubpb.StreamingPullResponse{}
	}
	if len(req.AckIds) > 0 {
		failed := sub.acknowledge(req.AckIds)
		if conf != nil {
			ac := &pubsubpb.StreamingPullResponse_AcknowledgeConfirmation{}
			for _, id := range req.AckIds {
				if failed[id] != "" {
					ac.InvalidAckIds = append(ac.InvalidAckIds, id)
				} else {
					ac.AckIds = append(ac.AckIds, id)
				}
			}
			conf.AcknowledgeConfirmation = ac
		}
	}
	var mc *pubsubpb.StreamingPullResponse_ModifyAckDeadlineConfirmation
	if conf != nil && len(req.ModifyDeadlineAckIds) > 0 {
		mc = &pubsubpb.StreamingPullResponse_ModifyAckDeadlineConfirmation{}
		conf.ModifyAckDeadlineConfirmation = mc
	}
	for i, id := range req.ModifyDeadlineAckIds {
		failed := sub.modifyAckDeadline([]string{id}, req.ModifyDeadlineSeconds[i])
		if mc != nil {
			if failed[id] != "" {
				mc.InvalidAckIds = append(mc.InvalidAckIds, id)
			} else {
				mc.AckIds = append(mc.AckIds, id)
			}
		}
	}
	return conf, nil
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
