// Package emulator is the embedded Pub/Sub emulator: an in-process gRPC
// server with the service's topics, subscriptions, snapshots and schemas,
// for users without the Google Cloud SDK. Delivery is event driven and
// batched (delivery.go), so it runs at data-plane speed; where Google's
// emulator and the service differ it follows the service (docs/emulator.md).
package emulator

import (
	"fmt"
	"net"

	"cloud.google.com/go/iam/apiv1/iampb"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/grpc"
)

// maxRecvMsgSize is the largest request the server accepts: the service
// takes publish requests of up to 10 MB, so clients batch up to that.
const maxRecvMsgSize = 16 << 20

// flowWindow is the HTTP/2 flow-control window per stream and connection.
const flowWindow = 16 << 20

// Emulator is a running embedded emulator.
type Emulator struct {
	lis   net.Listener
	gs    *grpc.Server
	state *state
	done  chan struct{}
}

// Start listens on hostPort ("127.0.0.1:0" picks a free port). Only
// loopback addresses are accepted: the emulator has no authentication.
func Start(hostPort string) (*Emulator, error) {
	host, _, err := net.SplitHostPort(hostPort)
	if err != nil {
		return nil, fmt.Errorf("emulator address %q: %v (expected host:port, e.g. 127.0.0.1:8085)", hostPort, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("emulator address %q: the embedded emulator only listens on loopback (127.0.0.1, ::1 or localhost)", hostPort)
	}
	maxBytes, err := memoryCapFromEnv()
	if err != nil {
		return nil, err
	}
	lis, err := net.Listen("tcp", hostPort)
	if err != nil {
		return nil, fmt.Errorf("emulator cannot listen on %s: %v", hostPort, err)
	}
	st := newState(maxBytes)
	gs := grpc.NewServer(grpc.MaxRecvMsgSize(maxRecvMsgSize), grpc.ForceServerCodecV2(newCodec()),
		// Windows that hold several full publish requests and responses: with
		// gRPC's 64 KiB start a 1 MB request waits on window updates.
		grpc.InitialWindowSize(flowWindow), grpc.InitialConnWindowSize(flowWindow),
		grpc.ReadBufferSize(256<<10), grpc.WriteBufferSize(256<<10))
	pubsubpb.RegisterPublisherServer(gs, &publisherService{st: st})
	pubsubpb.RegisterSubscriberServer(gs, &subscriberService{st: st})
	pubsubpb.RegisterSchemaServiceServer(gs, &schemaService{st: st})
	iampb.RegisterIAMPolicyServer(gs, &iamService{st: st})
	e := &Emulator{lis: lis, gs: gs, state: st, done: make(chan struct{})}
	go func() {
		defer close(e.done)
		_ = gs.Serve(lis)
	}()
	return e, nil
}

// Addr is the bound host:port.
func (e *Emulator) Addr() string { return e.lis.Addr().String() }

// Stop ends every stream and closes the server.
func (e *Emulator) Stop() error {
	e.gs.Stop()
	<-e.done
	e.state.close()
	return nil
}
