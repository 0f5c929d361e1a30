package main

import (
	"context"
	"time"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
)

const maxAckDeadlineSeconds = 600

// Acknowledge settles ack ids from any stream or Pull of this server.
func (s *subscriberService) Acknowledge(ctx context.Context, req *pubsubpb.AcknowledgeRequest) (*emptypb.Empty, error) {
	s.stats.ackRPCs.Add(1)
	f := s.faults.Load()
	if err := f.delay(ctx); err != nil {
		return nil, err
	}
	if err := f.ackErr(); err != nil {
		s.stats.injected.Add(1)
		return nil, err
	}
	if refused := f.ackRejects(req.GetAckIds()); refused != nil {
		var ok []string
		for _, id := range req.GetAckIds() {
			if _, no := refused[id]; !no {
				ok = append(ok, id)
			}
		}
		s.ack(ok)
		s.stats.injected.Add(1)
		return nil, rejectErr(refused)
	}
	s.ack(req.GetAckIds())
	return &emptypb.Empty{}, nil
}

// ModifyAckDeadline extends leases, or nacks with a deadline of 0.
func (s *subscriberService) ModifyAckDeadline(ctx context.Context, req *pubsubpb.ModifyAckDeadlineRequest) (*emptypb.Empty, error) {
	s.stats.modackRPCs.Add(1)
	if err := s.faults.Load().delay(ctx); err != nil {
		return nil, err
	}
	secs := req.GetAckDeadlineSeconds()
	if secs < 0 || secs > maxAckDeadlineSeconds {
		return nil, status.Errorf(codes.InvalidArgument, "ack_deadline_seconds %d outside [0, %d]", secs, maxAckDeadlineSeconds)
	}
	s.modify(req.GetAckIds(), secs)
	return &emptypb.Empty{}, nil
}

// ack settles ids.
func (s *server) ack(ids []string) {
	misses := s.byLease(ids, func(l *lease, seqs []uint64) int { return l.ack(seqs) })
	s.stats.acks.Add(int64(len(ids)))
	s.stats.ackMisses.Add(int64(misses))
}

// modify sets the deadline of ids to seconds from now; 0 nacks them,
// queueing them for redelivery.
func (s *server) modify(ids []string, seconds int32) {
	now := time.Now()
	s.byLease(ids, func(l *lease, seqs []uint64) int {
		hits, requeue := l.modify(seqs, seconds, now)
		l.sub.requeue(requeue)
		return hits
	})
	if seconds > 0 {
		s.stats.modacks.Add(int64(len(ids)))
	} else {
		s.stats.nacks.Add(int64(len(ids)))
	}
}

// byLease calls apply once per run of ids from the same lease (clients
// send ids in delivery order, so runs are long) and returns how many ids
// matched nothing outstanding.
func (s *server) byLease(ids []string, apply func(*lease, []uint64) int) (misses int) {
	seqs := make([]uint64, 0, len(ids))
	var cur *lease
	var curID uint64 // lease ids start at 1
	flush := func() {
		if len(seqs) == 0 {
			return
		}
		if cur == nil {
			misses += len(seqs) // lease gone: long settled
		} else {
			misses += len(seqs) - apply(cur, seqs)
		}
		seqs = seqs[:0]
	}
	for _, id := range ids {
		lid, seq, ok := parseAckID(id)
		if !ok {
			misses++
			continue
		}
		if lid != curID {
			flush()
			cur, curID = s.leases.get(lid), lid
		}
		seqs = append(seqs, seq)
	}
	flush()
	return misses
}

// streamAcks applies the acks and modacks carried by a StreamingPull
// request. Modacks are grouped into runs of equal deadlines.
func (s *server) streamAcks(req *pubsubpb.StreamingPullRequest) error {
	if len(req.AckIds) > 0 {
		s.ack(req.AckIds)
	}
	ids, secs := req.ModifyDeadlineAckIds, req.ModifyDeadlineSeconds
	if len(ids) != len(secs) {
		return status.Errorf(codes.InvalidArgument, "%d modify_deadline_ack_ids but %d modify_deadline_seconds", len(ids), len(secs))
	}
	for start := 0; start < len(ids); {
		end := start + 1
		for end < len(ids) && secs[end] == secs[start] {
			end++
		}
		if secs[start] < 0 || secs[start] > maxAckDeadlineSeconds {
			return status.Errorf(codes.InvalidArgument, "modify_deadline_seconds %d outside [0, %d]", secs[start], maxAckDeadlineSeconds)
		}
		s.modify(ids[start:end], secs[start])
		start = end
	}
	return nil
}
