package publisher

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unsafe"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/apache/arrow-go/v18/arrow/memory"
	grpcmem "google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// pbOf decodes an entry with Google's protobuf: it must be exactly one
// element of PublishRequest.messages.
func pbOf(t testing.TB, m outMsg) *pubsubpb.PubsubMessage {
	t.Helper()
	var req pubsubpb.PublishRequest
	if err := proto.Unmarshal(m.entry, &req); err != nil {
		t.Fatalf("entry does not parse as a PublishRequest: %v", err)
	}
	if len(req.Messages) != 1 || req.Topic != "" || len(req.ProtoReflect().GetUnknown()) != 0 {
		t.Fatalf("entry is not one messages element: %v", &req)
	}
	return req.Messages[0]
}

// entryOf encodes m as one element of PublishRequest.messages, with
// Google's protobuf.
func entryOf(m *pubsubpb.PubsubMessage) []byte {
	b, err := proto.Marshal(m)
	if err != nil {
		panic(err)
	}
	e := protowire.AppendTag(nil, fieldRequestMessages, protowire.BytesType)
	return protowire.AppendBytes(e, b)
}

// randomRows are rows with every field shape the encoder handles: empty
// payloads with attributes, empty attribute values, long lengths (two-byte
// varints), ordering keys.
func randomRows(r *rand.Rand, n int) []row {
	rows := make([]row, n)
	for i := range rows {
		rows[i].payload = strings.Repeat(string(rune('a'+i%26)), r.IntN(3)*r.IntN(300))
		if r.IntN(3) > 0 || rows[i].payload == "" {
			rows[i].attrs = map[string]string{}
			for j := range 1 + r.IntN(4) {
				rows[i].attrs[fmt.Sprint("k", j)] = strings.Repeat("v", r.IntN(200))
			}
		}
		if r.IntN(2) == 0 {
			rows[i].key = fmt.Sprint("key", r.IntN(3))
		}
	}
	return rows
}

func TestEntriesDecodeToTheRows(t *testing.T) {
	mem := checkedAlloc(t)
	rows := randomRows(rand.New(rand.NewPCG(3, 4)), 500)
	rec := record(t, mem, rows)
	defer rec.Release()
	msgs, err := toMessages(rec, rowOptions{ordering: true, idAttribute: "rid", idPrefix: "w"}, 7)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rows {
		want := &pubsubpb.PubsubMessage{Data: []byte(r.payload), OrderingKey: r.key,
			Attributes: map[string]string{"rid": fmt.Sprint("w-", 7+i)}}
		size := len(r.payload) + len(r.key) + len("rid") + len(want.Attributes["rid"])
		for k, v := range r.attrs {
			want.Attributes[k] = v
			size += len(k) + len(v)
		}
		got := pbOf(t, msgs[i])
		if !proto.Equal(got, want) {
			t.Fatalf("row %d: entry decodes to %v, want %v", i, got, want)
		}
		if msgs[i].key != r.key || msgs[i].size != int64(size) {
			t.Fatalf("row %d: key %q size %d, want %q %d", i, msgs[i].key, msgs[i].size, r.key, size)
		}
	}
}

func TestEntriesFillOneBuffer(t *testing.T) {
	// encodedBound must be a true bound: a regrown buffer would copy every
	// payload again and leave the entries in two arrays.
	mem := checkedAlloc(t)
	rows := randomRows(rand.New(rand.NewPCG(5, 6)), 300)
	rec := record(t, mem, rows)
	defer rec.Release()
	msgs, err := toMessages(rec, rowOptions{ordering: true, idAttribute: "rid", idPrefix: strings.Repeat("p", 40)}, 1<<40)
	if err != nil {
		t.Fatal(err)
	}
	entries := make([][]byte, len(msgs))
	for i, m := range msgs {
		entries[i] = m.entry
	}
	joined := joinEntries(entries, msgs[0].chunk.buf)
	if unsafe.SliceData(joined) != unsafe.SliceData(entries[0]) {
		t.Fatal("the entries of one call are not back to back in one buffer")
	}
}

func TestDuplicateAttributeKeyKeepsTheLastValue(t *testing.T) {
	e := rowEncoder{}
	e.reset([]byte("p"))
	e.set("a", "1")
	e.set("b", "2")
	e.set("a", "3")
	m := pbOf(t, outMsg{entry: e.appendEntry(nil)})
	if len(m.Attributes) != 2 || m.Attributes["a"] != "3" || m.Attributes["b"] != "2" || e.size() != 1+2+2 {
		t.Errorf("attributes %v size %d, want a=3 b=2 and 5", m.Attributes, e.size())
	}
}

func TestJoinEntries(t *testing.T) {
	buf := []byte("aaabbcccc")
	entries := [][]byte{buf[0:3], buf[3:5], buf[5:9]}
	if got := joinEntries(entries, buf); string(got) != "aaabbcccc" || unsafe.SliceData(got) != unsafe.SliceData(buf) {
		t.Errorf("contiguous entries: %q, copied: %v", got, unsafe.SliceData(got) != unsafe.SliceData(buf))
	}
	other := []byte("xy")
	got := joinEntries([][]byte{buf[0:3], other, buf[5:9]}, buf)
	if string(got) != "aaaxycccc" {
		t.Errorf("scattered entries joined to %q", got)
	}
	got[0] = 'Z'
	if buf[0] != 'a' {
		t.Error("joining scattered entries wrote into an entry's buffer")
	}
	if got := joinEntries(entries[1:], nil); string(got) != "bbcccc" || unsafe.SliceData(got) == unsafe.SliceData(buf[3:]) {
		t.Errorf("entries with no buffer named: %q, not copied: %v", got, unsafe.SliceData(got) == unsafe.SliceData(buf[3:]))
	}
	if got := joinEntries(entries, buf[:5]); string(got) != "aaabbcccc" || unsafe.SliceData(got) == unsafe.SliceData(buf) {
		t.Errorf("entries running past the buffer named: %q, not copied: %v", got, unsafe.SliceData(got) == unsafe.SliceData(buf))
	}
	if joinEntries(nil, buf) != nil {
		t.Error("no entries should join to nil")
	}
}

func TestRequestIsTopicAndEntries(t *testing.T) {
	mem := memory.NewGoAllocator()
	rows := randomRows(rand.New(rand.NewPCG(7, 8)), 50)
	rec := record(t, mem, rows)
	defer rec.Release()
	msgs, err := toMessages(rec, rowOptions{ordering: true}, 0)
	if err != nil {
		t.Fatal(err)
	}
	b := &bundle{}
	want := &pubsubpb.PublishRequest{Topic: testTopic}
	for i, m := range msgs {
		if i%7 == 3 {
			continue // a gap: the entries are no longer back to back
		}
		b.msgs = append(b.msgs, m.entry)
		want.Messages = append(want.Messages, pbOf(t, m))
	}
	wire, err := proto.Marshal(b.request(testTopic))
	if err != nil {
		t.Fatal(err)
	}
	var got pubsubpb.PublishRequest
	if err := proto.Unmarshal(wire, &got); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(&got, want) {
		t.Errorf("request decodes to %d messages for %q, want %d for %q", len(got.Messages), got.Topic, len(want.Messages), want.Topic)
	}
}

func TestPublishCodecSendsEntriesWhereTheyLie(t *testing.T) {
	mem := checkedAlloc(t)
	rec := record(t, mem, randomRows(rand.New(rand.NewPCG(9, 10)), 40))
	defer rec.Release()
	msgs, err := toMessages(rec, rowOptions{ordering: true}, 0)
	if err != nil {
		t.Fatal(err)
	}
	b := &bundle{chunks: []*chunk{msgs[0].chunk}}
	for _, m := range msgs {
		b.msgs = append(b.msgs, m.entry)
	}
	req := b.request(testTopic)
	want, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	bufs, err := publishCodec{}.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	if got := bufs.Materialize(); string(got) != string(want) {
		t.Fatalf("codec wrote %d bytes, protobuf %d: they differ", len(got), len(want))
	}
	if len(bufs) != 2 || unsafe.SliceData(bufs[1].ReadOnlyData()) != unsafe.SliceData(msgs[0].entry) {
		t.Error("the entries were copied on their way to gRPC")
	}
	// Any other message is plain protobuf.
	plain := &pubsubpb.PublishRequest{Topic: testTopic, Messages: []*pubsubpb.PubsubMessage{{Data: []byte("x")}}}
	bufs, err = publishCodec{}.Marshal(plain)
	if err != nil {
		t.Fatal(err)
	}
	if w, _ := proto.Marshal(plain); string(bufs.Materialize()) != string(w) {
		t.Error("a request with messages was not marshalled as protobuf")
	}
}

// BenchmarkToRequest1KB is the CPU of a row from the record to the
// buffers gRPC sends: 1000 rows of 1 KB, encoded, put in a request and
// marshalled by publishCodec.
func BenchmarkToRequest1KB(b *testing.B) {
	rec := payloads1KB(b)
	defer rec.Release()
	b.SetBytes(1000 * 1024)
	for b.Loop() {
		out, err := toMessages(rec, rowOptions{}, 0)
		if err != nil {
			b.Fatal(err)
		}
		bu := &bundle{}
		for _, m := range out {
			bu.msgs = append(bu.msgs, m.entry)
		}
		if _, err := (publishCodec{}).Marshal(bu.request(testTopic)); err != nil {
			b.Fatal(err)
		}
	}
}

func TestPublishCodecLeavesResponsesUndecoded(t *testing.T) {
	wire, err := proto.Marshal(&pubsubpb.PublishResponse{MessageIds: []string{"1", "2"}})
	if err != nil {
		t.Fatal(err)
	}
	var resp pubsubpb.PublishResponse
	if err := (publishCodec{}).Unmarshal(grpcmem.BufferSlice{grpcmem.SliceBuffer(wire)}, &resp); err != nil || len(resp.MessageIds) != 0 {
		t.Errorf("a PublishResponse decoded to %v, %v; want nothing decoded", resp.MessageIds, err)
	}
	wire, err = proto.Marshal(&pubsubpb.Topic{Name: testTopic})
	if err != nil {
		t.Fatal(err)
	}
	var topic pubsubpb.Topic
	if err := (publishCodec{}).Unmarshal(grpcmem.BufferSlice{grpcmem.SliceBuffer(wire)}, &topic); err != nil || topic.Name != testTopic {
		t.Errorf("a Topic decoded to %q, %v; want %q", topic.Name, err, testTopic)
	}
}
