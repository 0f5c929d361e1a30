package main

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// selectRows keeps exactly the rows asked for, in order, in every column
// (a map column's entries included), and refuses rows out of range or order.
func TestSelectRowsKeepsTheRowsAskedFor(t *testing.T) {
	mem := memory.NewGoAllocator()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.BinaryTypes.String},
		{Name: "attributes", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.BinaryTypes.String)},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	ids := b.Field(0).(*array.StringBuilder)
	attrs := b.Field(1).(*array.MapBuilder)
	for i := 0; i < 6; i++ {
		ids.Append(string(rune('a' + i)))
		attrs.Append(true)
		attrs.KeyBuilder().(*array.StringBuilder).Append("uid")
		attrs.ItemBuilder().(*array.StringBuilder).Append(string(rune('0' + i)))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	for _, keep := range [][]int32{{0, 2, 3, 5}, {4}, {}, {0, 1, 2, 3, 4, 5}} {
		out, err := selectRows(rec, keep)
		if err != nil {
			t.Fatalf("selectRows(%v): %v", keep, err)
		}
		if out.NumRows() != int64(len(keep)) {
			t.Fatalf("selectRows(%v): %d rows", keep, out.NumRows())
		}
		m := out.Column(1).(*array.Map)
		items := m.Items().(*array.String)
		for i, k := range keep {
			if got := out.Column(0).(*array.String).Value(i); got != string(rune('a'+k)) {
				t.Errorf("selectRows(%v): row %d id %q", keep, i, got)
			}
			start, _ := m.ValueOffsets(i)
			if got := items.Value(int(start)); got != string(rune('0'+k)) {
				t.Errorf("selectRows(%v): row %d uid %q", keep, i, got)
			}
		}
		out.Release()
	}
	for _, bad := range [][]int32{{6}, {-1}, {2, 1}, {1, 1}} {
		if out, err := selectRows(rec, bad); err == nil {
			out.Release()
			t.Errorf("selectRows(%v): no error", bad)
		}
	}
}
