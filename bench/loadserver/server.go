package main

import (
	"errors"
	"log"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"
)

// server is the state shared by the Publisher and Subscriber services.
type server struct {
	opts   options
	synth  *synth
	reg    *registry
	leases *leaseTable
	stats  *stats
	faults atomic.Pointer[Faults]
	bufs   bufferPool // StreamingPull response buffers

	lastPublishedID atomic.Uint64 // message ids of Publish, across topics
	started         time.Time
}

// publishTime is the publish time of synthetic messages sent at now.
func (s *server) publishTime(now time.Time) time.Time {
	if s.opts.backlogAtStart {
		return s.started
	}
	return now
}

func newServer(o options) *server {
	s := &server{
		opts:    o,
		synth:   newSynth(o.payloadBytes, o.attributes, o.orderingKeys, o.payloadJSON),
		leases:  newLeaseTable(),
		stats:   newStats(),
		started: time.Now(),
	}
	f := o.faults
	s.faults.Store(&f)
	s.reg = newRegistry(o.messages, o.autoCreate, o.orderingKeys > 0, func(sub *subscription) {
		ack := time.Duration(sub.info.GetAckDeadlineSeconds()) * time.Second
		sub.pull = s.leases.open(sub, s.synth.size, 0, 0, ack)
		sub.rate = o.rate
	})
	return s
}

// publisherService and subscriberService are the two gRPC services; they
// are separate types because both generated Unimplemented bases cannot be
// embedded in one struct without ambiguity.
type publisherService struct {
	pubsubpb.UnimplementedPublisherServer
	*server
}

type subscriberService struct {
	pubsubpb.UnimplementedSubscriberServer
	*server
}

// instance is a running server: gRPC, the optional HTTP endpoint, and the
// expiry loop.
type instance struct {
	*server
	addr     string // gRPC host:port
	httpAddr string // empty without --http

	grpc *grpc.Server
	http *http.Server
	done chan struct{}
	wg   sync.WaitGroup
}

func start(o options) (*instance, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	lis, err := net.Listen("tcp", o.addr)
	if err != nil {
		return nil, err
	}
	in := &instance{server: newServer(o), addr: lis.Addr().String(), done: make(chan struct{})}
	in.grpc = grpc.NewServer(
		grpc.MaxRecvMsgSize(32<<20), // publish requests reach 10 MB
		// Fewer, larger socket writes: at 1 KiB messages the kernel's
		// per-write cost was a large share of the server's CPU per message.
		grpc.WriteBufferSize(1<<20),
		grpc.ForceServerCodecV2(newCodec()), // sends pre-encoded StreamingPull responses
		// Google's Python client pings every 30 s; the default policy
		// (5 min) would answer with GOAWAY too_many_pings.
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: time.Second, PermitWithoutStream: true}),
	)
	in.grpc.RegisterService(publisherServiceDesc(), &publisherService{server: in.server})
	pubsubpb.RegisterSubscriberServer(in.grpc, &subscriberService{server: in.server})

	if o.httpAddr != "" {
		hl, err := net.Listen("tcp", o.httpAddr)
		if err != nil {
			lis.Close()
			return nil, err
		}
		in.httpAddr = hl.Addr().String()
		in.http = &http.Server{Handler: in.server.httpHandler(), ReadHeaderTimeout: 10 * time.Second}
		in.wg.Go(func() {
			if err := in.http.Serve(hl); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Printf("loadserver: http: %v", err)
			}
		})
	}
	in.wg.Go(func() { in.grpc.Serve(lis) })
	in.wg.Go(in.expireLoop)
	return in, nil
}

// expireLoop redelivers messages whose ack deadline passed.
func (in *instance) expireLoop() {
	t := time.NewTicker(in.opts.expiryScan)
	defer t.Stop()
	for {
		select {
		case <-in.done:
			return
		case now := <-t.C:
			in.stats.expired.Add(int64(in.leases.reap(now)))
		}
	}
}

// close stops everything, ending open streams.
func (in *instance) close() {
	close(in.done)
	in.grpc.Stop()
	if in.http != nil {
		in.http.Close()
	}
	in.wg.Wait()
}

// snapshot is the current /stats content.
func (s *server) snapshot() Snapshot {
	return s.stats.snapshot(s.leases.outstanding())
}
