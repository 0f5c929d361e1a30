package main

import (
	"context"
	"strconv"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// publish counts the messages and stores nothing. It serves the Publish
// RPC, whose request it reads as wire bytes (publish_wire.go).
func (p *publisherService) publish(ctx context.Context, req *publishSummary) (*pubsubpb.PublishResponse, error) {
	p.stats.publishRPCs.Add(1)
	f := p.faults.Load()
	if err := f.delay(ctx); err != nil {
		return nil, err
	}
	if _, err := p.reg.topic(req.topic); err != nil {
		return nil, err
	}
	if req.messages == 0 {
		return nil, status.Error(codes.InvalidArgument, "publish request has no messages")
	}
	if err := f.publishErr(); err != nil {
		p.stats.injected.Add(1)
		return nil, err
	}
	// One string holds every id of the response.
	n := uint64(req.messages)
	first := p.lastPublishedID.Add(n) - n + 1
	buf := make([]byte, 0, 12*n)
	ends := make([]int, n)
	for i := range n {
		buf = strconv.AppendUint(buf, first+i, 10)
		ends[i] = len(buf)
	}
	all := string(buf)
	ids := make([]string, n)
	off := 0
	for i, end := range ends {
		ids[i] = all[off:end]
		off = end
	}
	p.stats.published.Add(int64(n))
	p.stats.publishedBytes.Add(req.dataBytes)
	return &pubsubpb.PublishResponse{MessageIds: ids}, nil
}
