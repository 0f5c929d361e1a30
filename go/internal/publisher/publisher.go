// Package publisher publishes the rows of Arrow record batches to a
// Pub/Sub topic through the generated apiv1 client: rows become messages
// (rows.go), messages are grouped into requests per ordering key
// (batcher.go), requests of one key are sequenced (ordering.go), bytes in
// flight are bounded (flowcontrol.go) and transient failures are retried
// (rpc.Policy).
package publisher

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	pubsub "cloud.google.com/go/pubsub/v2/apiv1"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/googleapis/gax-go/v2"
	"github.com/pubsub-go/pubsub-go/go/internal/encode"
	"github.com/pubsub-go/pubsub-go/go/internal/rpc"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding/gzip"
	"google.golang.org/grpc/status"
)

// Result sums what the server acknowledged over the Publisher's life.
type Result struct {
	Published int64 `json:"published"` // messages acknowledged
	Bytes     int64 `json:"bytes"`     // their size: payload + attributes + ordering key
	Retries   int64 `json:"retries"`   // request attempts repeated after transient errors
}

// Publisher publishes record batches to one topic. Its methods are safe
// for concurrent use; Publish calls are serialized so row numbers (for
// id stamping) follow call order.
type Publisher struct {
	cfg     Config
	encoder *encode.Encoder // EncodeSchema's; nil: rows carry their payload
	what    string          // error prefix: "publish to <topic>"
	client  *pubsub.TopicAdminClient
	retry   rpc.Policy
	fc      *flowController
	batch   *batcher
	seq     *sequencer
	slots   chan struct{} // bounds concurrent Publish RPCs

	ctx    context.Context // canceled by Close: aborts RPCs in flight
	cancel context.CancelFunc
	wg     sync.WaitGroup // one per bundle being sent

	pubMu   sync.Mutex
	nextRow int64    // id number of the next row; guarded by pubMu
	scratch []outMsg // the last call's messages, reused; guarded by pubMu
	chunks  chunkPool

	mu      sync.Mutex
	closed  bool
	err     error         // first failure, reported from then on
	pending int64         // messages accepted and not yet completed
	idle    chan struct{} // closed when pending drops to 0

	published, bytes, retries atomic.Int64
}

// writeBufferBytes is gRPC's write buffer: a Publish request of up to
// max_batch_bytes (4 MiB) goes out in a few writes instead of gRPC's
// default 32 KiB ones.
const writeBufferBytes = 1 << 20

// sendOption makes a Publish call of b send the request's entries where
// they lie (publishCodec), gzip-compressed when zip is set (Compression
// "gzip" above its threshold, as the Go client's
// EnableCompression/CompressionBytesThreshold do per request).
func sendOption(b *bundle, zip bool) gax.CallOption {
	codec := grpc.ForceCodecV2(publishCodec{b: b})
	if zip {
		return gax.WithGRPCOptions(codec, grpc.UseCompressor(gzip.Name))
	}
	return gax.WithGRPCOptions(codec)
}

// Open validates cfg, connects and checks that the topic exists.
func Open(ctx context.Context, cfg Config) (*Publisher, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	opts := append(cfg.ClientOptions(), option.WithGRPCDialOption(grpc.WithWriteBufferSize(writeBufferBytes)))
	client, err := pubsub.NewTopicAdminClient(ctx, opts...)
	if err != nil {
		if rpc.Code(err) == codes.Unknown {
			return nil, status.Errorf(codes.Unauthenticated, "open publisher: %v", err)
		}
		return nil, rpc.Describe(err, "open publisher", "")
	}
	// The generated client's own retries and timeouts are off: rpc.Policy
	// owns them, so Retries counts every repeated attempt.
	client.CallOptions.Publish = nil
	client.CallOptions.GetTopic = nil

	p := &Publisher{
		cfg:    cfg,
		what:   "publish to " + cfg.Topic,
		client: client,
		retry: rpc.Policy{Backoff: rpc.Backoff{Initial: ms(cfg.RetryInitialMs), Max: ms(cfg.RetryMaxMs)},
			Timeout: ms(cfg.RetryTimeoutMs), TimeoutKey: "retry_timeout_ms"},
		fc:    newFlowController(cfg.MaxInFlightBytes),
		slots: make(chan struct{}, cfg.MaxConcurrentRequests),
	}
	if cfg.EncodeSchema != nil {
		p.encoder, _ = encode.New(*cfg.EncodeSchema) // Validate checked it
	}
	if err := p.checkTopic(ctx); err != nil {
		client.Close()
		return nil, err
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.seq = newSequencer(p.send, p.complete)
	p.batch = newBatcher(cfg.Topic, cfg.MaxBatchMessages, cfg.MaxBatchBytes, cfg.linger(), p.seq.submit)
	return p, nil
}

// checkTopic fails fast on a missing topic or a bad address instead of at
// the first flush.
func (p *Publisher) checkTopic(ctx context.Context) error {
	r := p.retry
	r.Timeout, r.TimeoutKey = ms(p.cfg.OpenTimeoutMs), "open_timeout_ms"
	what := "open publisher: topic " + p.cfg.Topic
	_, err := r.Do(ctx, what, func(ctx context.Context) error {
		_, err := p.client.GetTopic(ctx, &pubsubpb.GetTopicRequest{Topic: p.cfg.Topic})
		return err
	})
	switch {
	case rpc.Code(err) == codes.PermissionDenied:
		// roles/pubsub.publisher may publish but not get the topic: the
		// check is best effort, and a real denial surfaces at Flush.
		return nil
	case err != nil && ctx.Err() == nil && rpc.Retryable(err):
		return status.Errorf(codes.Unavailable, "%s (is Pub/Sub reachable at %s?)", rpc.Detail(err), p.address())
	}
	return err // nil, NOT_FOUND naming the topic, or another definitive error
}

// address is where the client connects, for error messages.
func (p *Publisher) address() string {
	o := p.cfg.Options.Resolve()
	switch {
	case o.EmulatorHost != "":
		return o.EmulatorHost
	case o.Endpoint != "":
		return o.Endpoint
	}
	return "pubsub.googleapis.com:443"
}

// messageColumn reports whether a column is the message's own (kept as
// it is) rather than a field of EncodeSchema's record.
func (p *Publisher) messageColumn(name string) bool {
	return name == "attributes" || name == "ordering_key" || (name == p.cfg.TimestampColumn && name != "")
}

// Publish encodes every row of rec as a message and queues it. It
// returns once all rows are queued, blocking while the bytes in flight
// exceed MaxInFlightBytes. Invalid input fails before anything of rec is
// queued. An earlier asynchronous failure is returned here too. rec is
// not retained: payloads are copied.
func (p *Publisher) Publish(ctx context.Context, rec arrow.RecordBatch) error {
	p.pubMu.Lock()
	defer p.pubMu.Unlock()
	if err := p.state(); err != nil {
		return err
	}
	if p.encoder != nil {
		encoded, err := p.encoder.Encode(rec, p.messageColumn)
		if err != nil {
			return invalid("%v", err)
		}
		defer encoded.Release()
		rec = encoded
	}
	msgs, c, err := encodeRows(rec, rowOptions{
		ordering:    p.cfg.EnableMessageOrdering,
		idAttribute: p.cfg.IDAttribute,
		idPrefix:    p.cfg.IDPrefix,
		tsAttribute: p.cfg.TimestampAttribute,
		tsColumn:    p.cfg.TimestampColumn,
	}, p.nextRow, &p.chunks, p.scratch)
	if err != nil {
		return err
	}
	defer c.release() // the bundles hold the chunk from here on
	p.scratch = msgs
	p.nextRow += int64(len(msgs))
	for _, m := range msgs {
		if err := p.state(); err != nil {
			return err
		}
		charge := int64(len(m.entry))
		if err := p.fc.acquire(ctx, p.ctx.Done(), charge); err != nil {
			return err
		}
		p.track(1)
		if !p.batch.add(m) { // closed meanwhile
			p.fc.release(charge)
			p.untrack(1)
			return errClosed
		}
	}
	return nil
}

// StartIDs makes the rows published from now on carry the ids
// prefix-0, prefix-1, ...: a Publisher kept across several writes (the
// Spark sink keeps one per worker for many tasks) numbers each write's
// rows from 0 under that write's prefix, as a fresh Publisher would, so
// a retried write reproduces its ids. Messages already published keep
// theirs. It needs IDAttribute.
func (p *Publisher) StartIDs(prefix string) error {
	if p.cfg.IDAttribute == "" {
		return invalid("an id prefix needs id_attribute: open the publisher with id_attribute set to stamp ids")
	}
	p.pubMu.Lock()
	defer p.pubMu.Unlock()
	if err := p.checkOpen(); err != nil {
		return err
	}
	p.cfg.IDPrefix = prefix
	p.nextRow = 0
	return nil
}

// Flush sends every partial batch and waits until every message published
// so far is acknowledged or failed. It returns the totals and the first
// failure, if any. When ctx ends first it returns DEADLINE_EXCEEDED (or
// CANCELLED); the messages stay queued.
func (p *Publisher) Flush(ctx context.Context) (Result, error) {
	if err := p.checkOpen(); err != nil {
		return p.result(), err
	}
	p.batch.flush()
	p.mu.Lock()
	if p.pending == 0 {
		err := p.err
		p.mu.Unlock()
		return p.result(), err
	}
	if p.idle == nil {
		p.idle = make(chan struct{})
	}
	idle := p.idle
	p.mu.Unlock()

	select {
	case <-idle:
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.result(), p.err
	case <-p.ctx.Done():
		return p.result(), errClosed
	case <-ctx.Done():
		p.mu.Lock()
		n := p.pending
		p.mu.Unlock()
		return p.result(), rpc.CtxError(ctx.Err(), fmt.Sprintf("flush: %d messages not acknowledged yet", n))
	}
}

// Close aborts requests in flight and abandons unflushed messages (Flush
// first to keep them). It waits for its goroutines to end.
func (p *Publisher) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	p.cancel()
	for _, b := range p.batch.stop() {
		p.complete(b, errClosed)
	}
	p.wg.Wait()
	return p.client.Close()
}

// send starts sending b; it is the sequencer's send hook.
func (p *Publisher) send(b *bundle) {
	p.wg.Add(1)
	go p.run(b)
}

func (p *Publisher) run(b *bundle) {
	defer p.wg.Done()
	var err error
	select {
	case p.slots <- struct{}{}:
		req := b.request(p.cfg.Topic)
		send := sendOption(b, p.cfg.Compression == "gzip" && b.wire >= p.cfg.CompressionBytesThreshold)
		var n int
		n, err = p.retry.Do(p.ctx, p.what, func(ctx context.Context) error {
			_, err := p.client.Publish(ctx, req, send)
			return err
		})
		<-p.slots
		p.retries.Add(int64(n))
	case <-p.ctx.Done():
		err = errClosed
	}
	p.complete(b, err)
	p.seq.done(b, err)
}

// complete accounts for a bundle that was acknowledged or failed.
func (p *Publisher) complete(b *bundle, err error) {
	p.fc.release(b.flow)
	if err == nil {
		p.published.Add(int64(len(b.msgs)))
		p.bytes.Add(b.bytes)
	} else {
		p.mu.Lock()
		if p.err == nil && !p.closed {
			p.err = err
		}
		p.mu.Unlock()
	}
	p.untrack(int64(len(b.msgs)))
	b.drop()
}

func (p *Publisher) track(n int64) {
	p.mu.Lock()
	p.pending += n
	p.mu.Unlock()
}

func (p *Publisher) untrack(n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pending -= n
	if p.pending == 0 && p.idle != nil {
		close(p.idle)
		p.idle = nil
	}
}

// state is the error a new Publish must return: closed or failed.
func (p *Publisher) state() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errClosed
	}
	return p.err
}

func (p *Publisher) checkOpen() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errClosed
	}
	return nil
}

func (p *Publisher) result() Result {
	return Result{Published: p.published.Load(), Bytes: p.bytes.Load(), Retries: p.retries.Load()}
}
