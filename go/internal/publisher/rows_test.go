package publisher

import (
	"maps"
	"strings"
	"testing"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/pubsub-go/pubsub-go/go/internal/rpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
)

// singleColumn builds a one-column record of type dt from values
// (nil = null) via the builder of that type.
// toMessages encodes rec's rows into a buffer of their own (encodeRows
// without a pool), for the tests of what the rows become.
func toMessages(rec arrow.RecordBatch, opt rowOptions, firstRow int64) ([]outMsg, error) {
	out, _, err := encodeRows(rec, opt, firstRow, nil, nil)
	return out, err
}

func singleColumn(t *testing.T, mem memory.Allocator, name string, dt arrow.DataType, values ...*string) arrow.RecordBatch {
	t.Helper()
	b := array.NewRecordBuilder(mem, arrow.NewSchema([]arrow.Field{{Name: name, Type: dt, Nullable: true}}, nil))
	defer b.Release()
	for _, v := range values {
		if v == nil {
			b.Field(0).AppendNull()
			continue
		}
		switch fb := b.Field(0).(type) {
		case *array.BinaryBuilder: // binary and large_binary
			fb.Append([]byte(*v))
		case *array.StringBuilder:
			fb.Append(*v)
		case *array.LargeStringBuilder:
			fb.Append(*v)
		default:
			t.Fatalf("no builder for %s", dt)
		}
	}
	return b.NewRecordBatch()
}

func ptr(s string) *string { return &s }

func TestPayloadTypes(t *testing.T) {
	for _, dt := range []arrow.DataType{
		arrow.BinaryTypes.Binary, arrow.BinaryTypes.LargeBinary,
		arrow.BinaryTypes.String, arrow.BinaryTypes.LargeString,
	} {
		t.Run(dt.String(), func(t *testing.T) {
			mem := checkedAlloc(t)
			rec := singleColumn(t, mem, "payload", dt, ptr("a"), ptr("bcd"), ptr("é"))
			defer rec.Release()
			msgs, err := toMessages(rec, rowOptions{}, 0)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range msgs {
				got = append(got, string(pbOf(t, m).Data))
			}
			if strings.Join(got, ",") != "a,bcd,é" {
				t.Errorf("payloads %q", got)
			}
		})
	}
}

func TestRowsAreCopied(t *testing.T) {
	mem := checkedAlloc(t)
	rec := record(t, mem, []row{
		{payload: "hello", attrs: map[string]string{"k": "v"}, key: "key1"},
		{payload: "world"},
	})
	msgs, err := toMessages(rec, rowOptions{ordering: true}, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Scribble over every buffer of the record, as a C producer may reuse
	// its memory once Publish returns.
	var scribble func(d arrow.ArrayData)
	scribble = func(d arrow.ArrayData) {
		for i, b := range d.Buffers() {
			if b != nil && i > 1 { // values, not validity/offsets
				for j := range b.Bytes() {
					b.Bytes()[j] = 'X'
				}
			}
		}
		for _, c := range d.Children() {
			scribble(c)
		}
	}
	for _, col := range rec.Columns() {
		scribble(col.Data())
	}
	rec.Release()
	m := pbOf(t, msgs[0])
	if string(m.Data) != "hello" || m.Attributes["k"] != "v" || m.OrderingKey != "key1" || string(pbOf(t, msgs[1]).Data) != "world" {
		t.Errorf("messages changed with the record's buffers: %v %v", m, pbOf(t, msgs[1]))
	}
}

func TestRowsSlicedRecord(t *testing.T) {
	mem := checkedAlloc(t)
	rec := record(t, mem, []row{
		{payload: "zero", attrs: map[string]string{"i": "0"}},
		{payload: "one", attrs: map[string]string{"i": "1"}},
		{payload: "two", attrs: map[string]string{"i": "2", "x": "y"}},
		{payload: "three"},
	})
	defer rec.Release()
	sl := rec.NewSlice(1, 3)
	defer sl.Release()
	msgs, err := toMessages(sl, rowOptions{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 || string(pbOf(t, msgs[0]).Data) != "one" || string(pbOf(t, msgs[1]).Data) != "two" {
		t.Fatalf("sliced payloads wrong: %v", msgs)
	}
	if !maps.Equal(pbOf(t, msgs[0]).Attributes, map[string]string{"i": "1"}) ||
		!maps.Equal(pbOf(t, msgs[1]).Attributes, map[string]string{"i": "2", "x": "y"}) {
		t.Errorf("sliced attributes wrong: %v / %v", pbOf(t, msgs[0]).Attributes, pbOf(t, msgs[1]).Attributes)
	}
}

func TestRowsSizes(t *testing.T) {
	mem := checkedAlloc(t)
	rec := record(t, mem, []row{{payload: "abc", attrs: map[string]string{"kk": "vvvv"}, key: "ord"}})
	defer rec.Release()
	msgs, err := toMessages(rec, rowOptions{ordering: true}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if msgs[0].size != 3+2+4+3 {
		t.Errorf("size %d, want 12", msgs[0].size)
	}
	// The entry is exactly what protobuf makes of the message as the one
	// element of a request's messages field.
	want, err := proto.Marshal(&pubsubpb.PublishRequest{Messages: []*pubsubpb.PubsubMessage{pbOf(t, msgs[0])}})
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs[0].entry) != len(want) {
		t.Errorf("entry is %d bytes, protobuf's %d", len(msgs[0].entry), len(want))
	}
}

func TestRowsNullsAndEmpty(t *testing.T) {
	mem := checkedAlloc(t)
	rec := record(t, mem, []row{{payload: "p"}}) // null attributes and ordering key
	defer rec.Release()
	msgs, err := toMessages(rec, rowOptions{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if pbOf(t, msgs[0]).Attributes != nil || pbOf(t, msgs[0]).OrderingKey != "" {
		t.Errorf("null cells should give no attributes and no key: %v", pbOf(t, msgs[0]))
	}
}

func TestIDStamping(t *testing.T) {
	mem := checkedAlloc(t)
	rec := record(t, mem, []row{{payload: "a"}, {payload: "b", attrs: map[string]string{"rid": "old", "x": "1"}}})
	defer rec.Release()
	opt := rowOptions{idAttribute: "rid", idPrefix: "job7"}
	first, err := toMessages(rec, opt, 40)
	if err != nil {
		t.Fatal(err)
	}
	again, err := toMessages(rec, opt, 40)
	if err != nil {
		t.Fatal(err)
	}
	want := []map[string]string{{"rid": "job7-40"}, {"rid": "job7-41", "x": "1"}}
	for i := range want {
		if !maps.Equal(pbOf(t, first[i]).Attributes, want[i]) {
			t.Errorf("row %d attributes %v, want %v", i, pbOf(t, first[i]).Attributes, want[i])
		}
		if !maps.Equal(pbOf(t, first[i]).Attributes, pbOf(t, again[i]).Attributes) {
			t.Errorf("row %d: ids differ between runs", i)
		}
	}
}

func TestRowsRejects(t *testing.T) {
	mem := memory.NewGoAllocator()
	big := strings.Repeat("x", maxMessageSize-1)

	for _, tc := range []struct {
		name string
		rec  func() arrow.RecordBatch
		opt  rowOptions
		want string
	}{
		{
			name: "unexpected column",
			rec: func() arrow.RecordBatch {
				s := arrow.NewSchema([]arrow.Field{{Name: "payload", Type: arrow.BinaryTypes.Binary}, {Name: "foo", Type: arrow.BinaryTypes.String}}, nil)
				b := array.NewRecordBuilder(mem, s)
				b.Field(0).(*array.BinaryBuilder).Append([]byte("x"))
				b.Field(1).(*array.StringBuilder).Append("y")
				return b.NewRecordBatch()
			},
			want: `unexpected column "foo"; accepted columns: payload (binary|string, required), attributes (map<string,string>), ordering_key (string)`,
		},
		{
			name: "missing payload",
			rec: func() arrow.RecordBatch {
				return singleColumn(t, mem, "ordering_key", arrow.BinaryTypes.String, ptr("k"))
			},
			want: `missing column "payload"; accepted columns`,
		},
		{
			name: "payload wrong type",
			rec: func() arrow.RecordBatch {
				s := arrow.NewSchema([]arrow.Field{{Name: "payload", Type: arrow.PrimitiveTypes.Int64}}, nil)
				b := array.NewRecordBuilder(mem, s)
				b.Field(0).(*array.Int64Builder).Append(1)
				return b.NewRecordBatch()
			},
			want: `column "payload" has type int64; accepted columns`,
		},
		{
			name: "attributes wrong value type",
			rec: func() arrow.RecordBatch {
				s := arrow.NewSchema([]arrow.Field{
					{Name: "payload", Type: arrow.BinaryTypes.Binary},
					{Name: "attributes", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int32)},
				}, nil)
				b := array.NewRecordBuilder(mem, s)
				b.Field(0).(*array.BinaryBuilder).Append([]byte("x"))
				b.Field(1).AppendNull()
				return b.NewRecordBatch()
			},
			want: `column "attributes" has type map<utf8, int32`,
		},
		{
			name: "ordering key binary",
			rec: func() arrow.RecordBatch {
				s := arrow.NewSchema([]arrow.Field{
					{Name: "payload", Type: arrow.BinaryTypes.Binary},
					{Name: "ordering_key", Type: arrow.BinaryTypes.Binary},
				}, nil)
				b := array.NewRecordBuilder(mem, s)
				b.Field(0).(*array.BinaryBuilder).Append([]byte("x"))
				b.Field(1).(*array.BinaryBuilder).Append([]byte("k"))
				return b.NewRecordBatch()
			},
			want: `column "ordering_key" has type binary`,
		},
		{
			name: "null payload",
			rec: func() arrow.RecordBatch {
				return singleColumn(t, mem, "payload", arrow.BinaryTypes.Binary, ptr("a"), ptr("b"), nil)
			},
			want: "row 2: payload is null",
		},
		{
			name: "empty message",
			rec: func() arrow.RecordBatch {
				return singleColumn(t, mem, "payload", arrow.BinaryTypes.Binary, ptr("a"), ptr(""))
			},
			want: "row 1: empty payload and no attributes",
		},
		{
			name: "oversize message",
			rec: func() arrow.RecordBatch {
				return record(t, mem, []row{{payload: "ok"}, {payload: big, attrs: map[string]string{"a": "b"}}})
			},
			want: "row 1: message is 10000001 bytes",
		},
		{
			name: "ordering key without ordering",
			rec:  func() arrow.RecordBatch { return record(t, mem, []row{{payload: "a"}, {payload: "b", key: "k"}}) },
			want: "row 1 has ordering_key \"k\" but message ordering is off: set enable_message_ordering=true",
		},
		{
			name: "long ordering key",
			rec:  func() arrow.RecordBatch { return record(t, mem, []row{{payload: "a", key: strings.Repeat("k", 1025)}}) },
			opt:  rowOptions{ordering: true},
			want: "row 0: ordering_key is 1025 bytes",
		},
		{
			name: "long attribute value",
			rec: func() arrow.RecordBatch {
				return record(t, mem, []row{{payload: "a", attrs: map[string]string{"k": strings.Repeat("v", 1025)}}})
			},
			want: `row 0: attribute "k" value is 1025 bytes`,
		},
		{
			name: "reserved attribute key",
			rec: func() arrow.RecordBatch {
				return record(t, mem, []row{{payload: "a", attrs: map[string]string{"googfoo": "v"}}})
			},
			want: `row 0: attribute key "googfoo"`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := tc.rec()
			defer rec.Release()
			msgs, err := toMessages(rec, tc.opt, 0)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
			if rpc.Code(err) != codes.InvalidArgument {
				t.Errorf("code %v, want InvalidArgument", rpc.Code(err))
			}
			if msgs != nil {
				t.Errorf("returned %d messages along with the error", len(msgs))
			}
		})
	}
}

func TestRowsNullAttributeValue(t *testing.T) {
	mem := checkedAlloc(t)
	b := array.NewRecordBuilder(mem, fullSchema)
	defer b.Release()
	b.Field(0).(*array.BinaryBuilder).Append([]byte("p"))
	mb := b.Field(1).(*array.MapBuilder)
	mb.Append(true)
	mb.KeyBuilder().(*array.StringBuilder).Append("k")
	mb.ItemBuilder().AppendNull()
	b.Field(2).AppendNull()
	rec := b.NewRecordBatch()
	defer rec.Release()
	_, err := toMessages(rec, rowOptions{}, 0)
	if err == nil || !strings.Contains(err.Error(), `row 0: attribute "k" is null`) {
		t.Fatalf("err = %v", err)
	}
}
