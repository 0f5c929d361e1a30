package emulator

import (
	"context"
	"strconv"
	"sync"
	"time"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// snapshotLifetime: a snapshot expires 7 days after the oldest message it
// holds was published (reported; the emulator does not expire them).
const snapshotLifetime = 7 * 24 * time.Hour

// snapshot holds the messages its subscription had not acked when it was
// taken, and every message published to the topic since.
type snapshot struct {
	mu    sync.Mutex
	pb    *pubsubpb.Snapshot
	topic string
	msgs  []*message
}

func (sn *snapshot) add(msgs []*message) {
	sn.mu.Lock()
	sn.msgs = append(sn.msgs, msgs...)
	sn.mu.Unlock()
}

func (sn *snapshot) release() {
	sn.mu.Lock()
	defer sn.mu.Unlock()
	for _, m := range sn.msgs {
		m.release()
	}
	sn.msgs = nil
}

func (s *subscriberService) CreateSnapshot(_ context.Context, req *pubsubpb.CreateSnapshotRequest) (*pubsubpb.Snapshot, error) {
	st := s.st
	if req.Name == "" {
		req.Name = project(req.Subscription) + "/snapshots/snapshot-" + strconv.FormatUint(st.msgIDs.Add(1), 10)
	}
	if err := checkName(req.Name, "snapshots"); err != nil {
		return nil, err
	}
	if err := checkName(req.Subscription, "subscriptions"); err != nil {
		return nil, err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.snapshots[req.Name] != nil {
		return nil, status.Errorf(codes.AlreadyExists, "Snapshot already exists: %s", req.Name)
	}
	sub := st.subs[req.Subscription]
	if sub == nil {
		return nil, notFound("Subscription", req.Subscription)
	}
	sub.mu.Lock()
	t := st.topics[sub.pb.Topic]
	if t == nil {
		sub.mu.Unlock()
		return nil, status.Errorf(codes.FailedPrecondition, "subscription %s has no topic (deleted or detached): cannot take a snapshot", req.Subscription)
	}
	now := time.Now()
	oldest := now
	sn := &snapshot{topic: t.pb.Name}
	for i := 0; i < sub.log.len(); i++ {
		e := sub.log.at(i)
		if e.state == acked || e.state == dropped {
			continue
		}
		e.msg.refs.Add(1)
		sn.msgs = append(sn.msgs, e.msg)
		if e.msg.pub.Before(oldest) {
			oldest = e.msg.pub
		}
	}
	sub.mu.Unlock()
	sn.pb = &pubsubpb.Snapshot{Name: req.Name, Topic: t.pb.Name, ExpireTime: timestamppb.New(oldest.Add(snapshotLifetime)), Labels: req.Labels}
	st.snapshots[req.Name] = sn
	t.snapshots[req.Name] = sn
	return proto.Clone(sn.pb).(*pubsubpb.Snapshot), nil
}

func (s *subscriberService) GetSnapshot(_ context.Context, req *pubsubpb.GetSnapshotRequest) (*pubsubpb.Snapshot, error) {
	if err := checkName(req.Snapshot, "snapshots"); err != nil {
		return nil, err
	}
	s.st.mu.RLock()
	defer s.st.mu.RUnlock()
	sn := s.st.snapshots[req.Snapshot]
	if sn == nil {
		return nil, notFound("Snapshot", req.Snapshot)
	}
	return proto.Clone(sn.pb).(*pubsubpb.Snapshot), nil
}

func (s *subscriberService) ListSnapshots(_ context.Context, req *pubsubpb.ListSnapshotsRequest) (*pubsubpb.ListSnapshotsResponse, error) {
	if err := checkProject(req.Project); err != nil {
		return nil, err
	}
	s.st.mu.RLock()
	defer s.st.mu.RUnlock()
	var names []string
	for name := range s.st.snapshots {
		if project(name) == req.Project {
			names = append(names, name)
		}
	}
	page, next, err := paginate(names, req.PageSize, req.PageToken)
	if err != nil {
		return nil, err
	}
	resp := &pubsubpb.ListSnapshotsResponse{NextPageToken: next}
	for _, name := range page {
		resp.Snapshots = append(resp.Snapshots, proto.Clone(s.st.snapshots[name].pb).(*pubsubpb.Snapshot))
	}
	return resp, nil
}

// snapshotMaskRoots are the fields UpdateSnapshot changes.
var snapshotMaskRoots = map[string]bool{"labels": true, "expire_time": true}

func (s *subscriberService) UpdateSnapshot(_ context.Context, req *pubsubpb.UpdateSnapshotRequest) (*pubsubpb.Snapshot, error) {
	if req.Snapshot == nil || req.UpdateMask == nil {
		return nil, status.Error(codes.InvalidArgument, "update snapshot: a snapshot and an update_mask are required")
	}
	if err := checkName(req.Snapshot.Name, "snapshots"); err != nil {
		return nil, err
	}
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	sn := s.st.snapshots[req.Snapshot.Name]
	if sn == nil {
		return nil, notFound("Snapshot", req.Snapshot.Name)
	}
	pb := proto.Clone(sn.pb).(*pubsubpb.Snapshot)
	in := proto.Clone(req.Snapshot).(*pubsubpb.Snapshot)
	for _, path := range req.UpdateMask.Paths {
		if err := applyMask(pb, in, path, "UpdateSnapshotRequest", snapshotMaskRoots); err != nil {
			return nil, err
		}
	}
	sn.pb = pb
	return proto.Clone(sn.pb).(*pubsubpb.Snapshot), nil
}

func (s *subscriberService) DeleteSnapshot(_ context.Context, req *pubsubpb.DeleteSnapshotRequest) (*emptypb.Empty, error) {
	if err := checkName(req.Snapshot, "snapshots"); err != nil {
		return nil, err
	}
	st := s.st
	st.mu.Lock()
	defer st.mu.Unlock()
	sn := st.snapshots[req.Snapshot]
	if sn == nil {
		return nil, notFound("Snapshot", req.Snapshot)
	}
	delete(st.snapshots, req.Snapshot)
	st.policies.forget(req.Snapshot)
	if t := st.topics[sn.topic]; t != nil {
		delete(t.snapshots, req.Snapshot)
	}
	sn.release()
	return &emptypb.Empty{}, nil
}

// Seek to a time marks messages published before it acked and those after
// it unacked (acked ones come back only under retain_acked_messages); seek
// to a snapshot replaces the subscription's messages with the snapshot's.
func (s *subscriberService) Seek(_ context.Context, req *pubsubpb.SeekRequest) (*pubsubpb.SeekResponse, error) {
	if err := checkName(req.Subscription, "subscriptions"); err != nil {
		return nil, err
	}
	if target, ok := req.Target.(*pubsubpb.SeekRequest_Snapshot); ok {
		if err := checkName(target.Snapshot, "snapshots"); err != nil {
			return nil, err
		}
	}
	st := s.st
	st.mu.RLock()
	defer st.mu.RUnlock()
	sub := st.subs[req.Subscription]
	if sub == nil {
		return nil, notFound("Subscription", req.Subscription)
	}
	switch target := req.Target.(type) {
	case *pubsubpb.SeekRequest_Time:
		sub.seekTime(target.Time.AsTime())
	case *pubsubpb.SeekRequest_Snapshot:
		sn := st.snapshots[target.Snapshot]
		if sn == nil {
			return nil, notFound("Snapshot", target.Snapshot)
		}
		sub.mu.Lock()
		topicName := sub.pb.Topic
		sub.mu.Unlock()
		if sn.topic != topicName {
			return nil, status.Errorf(codes.FailedPrecondition, "snapshot %s is of topic %s, subscription %s reads %s: seek needs the same topic",
				sn.pb.Name, sn.topic, sub.name, topicName)
		}
		sn.mu.Lock()
		msgs := append([]*message(nil), sn.msgs...)
		sn.mu.Unlock()
		sub.seekSnapshot(msgs)
	default:
		return nil, status.Error(codes.InvalidArgument, "seek: give a time or a snapshot")
	}
	return &pubsubpb.SeekResponse{}, nil
}

// resetDelivery forgets every lease and queue; callers queue again.
func (s *subscription) resetDelivery() {
	for i := 0; i < s.log.len(); i++ {
		if e := s.log.at(i); e.state == leased {
			s.release(e)
			e.state = ready
		}
	}
	s.readyQ.clear()
	s.keys = map[string]*keyState{}
}

func (s *subscription) seekTime(t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resetDelivery()
	for i := 0; i < s.log.len(); i++ {
		e := s.log.at(i)
		before := e.msg.pub.Before(t)
		switch {
		case e.state == dropped:
		case before && e.state != acked:
			e.state = acked
			delete(s.live, e.seq)
			s.stale++
		case !before && e.state == acked && s.set.retainAcked:
			s.stale--
			s.live[e.seq] = e
			s.makeReady(e)
		case !before && e.state != acked:
			s.makeReady(e)
		}
	}
	s.trim(time.Now())
	s.notify()
}

func (s *subscription) seekSnapshot(msgs []*message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resetDelivery()
	for s.log.len() > 0 {
		s.drop(s.log.popFront())
	}
	s.live = map[uint64]*entry{}
	for _, m := range msgs {
		if s.set.filter != nil && !s.set.filter.match(m.pb.Attributes) {
			continue
		}
		m.refs.Add(1)
		s.addEntry(m)
	}
	s.notify()
}
