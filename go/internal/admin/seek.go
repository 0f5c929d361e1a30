package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	pubsub "cloud.google.com/go/pubsub/v2/apiv1"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/pubsub-go/pubsub-go/go/internal/rpc"
)

// doSnapshotOp runs seek, create_snapshot and delete_snapshot. Seek moves a
// subscription's cursor to a time (messages published from then on, acked
// or not, are delivered again when retained) or to a snapshot.
func doSnapshotOp(ctx context.Context, c *pubsub.SubscriptionAdminClient, r Request) ([]byte, error) {
	switch r.Op {
	case "seek":
		if err := need(r.Op, "subscription", r.Subscription); err != nil {
			return nil, err
		}
		req := &pubsubpb.SeekRequest{Subscription: r.Subscription}
		switch {
		case (r.TimeUnixMicros > 0) == (r.Snapshot != ""):
			return nil, rpc.Errorf(codes.InvalidArgument, "seek needs exactly one of \"time_unix_micros\" (> 0) and \"snapshot\"")
		case r.Snapshot != "":
			req.Target = &pubsubpb.SeekRequest_Snapshot{Snapshot: r.Snapshot}
		default:
			req.Target = &pubsubpb.SeekRequest_Time{Time: timestamppb.New(time.UnixMicro(r.TimeUnixMicros))}
		}
		if _, err := c.Seek(ctx, req); err != nil {
			return nil, fmt.Errorf("seek %s: %w", r.Subscription, err)
		}
		return []byte("{}"), nil
	case "create_snapshot":
		if err := need(r.Op, "snapshot", r.Snapshot); err != nil {
			return nil, err
		}
		if err := need(r.Op, "subscription", r.Subscription); err != nil {
			return nil, err
		}
		s, err := c.CreateSnapshot(ctx, &pubsubpb.CreateSnapshotRequest{Name: r.Snapshot, Subscription: r.Subscription})
		if err != nil {
			return nil, fmt.Errorf("create snapshot %s: %w", r.Snapshot, err)
		}
		return json.Marshal(map[string]string{"name": s.Name, "topic": s.Topic})
	default:
		if err := need(r.Op, "snapshot", r.Snapshot); err != nil {
			return nil, err
		}
		if err := c.DeleteSnapshot(ctx, &pubsubpb.DeleteSnapshotRequest{Snapshot: r.Snapshot}); err != nil {
			return nil, fmt.Errorf("delete snapshot %s: %w", r.Snapshot, err)
		}
		return []byte("{}"), nil
	}
}
