package subscriber

import (
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/pubsub-go/pubsub-go/go/internal/cachehint"
	"github.com/pubsub-go/pubsub-go/go/internal/rawbatch"
	"github.com/pubsub-go/pubsub-go/go/internal/wire"
)

// entry is one held message: received and not yet acked, nacked, released
// or expired.
//
// Its times are nanoseconds since the reservoir's epoch (reservoir.stamp),
// not time.Time: with two time.Time an entry took 96 bytes, filled in for
// every message as it arrives; this way it takes 56, under a cache line.
type entry struct {
	ackID    string
	slab     *slab // the add it came with (held.go)
	size     int64
	received int64 // stamp
	expires  int64 // stamp of the server's deadline for it, as far as we know
	pos      int32 // in slab.entries
	gone     bool  // no longer held
	// handed: taken by a caller. Until then it is prefetch, leased only
	// briefly (settings.prefetchLease) so it comes back soon if this
	// process dies.
	handed bool
}

// maxLotBytes caps a lot's Arrow memory. Past a few tens of MB glibc serves
// every allocation with a fresh mmap (zero-filled page by page, unmapped on
// free); lots of a few MB reuse freed heap memory instead, so large
// payloads come in batches of fewer rows rather than in huge ones.
const maxLotBytes = 8 << 20

// lot is a finished batch waiting to be handed out, with the entries of
// its rows in order.
type lot struct {
	rec     arrow.RecordBatch
	ids     *array.String
	entries []*entry
	capped  bool       // finished at maxLotBytes: as large as a lot gets
	pre     *predecode // schema mode: decoding ahead of take (decode_pool.go)
}

// release frees l's batch; rec is nil afterwards (a decode worker checks).
func (l *lot) release() {
	l.rec.Release()
	l.ids.Release()
	l.rec, l.ids = nil, nil
}

// split cuts l after k rows; both halves share l's buffers.
func (l *lot) split(k int) (head, tail *lot) {
	n := int64(len(l.entries))
	head = &lot{rec: l.rec.NewSlice(0, int64(k)), ids: array.NewSlice(l.ids, 0, int64(k)).(*array.String), entries: l.entries[:k]}
	tail = &lot{rec: l.rec.NewSlice(int64(k), n), ids: array.NewSlice(l.ids, int64(k), n).(*array.String), entries: l.entries[k:]}
	head.pre, tail.pre = l.pre, l.pre
	l.release()
	return head, tail
}

// reservoir holds received messages. They are appended to an Arrow
// builder as they arrive (by the stream goroutines, off the caller's
// path), so handing out a batch is taking a finished lot, not building
// one. It also holds every message by ack id, handed out or not, for lease
// extension and for ack/nack/release (held.go).
//
// A message acked, nacked or expired while still waiting in a lot is no
// longer held, but stays in its lot and is handed out: taking it out would
// mean rebuilding the batch, and a message may always come twice.
type reservoir struct {
	fc    *flowController
	epoch time.Time // entries' times count from here (stamp)

	// bmu guards the builder and the rows in it. Lock order: bmu, then mu.
	bmu      sync.Mutex
	b        *rawbatch.Builder
	open     []*entry     // entries of the rows in b
	openRows atomic.Int64 // len(open), readable without bmu
	// target is the rows per lot: the configured batch size, raised by a
	// take that asks for more, never lowered. A shorter take splits a lot
	// (no copy); lots built at the last size asked for shrank for good:
	// a Spark task's last pull asks for the rest of its budget (2,000 of a
	// 50,000-row task in 4,000-row batches), the prefetch until the next
	// task was built at that size, that task's last pull asked for less
	// again, and within minutes every pull returned ~20 rows at a third of
	// the rows/s (bench/tools/spark_cpu.py with 50,000-row tasks in 4,000-row
	// batches showed it; TestReservoirKeepsItsLotSizeAfterAShorterTake).
	target atomic.Int64

	mu      sync.Mutex
	lots    []*lot // finished, arrival order
	lotRows int
	held    *heldSet
	closed  bool
	late    []string    // ack ids of messages that arrived after close, for Close to nack
	err     error       // permanent failure, reported by take
	pool    *decodePool // schema mode; nil for raw batches

	arrived signal // messages arrived, or closed, or failed
}

// stamp is t as an entry keeps it: nanoseconds since the reservoir's epoch,
// on the monotonic clock where t has a reading of it (time.Now's do).
func (r *reservoir) stamp(t time.Time) int64 { return int64(t.Sub(r.epoch)) }

func newReservoir(fc *flowController, mem memory.Allocator, batchSize int) *reservoir {
	r := &reservoir{fc: fc, b: rawbatch.NewBuilder(mem), held: newHeldSet(), epoch: time.Now()}
	r.target.Store(int64(batchSize))
	return r
}

// add appends received messages to the batch being built and holds them.
// deadline is the ack deadline they were delivered with. It returns their
// total size for flow control.
func (r *reservoir) add(msgs []wire.Message, now time.Time, deadline time.Duration) int64 {
	if len(msgs) == 0 {
		return 0
	}
	r.mu.Lock()
	if r.closed {
		// Close reads the streams to their end with flow control lifted, and
		// the server may send up to its own limits meanwhile: keep only what
		// Close needs to nack them, not their payloads in Arrow buffers (at
		// 10 KB, building them took a worker from 0.1 to 1.7 GB of C memory
		// in the 2 s of a Close).
		var total int64
		for i := range msgs {
			r.late = append(r.late, string(msgs[i].AckID))
			total += msgs[i].Size()
		}
		r.mu.Unlock()
		return total
	}
	r.mu.Unlock()
	// One allocation each for the entries and for all their ack ids.
	sl := &slab{entries: make([]entry, len(msgs))}
	n := 0
	for i := range msgs {
		n += len(msgs[i].AckID)
	}
	buf := make([]byte, 0, n)
	for i := range msgs {
		buf = append(buf, msgs[i].AckID...)
	}
	ids := unsafe.String(unsafe.SliceData(buf), len(buf)) // buf is never written again

	var total int64
	var done []*lot
	received := r.stamp(now)
	expires := received + int64(deadline)
	r.bmu.Lock()
	target := int(r.target.Load())
	off := 0
	for i := range msgs {
		m := &msgs[i]
		e := &sl.entries[i]
		*e = entry{ackID: ids[off : off+len(m.AckID)], size: m.Size(), received: received, expires: expires}
		off += len(m.AckID)
		total += e.size
		if i+copyAhead < len(msgs) {
			warmPayload(msgs[i+copyAhead].Data)
		}
		r.b.Append(m)
		r.open = append(r.open, e)
		if capped := r.b.Bytes() >= maxLotBytes; capped || len(r.open) >= target {
			l := r.finish()
			l.capped = capped
			done = append(done, l)
		}
	}
	r.openRows.Store(int64(len(r.open)))
	// Close may have come meanwhile: it drains again (and nacks) once the
	// streams have stopped.
	r.mu.Lock()
	r.held.add(sl)
	r.queue(done)
	r.mu.Unlock()
	r.bmu.Unlock()
	r.fc.add(len(msgs), total)
	r.arrived.broadcast()
	return total
}

// The copy of each payload into Arrow starts with cache misses: payloads
// lie 1 KiB or more apart in a response of a few MiB, and the hardware's
// own read-ahead only follows a run of reads once it has started. So add asks
// for the first warmBytes of the payload copyAhead messages on while it
// copies one. In BenchmarkDeliverCold (1 KiB payloads, responses not in
// cache), 3 runs each: 644-681 ns per message without any cache hints,
// 552-586 with the parse's (wire/lookahead.go), 464-493 with this as well.
// In a Spark read the copy went from 5.2% of all CPU to 1.8%.
const (
	copyAhead = 2
	warmBytes = 1 << 10
)

func warmPayload(d []byte) {
	for k := 0; k < len(d) && k < warmBytes; k += cachehint.CacheLine {
		cachehint.Line(&d[0], k)
	}
}

// finish turns the rows in the builder into a lot; the caller holds bmu.
func (r *reservoir) finish() *lot {
	rec, ids := r.b.NewBatch()
	l := &lot{rec: rec, ids: ids, entries: r.open}
	r.open = make([]*entry, 0, cap(r.open))
	return l
}

// queue appends finished lots; the caller holds mu.
func (r *reservoir) queue(done []*lot) {
	for _, l := range done {
		r.lots = append(r.lots, l)
		r.lotRows += len(l.entries)
		r.pool.added(l)
	}
}

// flush finishes the rows in the builder early, for a take that wants
// them now.
func (r *reservoir) flush() {
	r.bmu.Lock()
	defer r.bmu.Unlock()
	if len(r.open) == 0 {
		return
	}
	l := r.finish()
	r.openRows.Store(0)
	r.mu.Lock()
	r.queue([]*lot{l})
	r.mu.Unlock()
}

// take hands out up to max rows in arrival order from the head lot,
// without copying: the head lot whole, or its first max rows (the rest
// stays at the head). It returns fewer than max rows when the head lot is
// shorter (finished early for a partial take, the rest of a split, or
// built for a smaller size); the caller asks again for the rest. Unless
// partial, it takes nothing while fewer than max rows are buffered and
// returns a channel to wait on instead. It fails once the reservoir is
// closed or failed. A max above the lot size raises it (target), so a
// caller that keeps asking for the same size gets whole lots.
//
// While flow control is full nothing more can arrive, so a full take is
// served at once with what is buffered (no wait that could only run out):
// with large payloads max rows may be more than the flow control admits,
// and a take that waited out would make a streaming task end after one lot.
func (r *reservoir) take(max int, partial bool) (*Batch, <-chan struct{}, error) {
	wake := r.arrived.wait()
	r.raiseTarget(max)
	serve := partial || r.fc.full() // hand out a short lot rather than wait
	r.mu.Lock()
	if err := r.unusable(); err != nil {
		r.mu.Unlock()
		return nil, nil, err
	}
	open := int(r.openRows.Load())
	flush := r.lotRows < max && open > 0 && (serve || r.lotRows+open >= max)
	r.mu.Unlock()
	if flush {
		r.flush()
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.unusable(); err != nil {
		return nil, nil, err
	}
	// A lot capped by bytes is served whole at once too: waiting for max
	// rows of large payloads would only run out (and end a streaming task
	// after one lot).
	if r.lotRows == 0 || (r.lotRows < max && !serve && !r.lots[0].capped) {
		if partial {
			return nil, nil, nil
		}
		return nil, wake, nil
	}
	l := r.lots[0]
	if wait := r.pool.notReady(l); wait != nil {
		return nil, wait, nil // decoding (schema mode), even for a partial take
	}
	if len(l.entries) > max && !l.pre.failed() { // a failed lot goes whole, to be nacked
		l, r.lots[0] = l.split(max)
	} else {
		r.lots[0] = nil
		r.lots = r.lots[1:]
	}
	r.lotRows -= len(l.entries)
	// The only per-row work of a hand-over: from now on the rows are
	// leased for the full ack deadline (lease.go).
	// Their payload bytes leave flow control: the batch is the caller's
	// memory now (a Spark task streams it to the JVM and drops it), and
	// counting it until the ack would cap a task at one window and stall
	// the prefetch until its micro-batch commits. Their bookkeeping
	// (messageOverhead) stays counted until they are released.
	var handedBytes int64
	for _, e := range l.entries {
		e.handed = true
		if !e.gone {
			handedBytes += e.size
			e.size = 0
		}
	}
	r.fc.handOver(handedBytes)
	return l.batch(), nil, nil
}

// raiseTarget makes lots at least max rows from now on.
func (r *reservoir) raiseTarget(max int) {
	for {
		t := r.target.Load()
		if int64(max) <= t || r.target.CompareAndSwap(t, int64(max)) {
			return
		}
	}
}

// unusable is the error take reports; the caller holds mu.
func (r *reservoir) unusable() error {
	if r.closed {
		return errClosed
	}
	return r.err
}

// remove stops holding the given ack ids (acked, nacked or released).
// Unknown ids are ignored: they may belong to another process.
func (r *reservoir) remove(ids []string) {
	var n int
	var bytes int64
	r.mu.Lock()
	for _, id := range ids {
		if e := r.held.lookup(id); e != nil {
			n++
			bytes += e.size
			r.held.forget(e)
		}
	}
	r.held.compact()
	r.mu.Unlock()
	r.fc.release(n, bytes)
}

// touch records a deadline set by the user for held ids, so the lease
// does not extend them earlier than needed.
func (r *reservoir) touch(ids []string, expires time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, id := range ids {
		if e := r.held.lookup(id); e != nil {
			e.expires = r.stamp(expires)
		}
	}
}

// fail records a permanent error: every later take returns it.
func (r *reservoir) fail(err error) {
	r.mu.Lock()
	if r.err == nil {
		r.err = err
	}
	r.mu.Unlock()
	r.arrived.broadcast()
}

// failure is the permanent error, if any.
func (r *reservoir) failure() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// close makes every later take fail and wakes the waiting ones.
func (r *reservoir) close() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.arrived.broadcast()
}

// drain forgets every held message, frees the batches not handed out and
// returns the ack ids of their messages still held, in arrival order, and
// of those that arrived after close, for Close to nack.
func (r *reservoir) drain() []string {
	r.bmu.Lock()
	defer r.bmu.Unlock()
	if len(r.open) > 0 {
		l := r.finish()
		r.openRows.Store(0)
		r.mu.Lock()
		r.queue([]*lot{l})
		r.mu.Unlock()
	}
	r.mu.Lock()
	ids := make([]string, 0, r.lotRows)
	for _, l := range r.lots {
		for _, e := range l.entries {
			if !e.gone {
				ids = append(ids, e.ackID)
			}
		}
		l.release()
	}
	r.lots, r.lotRows = nil, 0
	ids = append(ids, r.late...)
	r.late = nil
	var bytes int64
	n := r.held.count
	r.held.each(func(e *entry) {
		bytes += e.size
		r.held.forget(e)
	})
	r.mu.Unlock()
	r.fc.release(n, bytes)
	return ids
}

// releaseBuilder frees the builder; after Close has drained for the last
// time.
func (r *reservoir) releaseBuilder() {
	r.bmu.Lock()
	defer r.bmu.Unlock()
	r.b.Release()
}

// len is the number of held messages and of rows not yet handed out.
func (r *reservoir) len() (held, buffered int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.held.count, r.lotRows + int(r.openRows.Load())
}
