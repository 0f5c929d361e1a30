package emulator

import (
	"context"
	"time"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
)

// Under exactly-once delivery the service reports, per ack id, why an ack
// or modack failed, in an ErrorInfo with this reason; Google's clients
// read the metadata (ack id → failure) to complete each ack's result.
const (
	eosFailureReason = "EXACTLY_ONCE_ACKID_FAILURE"
	invalidAckID     = "PERMANENT_FAILURE_INVALID_ACK_ID"
	maxAckDeadline   = 600
)

// valid is whether id is e's current delivery with its lease running.
func (s *subscription) lookup(id string, now time.Time) (e *entry, current bool) {
	sid, seq, gen, ok := parseAckID(id)
	if !ok || sid != s.id {
		return nil, false
	}
	e = s.live[seq]
	if e == nil {
		return nil, false
	}
	return e, e.gen == gen && e.state == leased && now.Before(e.deadline)
}

// acknowledge acks ids and returns the ones that failed (exactly-once
// subscriptions only: without it acks are best effort, as in the service).
func (s *subscription) acknowledge(ids []string) map[string]string {
	now := time.Now()
	var failed map[string]string
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		e, current := s.lookup(id, now)
		switch {
		case current:
			s.ack(e)
		case s.set.exactlyOnce:
			if failed == nil {
				failed = map[string]string{}
			}
			failed[id] = invalidAckID
		case e != nil && e.state != leased:
			// A late ack of an expired lease not yet redelivered still counts.
			s.ack(e)
		}
	}
	return failed
}

// modifyAckDeadline extends (or, with 0, ends: a nack) the leases of ids.
func (s *subscription) modifyAckDeadline(ids []string, secs int32) map[string]string {
	now := time.Now()
	var failed map[string]string
	var dues []due
	deadline := now.Add(time.Duration(secs) * time.Second)
	s.mu.Lock()
	for _, id := range ids {
		e, current := s.lookup(id, now)
		if !current {
			if s.set.exactlyOnce {
				if failed == nil {
					failed = map[string]string{}
				}
				failed[id] = invalidAckID
			}
			continue
		}
		if secs == 0 {
			s.redeliver(e, now)
			continue
		}
		e.deadline = deadline
		dues = append(dues, due{e, e.gen})
	}
	if len(dues) > 0 {
		s.pushTimer(timer{at: deadline, kind: leaseEnds, due: dues})
	}
	out, dl := s.takeOutbox()
	s.mu.Unlock()
	s.st.deadLetter(dl, s.name, out)
	return failed
}

func checkAckDeadline(secs int32) error {
	if secs < 0 || secs > maxAckDeadline {
		return status.Errorf(codes.InvalidArgument, "invalid ack deadline %d s: expected 0 to %d (0 nacks)", secs, maxAckDeadline)
	}
	return nil
}

// ackError is the status for failed exactly-once acks, with the ErrorInfo
// Google's clients read.
func ackError(failed map[string]string) error {
	if len(failed) == 0 {
		return nil
	}
	st := status.New(codes.InvalidArgument, "some ack ids are invalid or their leases have expired (exactly-once delivery)")
	st, err := st.WithDetails(&errdetails.ErrorInfo{Reason: eosFailureReason, Domain: "pubsub.googleapis.com", Metadata: failed})
	if err != nil {
		return status.Error(codes.Internal, err.Error())
	}
	return st.Err()
}

func (s *subscriberService) Acknowledge(_ context.Context, req *pubsubpb.AcknowledgeRequest) (*emptypb.Empty, error) {
	sub, err := s.st.subscription(req.Subscription)
	if err != nil {
		return nil, err
	}
	if len(req.AckIds) == 0 {
		return nil, status.Error(codes.InvalidArgument, "acknowledge: no ack_ids given")
	}
	return &emptypb.Empty{}, ackError(sub.acknowledge(req.AckIds))
}

func (s *subscriberService) ModifyAckDeadline(_ context.Context, req *pubsubpb.ModifyAckDeadlineRequest) (*emptypb.Empty, error) {
	sub, err := s.st.subscription(req.Subscription)
	if err != nil {
		return nil, err
	}
	if err := checkAckDeadline(req.AckDeadlineSeconds); err != nil {
		return nil, err
	}
	if len(req.AckIds) == 0 {
		return nil, status.Error(codes.InvalidArgument, "modify ack deadline: no ack_ids given")
	}
	return &emptypb.Empty{}, ackError(sub.modifyAckDeadline(req.AckIds, req.AckDeadlineSeconds))
}
