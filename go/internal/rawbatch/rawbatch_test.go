package rawbatch

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/memory/mallocator"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/pubsub-go/pubsub-go/go/internal/cmem"
	"github.com/pubsub-go/pubsub-go/go/internal/wire"
)

// received encodes msgs as one StreamingPullResponse and decodes it the
// way the subscriber does.
func received(t testing.TB, msgs []*pubsubpb.ReceivedMessage) []wire.Message {
	t.Helper()
	b, err := proto.Marshal(&pubsubpb.StreamingPullResponse{ReceivedMessages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	var r wire.Response
	if err := r.Parse(b); err != nil {
		t.Fatal(err)
	}
	return r.Messages
}

func checkedAlloc(t *testing.T) *memory.CheckedAllocator {
	t.Helper()
	mem := memory.NewCheckedAllocator(mallocator.NewMallocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	return mem
}

func TestSchema(t *testing.T) {
	want := []struct {
		name string
		typ  string
	}{
		{"message_id", "utf8"},
		{"publish_time", "timestamp[us, tz=UTC]"},
		{"attributes", "map<utf8, utf8, items_nullable>"},
		{"payload", "binary"},
		{"ordering_key", "utf8"},
		{"delivery_attempt", "int32"},
	}
	fs := Schema().Fields()
	if len(fs) != len(want) {
		t.Fatalf("schema has %d fields, want %d: %v", len(fs), len(want), Schema())
	}
	for i, w := range want {
		if fs[i].Name != w.name || fs[i].Type.String() != w.typ || !fs[i].Nullable {
			t.Errorf("field %d = %s %s nullable=%v, want %s %s nullable", i, fs[i].Name, fs[i].Type, fs[i].Nullable, w.name, w.typ)
		}
	}
}

func sampleMessages() []*pubsubpb.ReceivedMessage {
	return []*pubsubpb.ReceivedMessage{
		{
			AckId: "ack-0",
			Message: &pubsubpb.PubsubMessage{
				MessageId:   "m0",
				Data:        []byte("hello"),
				Attributes:  map[string]string{"z": "26", "a": "1", "m": ""},
				PublishTime: &timestamppb.Timestamp{Seconds: 1_700_000_000, Nanos: 123_456_000},
				OrderingKey: "key-1",
			},
			DeliveryAttempt: 5,
		},
		{
			// Everything optional left out.
			AckId:   "ack-1",
			Message: &pubsubpb.PubsubMessage{MessageId: "m1"},
		},
		{
			AckId: "ack-2",
			Message: &pubsubpb.PubsubMessage{
				MessageId:   "m2",
				Data:        []byte{0, 1, 2, 255},
				Attributes:  map[string]string{"only": "one"},
				PublishTime: &timestamppb.Timestamp{Seconds: -1, Nanos: 500_000_000}, // 1969-12-31T23:59:59.5Z
			},
		},
	}
}

func TestAppendValues(t *testing.T) {
	mem := checkedAlloc(t)
	b := NewBuilder(mem)
	defer b.Release()
	msgs := received(t, sampleMessages())
	for i := range msgs {
		b.Append(&msgs[i])
	}
	if b.Len() != 3 {
		t.Fatalf("Len = %d, want 3", b.Len())
	}
	if b.Bytes() < len("hello")+4+3*rowOverhead {
		t.Errorf("Bytes = %d, smaller than the payloads and fixed row cost", b.Bytes())
	}
	rec, acks := b.NewBatch()
	defer rec.Release()
	defer acks.Release()
	if b.Len() != 0 || b.Bytes() != 0 {
		t.Errorf("after NewBatch Len=%d Bytes=%d, want 0 0", b.Len(), b.Bytes())
	}
	checkSample(t, rec, acks)
}

func checkSample(t *testing.T, rec arrow.RecordBatch, acks *array.String) {
	t.Helper()
	if !rec.Schema().Equal(Schema()) {
		t.Fatalf("schema %v, want %v", rec.Schema(), Schema())
	}
	if rec.NumRows() != 3 || acks.Len() != 3 {
		t.Fatalf("rows=%d acks=%d, want 3 3", rec.NumRows(), acks.Len())
	}
	for i, want := range []string{"ack-0", "ack-1", "ack-2"} {
		if acks.Value(i) != want {
			t.Errorf("ack id %d = %q, want %q", i, acks.Value(i), want)
		}
	}
	ids := rec.Column(ColMessageID).(*array.String)
	for i, want := range []string{"m0", "m1", "m2"} {
		if ids.IsNull(i) || ids.Value(i) != want {
			t.Errorf("message_id %d = %q, want %q", i, ids.Value(i), want)
		}
	}

	ts := rec.Column(ColPublishTime).(*array.Timestamp)
	if got, want := int64(ts.Value(0)), int64(1_700_000_000_123_456); got != want {
		t.Errorf("publish_time 0 = %d, want %d", got, want)
	}
	if got := ts.Value(0).ToTime(arrow.Microsecond); !got.Equal(time.Unix(1_700_000_000, 123_456_000)) {
		t.Errorf("publish_time 0 as time = %v", got)
	}
	if !ts.IsNull(1) {
		t.Errorf("publish_time 1 should be null (no timestamp)")
	}
	if got := int64(ts.Value(2)); got != -500_000 {
		t.Errorf("pre-epoch publish_time = %d, want -500000", got)
	}

	attrs := rec.Column(ColAttributes).(*array.Map)
	keys := attrs.Keys().(*array.String)
	items := attrs.Items().(*array.String)
	wantAttrs := [][2][]string{
		{{"a", "m", "z"}, {"1", "", "26"}}, // sorted by key
		{{}, {}},
		{{"only"}, {"one"}},
	}
	for i, w := range wantAttrs {
		if attrs.IsNull(i) {
			t.Errorf("attributes %d is null, want a map", i)
			continue
		}
		start, end := attrs.ValueOffsets(i)
		var gk, gv []string
		for j := start; j < end; j++ {
			gk = append(gk, keys.Value(int(j)))
			gv = append(gv, items.Value(int(j)))
		}
		if fmt.Sprint(gk) != fmt.Sprint(w[0]) || fmt.Sprint(gv) != fmt.Sprint(w[1]) {
			t.Errorf("attributes %d = %v=%v, want %v=%v", i, gk, gv, w[0], w[1])
		}
	}

	payload := rec.Column(ColPayload).(*array.Binary)
	for i, want := range [][]byte{[]byte("hello"), {}, {0, 1, 2, 255}} {
		if payload.IsNull(i) || !bytes.Equal(payload.Value(i), want) {
			t.Errorf("payload %d = %v (null=%v), want %v", i, payload.Value(i), payload.IsNull(i), want)
		}
	}

	okey := rec.Column(ColOrderingKey).(*array.String)
	if okey.IsNull(0) || okey.Value(0) != "key-1" {
		t.Errorf("ordering_key 0 = %q, want key-1", okey.Value(0))
	}
	if !okey.IsNull(1) || !okey.IsNull(2) {
		t.Errorf("ordering_key without key should be null")
	}

	att := rec.Column(ColDeliveryAttempt).(*array.Int32)
	if att.IsNull(0) || att.Value(0) != 5 {
		t.Errorf("delivery_attempt 0 = %d, want 5", att.Value(0))
	}
	if !att.IsNull(1) || !att.IsNull(2) {
		t.Errorf("delivery_attempt 0 from the server should be null")
	}
}

func TestSteadyBatchesDoNotRegrowBuffers(t *testing.T) {
	pbs := make([]*pubsubpb.ReceivedMessage, 1000)
	for i := range pbs {
		pbs[i] = message(i, 1024)
	}
	msgs := received(t, pbs)
	b := NewBuilder(memory.NewGoAllocator())
	defer b.Release()
	before := 0
	for round := range 3 {
		for i := range msgs {
			b.Append(&msgs[i])
		}
		rec, acks := b.NewBatch()
		rec.Release()
		acks.Release()
		grew := b.grows() - before
		before = b.grows()
		switch {
		case round == 0 && grew == 0:
			t.Errorf("first batch: no buffer grew; the test cannot tell the difference")
		case round > 0 && grew != 0:
			t.Errorf("batch %d: %d buffers grew, want 0 (reserved like the previous batch)", round, grew)
		}
	}
}

func TestBuilderReuseAndEmptyBatch(t *testing.T) {
	mem := checkedAlloc(t)
	b := NewBuilder(mem)
	defer b.Release()

	rec, acks := b.NewBatch()
	if rec.NumRows() != 0 || acks.Len() != 0 || !rec.Schema().Equal(Schema()) {
		t.Errorf("empty batch: rows=%d acks=%d schema=%v", rec.NumRows(), acks.Len(), rec.Schema())
	}
	rec.Release()
	acks.Release()

	for round := range 3 {
		pbs := make([]*pubsubpb.ReceivedMessage, 10)
		for i := range pbs {
			pbs[i] = message(round*10+i, 16)
		}
		msgs := received(t, pbs)
		for i := range msgs {
			b.Append(&msgs[i])
		}
		rec, acks := b.NewBatch()
		ids := rec.Column(ColMessageID).(*array.String)
		if rec.NumRows() != 10 || ids.Value(0) != fmt.Sprintf("id-%d", round*10) {
			t.Errorf("round %d: rows=%d first id=%q", round, rec.NumRows(), ids.Value(0))
		}
		if acks.Value(9) != fmt.Sprintf("ack-%d", round*10+9) {
			t.Errorf("round %d: last ack=%q", round, acks.Value(9))
		}
		rec.Release()
		acks.Release()
	}
}

func message(i, size int) *pubsubpb.ReceivedMessage {
	return &pubsubpb.ReceivedMessage{
		AckId: fmt.Sprintf("ack-%d", i),
		Message: &pubsubpb.PubsubMessage{
			MessageId:   fmt.Sprintf("id-%d", i),
			Data:        bytes.Repeat([]byte{'x'}, size),
			Attributes:  map[string]string{"source": "bench", "seq": fmt.Sprint(i)},
			PublishTime: timestamppb.New(time.Unix(1_700_000_000, int64(i)*1000)),
		},
	}
}

// BenchmarkAppend1KB measures the hot loop: 1 KiB messages with two
// attributes into C memory (malloc), 1000 rows per batch.
func BenchmarkAppend1KB(b *testing.B) { benchmarkAppend1KB(b, mallocator.NewMallocator()) }

// BenchmarkAppend1KBCmem is BenchmarkAppend1KB with the subscriber's
// allocator, whose large buffers are mappings reused from batch to batch.
func BenchmarkAppend1KBCmem(b *testing.B) { benchmarkAppend1KB(b, cmem.NewDefault()) }

func benchmarkAppend1KB(b *testing.B, mem memory.Allocator) {
	const batch = 1000
	pbs := make([]*pubsubpb.ReceivedMessage, batch)
	for i := range pbs {
		pbs[i] = message(i, 1024)
		// Real ack ids are long; make the copy realistic.
		pbs[i].AckId = string(bytes.Repeat([]byte{'a'}, 160)) + pbs[i].AckId
	}
	msgs := received(b, pbs)
	bld := NewBuilder(mem)
	defer bld.Release()
	b.SetBytes(1024)
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		bld.Append(&msgs[n])
		if n++; n == batch {
			rec, acks := bld.NewBatch()
			rec.Release()
			acks.Release()
			n = 0
		}
	}
	rec, acks := bld.NewBatch()
	rec.Release()
	acks.Release()
}
