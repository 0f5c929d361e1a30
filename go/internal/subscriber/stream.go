package subscriber

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"sync/atomic"
	"time"

	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	gax "github.com/googleapis/gax-go/v2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/pubsub-go/pubsub-go/go/internal/rpc"
	"github.com/pubsub-go/pubsub-go/go/internal/wire"
)

// stream is one StreamingPull stream of a subscriber. It reconnects with
// backoff on retryable errors and fails the subscriber on permanent ones.
type stream struct {
	s       *Subscriber
	index   int // in s.quiet and s.stall
	initial *pb.StreamingPullRequest
}

func newStream(s *Subscriber, clientID string, index int) *stream {
	// A stream added while catching up shares the server's flow control
	// with as many as may run by then.
	msgs, bytes := serverLimits(s.cfg.MaxOutstandingMessages, max(s.cfg.Streams, index+1))
	return &stream{s: s, index: index, initial: &pb.StreamingPullRequest{
		Subscription:             s.cfg.Subscription,
		StreamAckDeadlineSeconds: int32(s.set.prefetchLease / time.Second),
		// The same client id on every stream and reconnect lets the server
		// treat them as one subscriber.
		ClientId:               clientID,
		MaxOutstandingMessages: msgs,
		MaxOutstandingBytes:    bytes,
		// Version 1: the server answers keepalive pings.
		ProtocolVersion: 1,
	}}
}

// run keeps the stream open until ctx is done, a permanent error, or
// closing: then the stream is half-closed and read to its end.
func (st *stream) run(ctx context.Context, closing <-chan struct{}) {
	failures := 0
	for {
		stop, sent, ok := st.s.gate.enter(ctx, closing)
		if !ok {
			return
		}
		received, err := st.session(ctx, closing, stop, sent)
		sent()
		if ctx.Err() != nil || isClosed(closing) {
			return
		}
		if isClosed(stop) {
			continue // paused (pause.go): not a failure; enter waits for Resume
		}
		if errors.Is(err, errPipeStale) {
			// Not a failure: reopen, without backoff, once there is room
			// (a new stream would only fill its pipe and go stale again).
			st.s.quiet.ended(time.Now())
			st.s.stats.streamsRestarted.Add(1)
			if st.s.fc.wait(ctx) != nil || isClosed(closing) {
				return
			}
			continue
		}
		if !streamRetryable(err) {
			st.s.fail(fmt.Errorf("streaming pull from %s failed: %w", st.s.cfg.Subscription, err))
			return
		}
		if received {
			failures = 0 // the stream worked: start the backoff over
		}
		st.s.quiet.ended(time.Now())
		st.s.stats.streamsRestarted.Add(1)
		select {
		case <-ctx.Done():
			return
		case <-closing:
			return
		case <-time.After(st.s.set.retry.Delay(failures)):
		}
		failures++
	}
}

// setLive marks the stream in a session or out of one, for the quiet and
// the stall clocks.
func (st *stream) setLive(up bool) {
	now := time.Now()
	if up {
		st.s.quiet.live(st.index, now)
	} else {
		st.s.quiet.live(st.index, time.Time{})
	}
	st.s.stall.live(st.index, up, now)
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// errPipeStale ends a session whose stream stayed paused so long that what
// waits in its pipe may have outlived its lease at the server (pipe.go).
var errPipeStale = errors.New("stream paused past its messages' lease: retired, its pipe nacked unread")

// streamRetryable reports whether a stream error is worth reconnecting
// for. EOF is the server ending the stream (it does so periodically);
// Canceled here is not our own cancellation (run checks that first) but
// the server's or the keepalive's.
func streamRetryable(err error) bool {
	return errors.Is(err, io.EOF) || rpc.Code(err) == codes.Canceled || rpc.Retryable(err)
}

// session opens one StreamingPull call and receives until it ends (stop
// or closing half-close it). It reports whether anything was received, to
// reset the backoff.
func (st *stream) session(ctx context.Context, closing, stop <-chan struct{}, sent func()) (received bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ctx = gax.InsertMetadataIntoOutgoingContext(ctx, "x-goog-request-params", "subscription="+url.QueryEscape(st.s.cfg.Subscription))
	spc, err := st.s.client.StreamingPull(ctx, noRetry, gax.WithGRPCOptions(grpc.ForceCodecV2(pullCodec{})))
	if err != nil {
		return false, err
	}
	if err := spc.Send(st.initial); err != nil {
		if errors.Is(err, io.EOF) {
			_, err = spc.Recv() // the stream's actual status
		}
		return false, err
	}
	// Live from here until the session ends: only time spent live counts
	// as evidence that nothing is left to receive, and any other time is
	// a stall (streams_down_ms).
	st.setLive(true)
	defer st.setLive(false)

	var ka keepAlive
	done := make(chan struct{})
	retire := make(chan struct{})
	go func() {
		defer close(done)
		ka.run(ctx, closing, stop, retire, cancel, spc, st.s.set.pingInterval, sent)
	}()
	defer func() {
		cancel()
		<-done
	}()

	var raw rawResponse
	defer raw.release()
	var res wire.Response
	var pipe pipeClock
	set := &st.s.set
	for {
		start := time.Now()
		ka.recvSince.Store(start.UnixNano())
		err := spc.RecvMsg(&raw)
		ka.recvSince.Store(0)
		if err != nil {
			return received, err
		}
		now := time.Now()
		age := pipe.received(raw.size(), now.Sub(start), set.pipeDrain())
		if err := res.ParseSegments(raw.segs); err != nil {
			return received, rpc.Errorf(codes.Internal, "%v", err)
		}
		received = true
		ka.lastResponse.Store(now.UnixNano())
		if len(res.Messages) == 0 {
			raw.release()
			ka.pongs.Store(true)
			continue
		}
		// deliver copies what it keeps (Arrow, ack ids), so the frames go
		// back to gRPC's pool before the wait below. The leases start as
		// early as the server may have started them.
		st.s.deliver(res.Messages, now, now.Add(-age))
		raw.release()
		// Stop reading while the subscriber is full; gRPC flow control
		// then holds the server back. Not for longer than the pipe's
		// messages can wait, though: then retire the session.
		waited, room, err := st.s.fc.waitUpTo(ctx, set.maxPipeAge()-set.pipeDrain()-pipe.unflushed())
		pipe.paused(waited)
		if err != nil {
			return received, err
		}
		if !room {
			close(retire)
			st.retire(spc, &raw, cancel)
			return received, errPipeStale
		}
	}
}

// retire ends a session whose pipe went stale (errPipeStale). The stream
// is half-closed, not cancelled: Google's emulator keeps leasing to a
// stream cut without a half-close, and never redelivers what it leased.
// What the server still sends until it ends the stream is read and, once
// the stream has ended, nacked: never handed out (it may have outlived its
// lease), and back at the server at once rather than after its deadline.
// A nack after the end of the stream cannot be redelivered into it (see
// keepAlive.run). Bounded by drainTimeout, as Close is.
func (st *stream) retire(spc pb.Subscriber_StreamingPullClient, raw *rawResponse, cancel context.CancelFunc) {
	bound := time.AfterFunc(st.s.set.drainTimeout, cancel)
	defer bound.Stop()
	var ids []string
	var res wire.Response
	for spc.RecvMsg(raw) == nil {
		if res.ParseSegments(raw.segs) == nil {
			for i := range res.Messages {
				ids = append(ids, string(res.Messages[i].AckID))
			}
		}
		raw.release()
	}
	if len(ids) == 0 {
		return
	}
	ctx, cancelNack := context.WithTimeout(context.Background(), st.s.set.closeTimeout)
	defer cancelNack()
	n, _ := st.s.acker.modack(ctx, ids, 0) // if it fails, they come back after their deadline
	st.s.stats.countModack(n, &st.s.stats.nacked)
}

// keepAlive pings the stream so idle streams stay open, and tears down a
// stream whose server stopped answering (a dead connection would
// otherwise only show when TCP gives up). Being the stream's only sender
// after the first request, it also half-closes the stream on closing.
type keepAlive struct {
	recvSince    atomic.Int64 // when the pending Recv started; 0 if none
	lastResponse atomic.Int64 // when the last response arrived
	pongs        atomic.Bool  // the server answers pings (empty responses)
}

// sent is called once the half-close on stop is sent (Pause waits for it).
func (ka *keepAlive) run(ctx context.Context, closing, stop, retire <-chan struct{}, cancel context.CancelFunc, spc pb.Subscriber_StreamingPullClient, interval time.Duration, sent func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	var lastPing int64
	for {
		select {
		case <-ctx.Done():
			return
		case <-closing:
			// The server ends the stream (Recv gets EOF) once it will
			// send nothing more; only then are nacks safe from being
			// redelivered into this dying stream.
			spc.CloseSend()
			return
		case <-retire: // the session's pipe went stale (stream.retire)
			spc.CloseSend()
			return
		case <-stop: // paused (pause.go): the server ends the stream, as at closing
			spc.CloseSend()
			sent()
			return
		case <-t.C:
		}
		// Dead: a whole interval after the last ping, we have been waiting
		// in Recv since before it and nothing came back, from a server
		// known to answer pings.
		since := ka.recvSince.Load()
		if lastPing != 0 && ka.pongs.Load() && since != 0 && since < lastPing && ka.lastResponse.Load() < lastPing {
			cancel()
			return
		}
		if err := spc.Send(&pb.StreamingPullRequest{}); err != nil {
			return // Recv reports the stream's error
		}
		lastPing = time.Now().UnixNano()
	}
}

// deliver records messages received at now, whose leases started at
// leased or later, drops those published after the cut-off (cutoff.go) and
// buffers the rest.
func (s *Subscriber) deliver(msgs []wire.Message, now, leased time.Time) {
	s.stats.pulled.Add(int64(len(msgs)))
	s.stats.redeliveries.Add(s.seen.redeliveries(msgs))
	msgs, late, lateBytes := s.cutoff.drop(msgs)
	s.stats.late.Add(late)
	s.quiet.arrived(msgs, now)
	s.catchUpOn(msgs, now)
	total := s.res.add(msgs, leased, s.set.prefetchLease)
	s.stats.bytesPulled.Add(total + lateBytes)
}
