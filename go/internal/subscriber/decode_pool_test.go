package subscriber

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/pubsub-go/pubsub-go/go/internal/decode"
	"github.com/pubsub-go/pubsub-go/go/internal/rawbatch"
	"github.com/pubsub-go/pubsub-go/go/internal/wire"
)

// jsonMessages makes messages with message ids ids, ack ids "ack-<id>"
// and the given payloads.
func jsonMessages(ids []string, payloads []string) []wire.Message {
	msgs := received(ids...)
	for i := range msgs {
		msgs[i].Data = []byte(payloads[i])
	}
	return msgs
}

// decodedRows lists a decoded batch's rows as "message_id:ack_id:id|error"
// and checks its columns are the decoded schema's.
func decodedRows(t *testing.T, d *decoding, b *Batch) []string {
	t.Helper()
	rec := b.Record
	if !rec.Schema().Equal(d.schema) {
		t.Fatalf("handed out schema %v, want the decoded one %v", rec.Schema(), d.schema)
	}
	nd := len(d.dec.Schema().Fields())
	mids := rec.Column(nd + rawbatch.ColMessageID).(*array.String)
	ids := rec.Column(0).(*array.Int64)
	errs := rec.Column(int(rec.NumCols()) - 1).(*array.String)
	var out []string
	for i := range int(rec.NumRows()) {
		v := fmt.Sprint(ids.Value(i))
		if errs.IsValid(i) {
			v = "error"
			if ids.IsValid(i) || errs.Value(i) == "" {
				t.Errorf("row %d: failed row with id valid=%v, error %q", i, ids.IsValid(i), errs.Value(i))
			}
		}
		out = append(out, mids.Value(i)+":"+b.AckIDs.Value(i)+":"+v)
	}
	return out
}

// headState is the decoding state of the reservoir's head lot (-1: none).
func headState(r *reservoir) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.lots) == 0 || r.lots[0].pre == nil {
		return -1
	}
	return r.lots[0].pre.state
}

// Schema mode: lots are decoded by the pool when they are finished, so
// take itself hands out a decoded batch; a decoded lot splits like a raw
// one (same rows, same ack ids), and a row that fails to decode keeps its
// error in the error column.
func TestTakeHandsOutLotsDecodedAhead(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	dec, err := newDecoding(context.Background(), &decode.DecoderConfig{Format: "json", Schema: schemaB64(t, eventSchema)}, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer dec.close()
	r := newReservoir(newFlowController(100, 1<<20), mem, 4)
	pool := startDecodePool(r, dec, 2)
	defer pool.stop()

	r.add(jsonMessages([]string{"a", "b", "c", "d", "e"},
		[]string{`{"id": 1}`, `{"id": 2}`, `{"id": "three"}`, `{"id": 4}`, `{"id": 5}`}), time.Now(), time.Minute)
	// [a b c d] is a finished lot; e is still in the builder.
	waitFor(t, 5*time.Second, "the finished lot to be decoded without a take", func() bool {
		return headState(r) == lotDecoded
	})

	b, wake, err := r.take(3, false)
	if err != nil || b == nil {
		t.Fatalf("take(3) = %v %v %v", b, wake, err)
	}
	if got, want := strings.Join(decodedRows(t, dec, b), " "), "a:ack-a:1 b:ack-b:2 c:ack-c:error"; got != want {
		t.Errorf("split head = %s, want %s", got, want)
	}
	b.Release()
	// The rest of the split lot is decoded already, too.
	if st := headState(r); st != lotDecoded {
		t.Errorf("the rest of a split decoded lot has state %d, want decoded", st)
	}
	b, _, err = r.take(3, true)
	if err != nil || b == nil {
		t.Fatalf("take of the rest = %v %v", b, err)
	}
	if got, want := strings.Join(decodedRows(t, dec, b), " "), "d:ack-d:4"; got != want {
		t.Errorf("split tail = %s, want %s", got, want)
	}
	b.Release()

	// A partial take flushes e into a lot of its own and waits for it to
	// be decoded (it never hands out a raw lot in schema mode).
	b, wake, err = r.take(3, true)
	if b == nil && err == nil && wake != nil {
		select {
		case <-wake:
		case <-time.After(5 * time.Second):
			t.Fatal("the flushed lot was not decoded within 5s")
		}
		b, _, err = r.take(3, true)
	}
	if err != nil || b == nil {
		t.Fatalf("partial take of e = %v %v", b, err)
	}
	if got, want := strings.Join(decodedRows(t, dec, b), " "), "e:ack-e:5"; got != want {
		t.Errorf("flushed lot = %s, want %s", got, want)
	}
	b.Release()

	// Lots still waiting or being decoded when the reservoir is drained
	// are freed, whatever the workers were doing.
	r.add(jsonMessages([]string{"f", "g", "h", "i"}, []string{"{}", "{}", "{}", "{}"}), time.Now(), time.Minute)
	r.close()
	pool.stop()
	if ids := r.drain(); strings.Join(ids, " ") != "ack-f ack-g ack-h ack-i" {
		t.Errorf("drain = %v, want the 4 lots' ack ids", ids)
	}
	r.releaseBuilder()
}

// Through Next: a batch that fails as a whole (the decoder hit its time
// limit) on a decode worker is still nacked and reported by the Next that
// takes it, and a Next waiting for a lot being decoded returns when the
// subscriber closes.
func TestNextWaitingForADecodeEndsAtClose(t *testing.T) {
	srv := newServer(t)
	srv.Publish(testTopic, []byte("loop"), nil)
	cfg := testConfig(srv)
	cfg.Decoder = &decode.DecoderConfig{Wasm: guestModule(t, "internal/testguests/hostile"), Format: "hostile", TimeoutMs: 30000}
	s := openTest(t, cfg, fast)
	waitFor(t, 10*time.Second, "the message to arrive", func() bool {
		_, buffered := s.res.len()
		return buffered == 1
	})
	done := make(chan error, 1)
	go func() {
		b, err := s.Next(context.Background(), 1, 50*time.Millisecond)
		if err == nil {
			b.Release()
		}
		done <- err
	}()
	time.Sleep(200 * time.Millisecond) // Next waits for the endless decode
	start := time.Now()
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	select {
	case err := <-done:
		if err == nil {
			t.Error("Next handed out a batch whose decode never finished")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Next still waiting 10s after Close")
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Close took %v with a decode running (time limit 30s)", d)
	}
}
