// Package subscriber pulls messages from a Pub/Sub subscription over
// StreamingPull (the low-level generated client, not the callback API) and
// hands them out as Arrow record batches in the raw schema. Every message
// held, buffered or handed out, stays leased until it is acked, nacked or
// released.
package subscriber

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	vkit "cloud.google.com/go/pubsub/v2/apiv1"
	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/experimental"
	"google.golang.org/grpc/keepalive"

	"github.com/pubsub-go/pubsub-go/go/internal/admin"
	"github.com/pubsub-go/pubsub-go/go/internal/clientopt"
	"github.com/pubsub-go/pubsub-go/go/internal/cmem"
	"github.com/pubsub-go/pubsub-go/go/internal/rawbatch"
	"github.com/pubsub-go/pubsub-go/go/internal/rpc"
)

// errClosed is returned by every call on a closed subscriber.
var errClosed = rpc.Closed("subscriber is closed")

// Subscriber pulls from one subscription. Its methods are safe for
// concurrent use.
type Subscriber struct {
	cfg    Config
	set    settings
	mem    memory.Allocator
	client *vkit.SubscriptionAdminClient
	acker  *acker
	fc     *flowController
	res    *reservoir
	seen   *seenSet
	cutoff publishCutoff // AvailableNow: drops what was published after the run's start
	quiet  *quietClock
	stall  *stallClock
	dec    *decoding // schema mode; nil for raw batches
	stats  counters

	closing     chan struct{}      // closed by Close: streams half-close and drain
	gate        *gate              // Pause and Resume (pause.go)
	stopStreams context.CancelFunc // on a permanent failure, or Close's bound
	streamCtx   context.Context    // the streams' context (catchup.go starts more in it)
	clientID    string             // every stream's client id
	catchUp     catchUp            // growing the streams while catching up
	endLeases   chan struct{}      // closed by Close: the lease loop ends after the extension it is making
	stopLeases  context.CancelFunc // cancels an extension in flight: only past Close's drain bound
	streams     sync.WaitGroup
	leases      sync.WaitGroup

	// rpcMu lets Close wait for acks in flight: calls hold it shared
	// while closed is false; Close takes it exclusively to set closed.
	rpcMu  sync.RWMutex
	closed bool

	closeOnce sync.Once
	closeErr  error
}

// Batch is one Next result: rows in the raw schema (in schema mode: the
// decoded columns, the raw ones and DecodeErrorColumn) and their ack ids
// in the same order. The caller releases both (or calls Release).
type Batch struct {
	Record arrow.RecordBatch
	AckIDs *array.String

	pre *predecode // schema mode: taken from a decoded lot (decode_pool.go)
}

// Release releases the record and the ack ids.
func (b *Batch) Release() {
	b.Record.Release()
	b.AckIDs.Release()
}

// Open validates cfg, verifies the subscription exists and starts pulling.
// Batches are allocated in C memory (cmem), ready for export.
func Open(ctx context.Context, cfg Config) (*Subscriber, error) {
	return OpenWithAllocator(ctx, cfg, cmem.NewDefault())
}

// OpenWithAllocator is Open with batches allocated from mem (tests pass a
// memory.CheckedAllocator to prove batches are released).
func OpenWithAllocator(ctx context.Context, cfg Config, mem memory.Allocator) (*Subscriber, error) {
	return open(ctx, cfg, mem, nil, nil)
}

// open is OpenWithAllocator with hooks for tests: tune adjusts the derived
// settings, extra adds client options (e.g. fault-injecting interceptors).
func open(ctx context.Context, cfg Config, mem memory.Allocator, tune func(*settings), extra []option.ClientOption) (*Subscriber, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	set := newSettings(&cfg)
	if tune != nil {
		tune(&set)
	}
	opts := append(cfg.Options.ClientOptions(), option.WithGRPCDialOption(experimental.WithBufferPool(sharedRecvPool)))
	if cfg.Options.Resolve().EmulatorHost == "" {
		// Like Google's client: spread streams over a few connections and
		// detect dead ones.
		opts = append(opts,
			option.WithGRPCConnectionPool(min(cfg.Streams, 4)),
			option.WithGRPCDialOption(grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: 5 * time.Minute})))
	}
	opts = append(opts, extra...)
	var dec *decoding
	if cfg.Decoder != nil && !cfg.NoPull {
		// Before any pulling: a module that does not load fails Open.
		var err error
		if ts := cfg.Decoder.TopicSchema; ts != nil && ts.Fetch == nil {
			conn := cfg.Options
			ts.Fetch = func(ctx context.Context, schema, revision string) (string, error) {
				return admin.SchemaRevision(ctx, conn, schema, revision)
			}
		}
		if dec, err = newDecoding(ctx, cfg.Decoder, mem); err != nil {
			return nil, err
		}
	}
	client, err := vkit.NewSubscriptionAdminClient(ctx, opts...)
	if err != nil {
		dec.close()
		// The connection itself is made lazily; what fails here is finding
		// or loading credentials.
		return nil, rpc.Errorf(codes.Unauthenticated, "creating the Pub/Sub client for %s: %v", endpoint(cfg.Options), err)
	}
	if err := verify(ctx, client, &cfg, &set); err != nil {
		dec.close()
		client.Close()
		return nil, err
	}

	opened := time.Now()
	stall := newStallClock(streamCount(&cfg), maxStreams(&cfg), opened)
	fc := newFlowController(cfg.MaxOutstandingMessages, cfg.MaxOutstandingBytes)
	fc.stall = stall
	s := &Subscriber{
		cfg:    cfg,
		set:    set,
		mem:    mem,
		client: client,
		acker: &acker{
			rpc:          client,
			subscription: cfg.Subscription,
			attempts:     set.rpcAttempts,
			timeout:      set.rpcTimeout,
			retry:        set.retry,
		},
		fc:      fc,
		res:     newReservoir(fc, mem, cfg.BatchSize),
		seen:    newSeenSet(set.seenCapacity),
		cutoff:  publishCutoff{us: cfg.ArrivalCutoffUs},
		quiet:   newQuietClock(streamCount(&cfg), maxStreams(&cfg), set.prefetchLease, opened),
		stall:   stall,
		dec:     dec,
		closing: make(chan struct{}),
		gate:    newGate(),
	}
	if dec != nil {
		s.res.pool = startDecodePool(s.res, dec, decodeWorkers())
	}
	// The subscriber outlives Open's context; Close ends it.
	streamCtx, stopStreams := context.WithCancel(context.Background())
	leaseCtx, stopLeases := context.WithCancel(context.Background())
	s.stopStreams, s.stopLeases, s.endLeases = stopStreams, stopLeases, make(chan struct{})
	s.streamCtx, s.clientID = streamCtx, clientID()
	for range streamCount(&cfg) {
		s.startStream()
	}
	s.leases.Go(func() { s.leaseLoop(leaseCtx, s.endLeases) })
	return s, nil
}

// streamCount is the number of StreamingPull streams cfg opens.
func streamCount(cfg *Config) int {
	if cfg.NoPull {
		return 0
	}
	return cfg.Streams
}

// maxStreams is the number of streams cfg may grow to (catchup.go).
func maxStreams(cfg *Config) int {
	if cfg.NoPull {
		return 0
	}
	return max(cfg.Streams, cfg.CatchUpStreams)
}

// startStream starts the next stream. Open calls it before returning, and
// catchup.go from a running stream (so s.streams is never at zero then).
func (s *Subscriber) startStream() {
	st := newStream(s, s.clientID, int(s.catchUp.started.Add(1))-1)
	s.streams.Go(func() { st.run(s.streamCtx, s.closing) })
}

// verify checks the subscription exists, retrying with backoff while the
// endpoint is unreachable, for at most the open timeout.
func verify(ctx context.Context, client *vkit.SubscriptionAdminClient, cfg *Config, set *settings) error {
	start := time.Now()
	deadline := start.Add(set.openTimeout)
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, min(set.openAttempt, time.Until(deadline)))
		_, err := client.GetSubscription(actx, &pb.GetSubscriptionRequest{Subscription: cfg.Subscription}, noRetry)
		cancel()
		switch {
		case err == nil:
			return nil
		case ctx.Err() != nil:
			return fmt.Errorf("opening %s: %w", cfg.Subscription, ctx.Err())
		case rpc.Code(err) == codes.NotFound:
			return rpc.Errorf(codes.NotFound, "subscription %s not found at %s", cfg.Subscription, endpoint(cfg.Options))
		case !rpc.Retryable(err):
			return fmt.Errorf("opening subscription %s at %s: %w", cfg.Subscription, endpoint(cfg.Options), err)
		}
		pause := set.retry.Delay(attempt - 1)
		if time.Now().Add(pause).After(deadline) {
			return rpc.Errorf(codes.Unavailable,
				"%s unreachable: %d attempts over %v to get subscription %s failed (open_timeout_ms=%d); last error: %v",
				endpoint(cfg.Options), attempt, time.Since(start).Round(time.Millisecond), cfg.Subscription, cfg.OpenTimeoutMs, err)
		}
		if err := rpc.Sleep(ctx, pause); err != nil {
			return fmt.Errorf("opening %s: %w", cfg.Subscription, err)
		}
	}
}

// endpoint names where o points, for error messages.
func endpoint(o clientopt.Options) string {
	o = o.Resolve()
	switch {
	case o.EmulatorHost != "":
		return "emulator " + o.EmulatorHost
	case o.Endpoint != "":
		return "endpoint " + o.Endpoint
	}
	return "endpoint pubsub.googleapis.com:443"
}

// clientID identifies this subscriber's streams to the server.
func clientID() string {
	var b [16]byte
	rand.Read(b[:])
	return "pubsub-go-" + hex.EncodeToString(b[:])
}

// fail records a permanent error, which Next reports from now on, and
// stops every stream (leases keep running until Close: handed-out
// messages may still be acked).
func (s *Subscriber) fail(err error) {
	s.res.fail(err)
	s.stopStreams()
}

// Next waits up to wait for maxRows buffered messages and returns them,
// or fewer (possibly none) when wait runs out. It may also return fewer
// while more are buffered, at the end of a batch built for another size
// (see reservoir.take): batches are handed over as built, never copied
// together. maxRows <= 0 and wait <= 0 mean the configured defaults. The
// messages stay leased until acked, nacked or released.
func (s *Subscriber) Next(ctx context.Context, maxRows int, wait time.Duration) (*Batch, error) {
	b, _, err := s.NextWait(ctx, maxRows, wait)
	return b, err
}

// NextWait is Next that also reports whether the wait ran out: the batch
// is short because nothing more was buffered, not because a batch built
// for another size ended (callers deciding "the backlog is empty for now"
// need to tell the two apart without timing the call themselves).
func (s *Subscriber) NextWait(ctx context.Context, maxRows int, wait time.Duration) (*Batch, bool, error) {
	if maxRows <= 0 {
		maxRows = s.cfg.BatchSize
	}
	if wait <= 0 {
		wait = time.Duration(s.cfg.MaxWaitMs) * time.Millisecond
	}
	var timer *time.Timer // only when there is something to wait for
	partial := false
	for {
		b, wake, err := s.res.take(maxRows, partial)
		if err != nil {
			return nil, false, err
		}
		if b != nil {
			s.stats.handedOut.Add(b.Record.NumRows())
			out, err := s.decode(ctx, b)
			return out, partial && b.Record.NumRows() < int64(maxRows), err
		}
		if wake == nil {
			out, err := s.decode(ctx, s.emptyBatch())
			return out, true, err
		}
		if timer == nil {
			timer = time.NewTimer(wait)
			defer timer.Stop()
		}
		select {
		case <-wake:
		case <-timer.C:
			partial = true
		case <-ctx.Done():
			return nil, false, ctx.Err()
		}
	}
}

// emptyBatch is a batch of no rows in the raw schema.
func (s *Subscriber) emptyBatch() *Batch {
	b := rawbatch.NewBuilder(s.mem)
	defer b.Release()
	rec, ids := b.NewBatch()
	return &Batch{Record: rec, AckIDs: ids}
}

// decode runs the schema-mode stage on a built batch: a batch taken from a
// lot that the decode pool decoded is handed out as it is (handOut); an
// empty one is decoded here (no call into the decoder).
func (s *Subscriber) decode(ctx context.Context, b *Batch) (*Batch, error) {
	if s.dec == nil {
		return b, nil
	}
	if b.pre != nil {
		return s.handOut(b)
	}
	rec, nerr, err := s.dec.apply(ctx, b.Record)
	if err != nil {
		return nil, s.decodeFailed(b, err)
	}
	b.Record.Release()
	s.stats.decodeErrors.Add(int64(nerr))
	return &Batch{Record: rec, AckIDs: b.AckIDs}, nil
}

// decodeFailed releases a raw batch that failed to decode as a whole (the
// decoder hit a limit or crashed) and nacks it, so its messages come back
// at once instead of after their lease; it returns the error to report.
func (s *Subscriber) decodeFailed(b *Batch, err error) error {
	defer b.Release()
	ids := make([]string, b.AckIDs.Len())
	for i := range ids {
		ids[i] = b.AckIDs.Value(i)
	}
	first := b.Record.Column(rawbatch.ColMessageID).(*array.String).Value(0)
	what := fmt.Sprintf("decoding a batch of %d messages (the first is message_id %s)", len(ids), first)
	note := "the batch was nacked for redelivery"
	if nackErr := s.Nack(ids); nackErr != nil {
		note = fmt.Sprintf("nacking the batch failed too: %v", nackErr)
	}
	return decodeStatus(err, s.dec.cfg, what, note)
}

// rpc runs f unless the subscriber is closed; Close waits for it.
func (s *Subscriber) rpc(f func() error) error {
	s.rpcMu.RLock()
	defer s.rpcMu.RUnlock()
	if s.closed {
		return errClosed
	}
	return f()
}

// Ack acknowledges ack ids: they are not redelivered. Any ack id of the
// subscription works, also one pulled elsewhere. Ids the service rejects
// for good (exactly-once delivery) are counted in Stats.AckRejected; use
// AckWithResults to learn about them.
func (s *Subscriber) Ack(ids []string) error {
	_, err := s.AckWithResults(ids)
	return err
}

// AckWithResults is Ack, reporting how many ids were acked and which were
// rejected, by reason. Transient per-id failures were retried; the error
// is for what may still succeed when retried.
func (s *Subscriber) AckWithResults(ids []string) (AckOutcome, error) {
	var out AckOutcome
	err := s.rpc(func() error {
		s.res.remove(ids)
		var err error
		out, err = s.acker.ack(context.Background(), ids)
		s.stats.acked.Add(int64(out.Done))
		s.stats.ackRejected.Add(int64(out.RejectedCount()))
		return err
	})
	return out, err
}

// Nack makes ack ids available for redelivery now.
func (s *Subscriber) Nack(ids []string) error {
	return s.rpc(func() error {
		s.res.remove(ids)
		n, err := s.acker.modack(context.Background(), ids, 0)
		s.stats.countModack(n, &s.stats.nacked)
		return err
	})
}

// Modack sets the ack deadline of ack ids to deadlineSeconds (0..600; 0
// is a nack). Messages this subscriber still holds stay leased: their
// lease is extended again when the new deadline draws near.
func (s *Subscriber) Modack(ids []string, deadlineSeconds int) error {
	if deadlineSeconds < 0 || deadlineSeconds > 600 {
		return rpc.Errorf(codes.InvalidArgument, "deadline_seconds = %d: must be between 0 (nack) and 600", deadlineSeconds)
	}
	if deadlineSeconds == 0 {
		return s.Nack(ids)
	}
	return s.rpc(func() error {
		s.res.touch(ids, time.Now().Add(time.Duration(deadlineSeconds)*time.Second))
		n, err := s.acker.modack(context.Background(), ids, int32(deadlineSeconds))
		s.stats.countModack(n, nil)
		return err
	})
}

// Release stops extending the leases of ack ids without acking or nacking
// them: they keep their last deadline (to hand them over to another
// process, which acks or modacks them by id).
func (s *Subscriber) Release(ids []string) {
	s.rpc(func() error {
		s.res.remove(ids)
		return nil
	})
}

// Stats returns the counters.
func (s *Subscriber) Stats() Stats {
	_, buffered := s.res.len()
	st := s.stats.snapshot(s.fc.held())
	st.Buffered = int64(buffered)
	now := time.Now()
	st.QuietMs = s.quiet.quiet(now, s.fc.full()).Milliseconds()
	stall := s.stall.read(now)
	st.FlowFullMs = stall.full.Milliseconds()
	st.StreamsDownMs = stall.down.Milliseconds()
	st.BlockedMs = stall.blocked.Milliseconds()
	st.Streams = int64(s.catchUp.started.Load())
	return st
}

// Close waits for acks in flight, stops lease extension, ends the streams
// and nacks every message received but never handed out so it is
// redelivered promptly (handed-out unacked ones keep their deadline).
// Later calls return the first call's result.
func (s *Subscriber) Close() error {
	s.closeOnce.Do(func() {
		s.stall.close(time.Now()) // streams ending from here on are Close's doing
		s.rpcMu.Lock()
		s.closed = true
		s.rpcMu.Unlock()
		s.res.close()
		s.res.pool.stop() // before the decoder closes; wakes takes waiting for a decode
		// Extensions end before the nack, so none lands after it and
		// re-leases; one in flight is let finish, not cancelled: a cancelled
		// call reaches the server as an HTTP/2 RST_STREAM, whose handler
		// fails in Google's emulator (a NoSuchMethodError in its log, the
		// mark tests/test_restart_in_one_app.py counts), and for a stream it
		// is the cut the half-close below avoids. Only a call still
		// unanswered at the drain bound, shared with the streams, is
		// cancelled (a worker's exit, spark/worker_exit.py, waits longer).
		close(s.endLeases)
		drained := time.Now().Add(s.set.drainTimeout)

		// Half-close the streams and read them to their end, and only then
		// nack: a message nacked while a stream is open may be redelivered
		// into it, and Google's emulator keeps feeding a cancelled stream
		// for a while (messages lost to it come back after 2 deadlines).
		ids := s.res.drain()
		s.fc.disable()
		close(s.closing)
		if !waitTimeout(&s.streams, time.Until(drained)) {
			s.stopStreams()
			s.streams.Wait()
		}
		s.stopStreams()
		if !waitTimeout(&s.leases, time.Until(drained)) {
			s.stopLeases()
			s.leases.Wait()
		}
		s.stopLeases()
		ids = append(ids, s.res.drain()...) // arrived while draining

		var errs []error
		if len(ids) > 0 {
			ctx, cancel := context.WithTimeout(context.Background(), s.set.closeTimeout)
			n, err := s.acker.modack(ctx, ids, 0)
			cancel()
			s.stats.countModack(n, &s.stats.nacked)
			s.stats.nackedOnClose.Add(int64(n.Done))
			// After a permanent failure (say, the subscription is gone)
			// the nacks are best effort.
			if err != nil && s.res.failure() == nil {
				errs = append(errs, fmt.Errorf("close: nacking %d buffered messages: %w", len(ids), err))
			}
		}
		if err := s.client.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close: %w", err))
		}
		s.res.releaseBuilder()
		s.dec.close()
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

// waitTimeout waits for wg at most d and reports whether it finished.
func waitTimeout(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}
