package publisher

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/pubsub-go/pubsub-go/go/internal/rpc"
	"google.golang.org/grpc/codes"
)

// withEventTime builds payload + attributes + a timestamp column "ts" of
// unit u; a nil value is a null timestamp.
func withEventTime(t *testing.T, mem memory.Allocator, u arrow.TimeUnit, attrs map[string]string, ts ...*int64) arrow.RecordBatch {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "payload", Type: arrow.BinaryTypes.Binary},
		{Name: "attributes", Type: mapType, Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: u, TimeZone: "UTC"}, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for _, v := range ts {
		b.Field(0).(*array.BinaryBuilder).Append([]byte("p"))
		ab := b.Field(1).(*array.MapBuilder)
		ab.Append(true)
		for k, v := range attrs {
			ab.KeyBuilder().(*array.StringBuilder).Append(k)
			ab.ItemBuilder().(*array.StringBuilder).Append(v)
		}
		if v == nil {
			b.Field(2).AppendNull()
		} else {
			b.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(*v))
		}
	}
	return b.NewRecordBatch()
}

func i64(v int64) *int64 { return &v }

// The row's timestamp becomes epoch millis in decimal (Beam's form),
// rounded down, replacing a same-named attribute, from any unit.
func TestTimestampAttribute(t *testing.T) {
	opt := rowOptions{tsAttribute: "ts_ms", tsColumn: "ts"}
	for _, tc := range []struct {
		unit arrow.TimeUnit
		in   []*int64
		want []string
	}{
		{arrow.Microsecond, []*int64{i64(1_700_000_000_123_456), i64(-1)}, []string{"1700000000123", "-1"}},
		{arrow.Millisecond, []*int64{i64(1_700_000_000_123)}, []string{"1700000000123"}},
		{arrow.Nanosecond, []*int64{i64(1_700_000_000_123_999_999)}, []string{"1700000000123"}},
		{arrow.Second, []*int64{i64(1_700_000_000)}, []string{"1700000000000"}},
	} {
		t.Run(tc.unit.String(), func(t *testing.T) {
			mem := checkedAlloc(t)
			rec := withEventTime(t, mem, tc.unit, map[string]string{"ts_ms": "stale", "k": "v"}, tc.in...)
			defer rec.Release()
			msgs, err := toMessages(rec, opt, 0)
			if err != nil {
				t.Fatal(err)
			}
			for i, m := range msgs {
				a := pbOf(t, m).Attributes
				if a["ts_ms"] != tc.want[i] || a["k"] != "v" || len(a) != 2 {
					t.Errorf("row %d attributes %v, want ts_ms=%s and k=v", i, a, tc.want[i])
				}
			}
		})
	}
}

func TestTimestampAttributeRejects(t *testing.T) {
	mem := checkedAlloc(t)
	opt := rowOptions{tsAttribute: "ts_ms", tsColumn: "ts"}
	rec := withEventTime(t, mem, arrow.Microsecond, nil, i64(1), nil)
	defer rec.Release()
	if _, err := toMessages(rec, opt, 0); rpc.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "row 1: ts is null") {
		t.Errorf("null timestamp: err %v, want INVALID_ARGUMENT naming row 1", err)
	}
	// Without the option the column is not a message column.
	if _, err := toMessages(rec, rowOptions{}, 0); err == nil || !strings.Contains(err.Error(), `unexpected column "ts"`) {
		t.Errorf("no timestamp_attribute: err %v, want unexpected column", err)
	}
	plain := payloads(t, mem, "x")
	defer plain.Release()
	if _, err := toMessages(plain, opt, 0); err == nil || !strings.Contains(err.Error(), `missing column "ts"`) {
		t.Errorf("missing column: err %v", err)
	}
	wrong := singleColumn(t, mem, "payload", arrow.BinaryTypes.Binary, ptr("x"))
	defer wrong.Release()
	if _, err := toMessages(wrong, rowOptions{tsAttribute: "a", tsColumn: "payload"}, 0); err == nil {
		t.Error("timestamp column named payload accepted")
	}
	cfg := testConfig("localhost:1")
	cfg.TimestampAttribute = "ts_ms"
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "go together") {
		t.Errorf("attribute without column: err %v", err)
	}
}
