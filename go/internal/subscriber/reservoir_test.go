package subscriber

import (
	"fmt"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"

	"github.com/pubsub-go/pubsub-go/go/internal/rawbatch"
	"github.com/pubsub-go/pubsub-go/go/internal/rpc"
	"github.com/pubsub-go/pubsub-go/go/internal/wire"
)

// received makes messages with message ids ids and ack ids "ack-<id>".
func received(ids ...string) []wire.Message {
	msgs := make([]wire.Message, len(ids))
	for i, id := range ids {
		msgs[i] = wire.Message{AckID: []byte("ack-" + id), MessageID: []byte(id), Data: []byte("data")}
	}
	return msgs
}

func testReservoir(fc *flowController, batchSize int) *reservoir {
	return newReservoir(fc, memory.NewGoAllocator(), batchSize)
}

// takenIDs lists the message ids of a batch (empty for none) and releases it.
func takenIDs(b *Batch) string {
	var s []string
	if b != nil {
		ids := b.Record.Column(rawbatch.ColMessageID).(*array.String)
		for i := range ids.Len() {
			s = append(s, ids.Value(i))
		}
		b.Release()
	}
	return fmt.Sprint(s)
}

func TestReservoirHandsOutInArrivalOrder(t *testing.T) {
	fc := newFlowController(100, 1<<20)
	r := testReservoir(fc, 1000)
	r.addIDs("a", "b", "c")
	r.addIDs("d", "e")

	msgs, wake, err := r.take(6, false)
	if err != nil || msgs != nil || wake == nil {
		t.Fatalf("take(6) of 5 = %v %v %v, want a channel to wait on", msgs, wake, err)
	}
	msgs, _, _ = r.take(2, false)
	if got := takenIDs(msgs); got != "[a b]" {
		t.Errorf("first take = %s, want [a b]", got)
	}
	// A buffered message acked (by id, from elsewhere) is no longer held,
	// but it is already in the built batch: it is still handed out.
	r.remove([]string{"ack-c"})
	msgs, _, _ = r.take(10, true)
	if got := takenIDs(msgs); got != "[c d e]" {
		t.Errorf("partial take = %s, want [c d e]", got)
	}
	if held, buffered := r.len(); held != 4 || buffered != 0 {
		t.Errorf("held=%d buffered=%d, want 4 0", held, buffered)
	}
	if fc.held() != 4 {
		t.Errorf("flow control counts %d, want 4", fc.held())
	}
	msgs, wake, err = r.take(1, true)
	if err != nil || msgs != nil || wake != nil {
		t.Errorf("partial take of nothing = %v %v %v, want empty", msgs, wake, err)
	}
}

func (r *reservoir) addIDs(ids ...string) {
	r.add(received(ids...), time.Now(), time.Minute)
}

func TestReservoirWakesWaiters(t *testing.T) {
	r := testReservoir(newFlowController(100, 1<<20), 1000)
	_, wake, _ := r.take(1, false)
	r.addIDs("a")
	select {
	case <-wake:
	case <-time.After(5 * time.Second):
		t.Fatal("add did not wake the waiter")
	}
	_, wake, _ = r.take(2, false)
	r.fail(rpc.Errorf(codes.PermissionDenied, "no"))
	select {
	case <-wake:
	case <-time.After(5 * time.Second):
		t.Fatal("fail did not wake the waiter")
	}
	if _, _, err := r.take(1, true); rpc.Code(err) != codes.PermissionDenied {
		t.Errorf("take after fail = %v, want PERMISSION_DENIED", err)
	}
	r.close()
	if _, _, err := r.take(1, true); rpc.Code(err) != codes.FailedPrecondition {
		t.Errorf("take after close = %v, want FAILED_PRECONDITION", err)
	}
}

func TestReservoirDrainReturnsOnlyBuffered(t *testing.T) {
	fc := newFlowController(100, 1<<20)
	r := testReservoir(fc, 1000)
	r.addIDs("a", "b", "c", "d")
	r.take(1, false)            // a handed out
	r.remove([]string{"ack-c"}) // c acked while buffered
	r.close()
	r.addIDs("e") // arrives while streams stop: still nacked
	if got := fmt.Sprint(r.drain()); got != "[ack-b ack-d ack-e]" {
		t.Errorf("drain = %s, want [ack-b ack-d ack-e]", got)
	}
	if held, buffered := r.len(); held != 0 || buffered != 0 || fc.held() != 0 {
		t.Errorf("after drain held=%d buffered=%d flow=%d, want 0", held, buffered, fc.held())
	}
}

// What arrives after close (Close reads the streams to their end with flow
// control lifted) is kept as ack ids to nack, never built into Arrow
// buffers: the server may send up to its own limits meanwhile.
func TestReservoirKeepsOnlyAckIDsAfterClose(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	fc := newFlowController(100, 1<<20)
	r := newReservoir(fc, mem, 1000)
	r.close()
	big := received("x", "y")
	for i := range big {
		big[i].Data = make([]byte, 1<<20)
	}
	r.add(big, time.Now(), time.Minute)
	if n := mem.CurrentAlloc(); n != 0 {
		t.Errorf("%d bytes of Arrow buffers built for messages that arrived after close", n)
	}
	if held, buffered := r.len(); held != 0 || buffered != 0 || fc.held() != 0 {
		t.Errorf("after close held=%d buffered=%d flow=%d, want 0", held, buffered, fc.held())
	}
	if got := fmt.Sprint(r.drain()); got != "[ack-x ack-y]" {
		t.Errorf("drain = %s, want [ack-x ack-y]", got)
	}
	if got := r.drain(); len(got) != 0 {
		t.Errorf("a second drain returned %v again", got)
	}
	r.releaseBuilder()
	mem.AssertSize(t, 0)
}

func TestReservoirRemoveReleasesFlowControl(t *testing.T) {
	fc := newFlowController(2, 1<<20)
	r := testReservoir(fc, 1000)
	r.addIDs("a", "b")
	if !fc.full() {
		t.Fatal("2 of 2 held: not full")
	}
	msgs, _, _ := r.take(2, false)
	if takenIDs(msgs) != "[a b]" || !fc.full() {
		t.Fatal("handed-out messages must still count as held")
	}
	r.remove([]string{"ack-a", "unknown"})
	if fc.full() || fc.held() != 1 {
		t.Errorf("after removing one: held=%d full=%v", fc.held(), fc.full())
	}
}

// allocCounter counts allocations, to prove a hand-over copies nothing.
type allocCounter struct {
	memory.Allocator
	n int
}

func (a *allocCounter) Allocate(size int) []byte {
	a.n++
	return a.Allocator.Allocate(size)
}

func TestReservoirHandsOverWholeLotsWithoutCopying(t *testing.T) {
	mem := &allocCounter{Allocator: memory.NewGoAllocator()}
	r := newReservoir(newFlowController(100, 1<<20), mem, 2)
	r.addIDs("a", "b", "c")
	r.addIDs("d", "e")
	if held, buffered := r.len(); held != 5 || buffered != 5 {
		t.Fatalf("held=%d buffered=%d, want 5 5", held, buffered)
	}
	before := mem.n
	b, _, _ := r.take(2, false)
	if mem.n != before {
		t.Errorf("taking a whole lot allocated %d buffers, want none", mem.n-before)
	}
	if got := takenIDs(b); got != "[a b]" {
		t.Errorf("first lot = %s, want [a b]", got)
	}
	// Smaller than a lot: the lot is split, the rest handed out next.
	b, _, _ = r.take(1, false)
	if got := takenIDs(b); got != "[c]" {
		t.Errorf("split take = %s, want [c]", got)
	}
	// Larger than what is queued: waits unless partial, then takes the
	// head lot, then the rows still in the builder.
	r.addIDs("f")
	if b, wake, _ := r.take(4, false); b != nil || wake == nil {
		t.Fatalf("take(4) of 3 buffered should wait")
	}
	// Queued: [d] (the rest of the split) and [e f] (finished when f
	// arrived: take(1) did not lower the lot size).
	b, _, _ = r.take(4, true)
	if got := takenIDs(b); got != "[d]" {
		t.Errorf("partial take = %s, want the head lot [d]", got)
	}
	b, _, _ = r.take(4, true)
	if got := takenIDs(b); got != "[e f]" {
		t.Errorf("partial take = %s, want [e f]", got)
	}
	r.close()
	if ids := r.drain(); len(ids) != 0 {
		t.Errorf("drain after everything was handed out = %v", ids)
	}
	r.releaseBuilder()
}

func TestReservoirKeepsItsLotSizeAfterAShorterTake(t *testing.T) {
	r := testReservoir(newFlowController(100, 1<<20), 4)
	r.addIDs("a", "b", "c", "d")
	// A task's last pull asks for the rest of its budget.
	if got := takenIDs(first(r.take(2, false))); got != "[a b]" {
		t.Fatalf("take(2) = %s, want [a b]", got)
	}
	r.addIDs("e", "f", "g", "h", "i", "j")
	// The next task asks for whole batches again: after the rest of the
	// split lot, it gets lots of the configured size, not of the last ask.
	for _, want := range []string{"[c d]", "[e f g h]"} {
		if got := takenIDs(first(r.take(4, false))); got != want {
			t.Errorf("take(4) = %s, want %s", got, want)
		}
	}
	// A larger ask raises the lot size for lots built after it.
	r.addIDs("k", "l", "m", "n") // [i j k l], m n in the builder
	for _, want := range []string{"[i j k l]", "[m n]"} {
		if got := takenIDs(first(r.take(6, true))); got != want {
			t.Errorf("take(6) = %s, want %s", got, want)
		}
	}
	r.addIDs("o", "p", "q", "r", "s", "t")
	if got := takenIDs(first(r.take(6, false))); got != "[o p q r s t]" {
		t.Errorf("take(6) = %s, want one lot of 6", got)
	}
	r.close()
	r.drain()
	r.releaseBuilder()
}

// first is take's batch.
func first(b *Batch, _ <-chan struct{}, _ error) *Batch { return b }

func TestReservoirNeverCopiesAcrossLots(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	r := newReservoir(newFlowController(100, 1<<20), mem, 2)
	r.addIDs("a", "b", "c", "d", "e") // lots [a b] [c d], e in the builder
	b, _, _ := r.take(5, false)
	if b == nil {
		t.Fatal("take(5) of 5 buffered waited")
	}
	// The head lot only: joining lots would copy every row.
	if acks := b.AckIDs; acks.Len() != 2 || acks.Value(0) != "ack-a" || acks.Value(1) != "ack-b" {
		t.Errorf("ack ids %v do not match the rows", acks)
	}
	if got := takenIDs(b); got != "[a b]" {
		t.Errorf("take(5) = %s, want the head lot [a b]", got)
	}
	b, _, _ = r.take(5, true)
	if got := takenIDs(b); got != "[c d]" {
		t.Errorf("second take = %s, want [c d]", got)
	}
	b, _, _ = r.take(5, true)
	if got := takenIDs(b); got != "[e]" {
		t.Errorf("third take = %s, want [e]", got)
	}
	r.close()
	r.drain()
	r.releaseBuilder()
}

func TestReservoirCapsLotsByBytes(t *testing.T) {
	r := testReservoir(newFlowController(1000, 1<<30), 1000)
	big := make([]byte, 3<<20)
	msgs := received("a", "b", "c", "d")
	for i := range msgs {
		msgs[i].Data = big
	}
	r.add(msgs, time.Now(), time.Minute)
	// 3 MiB each: a lot is finished once it passes 8 MiB, after 3 rows.
	b, _, _ := r.take(1000, true)
	if got := takenIDs(b); got != "[a b c]" {
		t.Errorf("first lot = %s, want [a b c]: lots are capped by bytes", got)
	}
	b, _, _ = r.take(1000, true)
	if got := takenIDs(b); got != "[d]" {
		t.Errorf("second lot = %s, want [d]", got)
	}
}

// With flow control full nothing more can arrive: a full take hands out
// what is buffered at once instead of waiting for rows that cannot come;
// with nothing buffered it still waits.
func TestReservoirServesAFullTakeWhenFlowControlIsFull(t *testing.T) {
	fc := newFlowController(3, 1<<20)
	r := testReservoir(fc, 1000)
	if b, wake, _ := r.take(1000, false); b != nil || wake == nil {
		t.Fatalf("empty reservoir: batch %v wake %v, want a wait", b, wake)
	}
	r.addIDs("a", "b")
	if b, wake, _ := r.take(1000, false); b != nil || wake == nil {
		t.Fatalf("2 of 3 held: batch %v, want a wait for more", takenIDs(b))
	}
	r.addIDs("c") // flow control is full now
	b, _, _ := r.take(1000, false)
	if got := takenIDs(b); got != "[a b c]" {
		t.Fatalf("full flow control: took %s, want [a b c] at once", got)
	}
	// All three handed out and still held: full, nothing buffered: wait.
	if b, wake, _ := r.take(1000, false); b != nil || wake == nil {
		t.Fatalf("full, nothing buffered: batch %v wake %v, want a wait", b, wake)
	}
}

// A lot capped by bytes is as large as a lot gets: a full take serves it at
// once rather than wait for max rows that would never fit in one lot.
func TestReservoirServesALotCappedByBytesWithoutWaiting(t *testing.T) {
	r := testReservoir(newFlowController(1000, 1<<30), 1000)
	big := make([]byte, 3<<20)
	msgs := received("a", "b", "c", "d")
	for i := range msgs {
		msgs[i].Data = big
	}
	r.add(msgs, time.Now(), time.Minute)
	b, wake, _ := r.take(1000, false)
	if got := takenIDs(b); got != "[a b c]" || wake != nil {
		t.Fatalf("full take = %s, want the capped lot [a b c] at once", got)
	}
	if b, wake, _ := r.take(1000, false); b != nil || wake == nil {
		t.Fatalf("then %s, want a wait: d's lot is not capped", takenIDs(b))
	}
}
