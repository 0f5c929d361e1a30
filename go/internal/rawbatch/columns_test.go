package rawbatch

import (
	"bytes"
	"fmt"
	"testing"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/pubsub-go/pubsub-go/go/internal/cmem"
)

// TestVarColumnValues: values of every size (empty, within the
// reserve, past it so the buffer moves), across batches, with nothing
// leaked (the checked allocator asserts 0 at the end).
func TestVarColumnValues(t *testing.T) {
	mem := checkedAlloc(t)
	c := varColumn{typ: arrow.BinaryTypes.Binary, mem: mem}
	defer c.release()
	for round, sizes := range [][]int{{0}, {3, 0, 5000, 1, 70_000}, {}, {10, 10, 10}} {
		if round == 3 {
			c.reserve(2, 8) // too small on both counts: must grow
		}
		var want [][]byte
		for i, n := range sizes {
			v := bytes.Repeat([]byte{byte('a' + i)}, n)
			want = append(want, v)
			c.append(v)
		}
		data := c.finish()
		arr := array.MakeFromData(data).(*array.Binary)
		data.Release()
		if arr.Len() != len(sizes) || arr.NullN() != 0 {
			t.Fatalf("round %d: len %d nulls %d", round, arr.Len(), arr.NullN())
		}
		if err := arr.ValidateFull(); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		for i, w := range want {
			if !bytes.Equal(arr.Value(i), w) {
				t.Errorf("round %d row %d: %d bytes, want %d", round, i, len(arr.Value(i)), len(w))
			}
		}
		arr.Release()
	}
}

// TestPayloadIsNotZeroedBeforeItIsWritten: with cmem, a steady stream of
// batches reuses the previous batch's value mapping as it was left (no
// clear), and never grows it; the values are still exactly the rows'.
func TestPayloadIsNotZeroedBeforeItIsWritten(t *testing.T) {
	mem := &countingUninit{Allocator: cmem.NewDefault()}
	b := NewBuilder(mem)
	defer b.Release()
	for round := range 4 {
		msgs := received(t, batchOf(round, 1000, 1024))
		mem.uninit = 0
		for i := range msgs {
			b.Append(&msgs[i])
		}
		rec, acks := b.NewBatch()
		payload := rec.Column(ColPayload).(*array.Binary)
		if payload.Len() != 1000 || !bytes.Equal(payload.Value(999), msgs[999].Data) {
			t.Fatalf("round %d: %d rows, last payload wrong", round, payload.Len())
		}
		if round > 0 && mem.uninit != 1 {
			t.Errorf("round %d: %d uninitialized value buffers, want 1 (reserved once, never grown)", round, mem.uninit)
		}
		rec.Release()
		acks.Release()
	}
}

type countingUninit struct {
	*cmem.Allocator
	uninit int
}

// AllocateUninitialized counts the payload's value buffers: at 1,000 rows
// of 1 KiB only they are this large.
func (a *countingUninit) AllocateUninitialized(size int) []byte {
	if size >= 512<<10 {
		a.uninit++
	}
	return a.Allocator.AllocateUninitialized(size)
}

var _ memory.Allocator = (*countingUninit)(nil)

func batchOf(round, n, size int) []*pubsubpb.ReceivedMessage {
	pbs := make([]*pubsubpb.ReceivedMessage, n)
	for i := range pbs {
		pbs[i] = message(round*n+i, size)
		pbs[i].Message.Data = []byte(fmt.Sprintf("%0*d", size, round*n+i))
	}
	return pbs
}

// TestColumnsNulls: a column's validity bitmap appears with its first
// null (rows before it valid), spans several bytes and grows, and a
// column with no null has none; across batches, nothing leaked.
func TestColumnsNulls(t *testing.T) {
	mem := checkedAlloc(t)
	s := varColumn{typ: arrow.BinaryTypes.String, mem: mem}
	n := fixedColumn[int32]{typ: arrow.PrimitiveTypes.Int32, mem: mem}
	defer s.release()
	defer n.release()
	for round, nullAt := range [][]int{{9, 10, 31, 200}, {}, {0}, {0, 1, 2, 3, 4, 5, 6, 7, 8}} {
		rows := 300
		if round == 3 {
			rows = 9 // all null
		}
		isNull := map[int]bool{}
		for _, i := range nullAt {
			isNull[i] = true
		}
		for i := range rows {
			if isNull[i] {
				s.appendNull()
				n.appendNull()
			} else {
				s.append([]byte(fmt.Sprint(i)))
				n.append(int32(i))
			}
		}
		sd, nd := s.finish(), n.finish()
		sa, na := array.MakeFromData(sd).(*array.String), array.MakeFromData(nd).(*array.Int32)
		sd.Release()
		nd.Release()
		if err := sa.ValidateFull(); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		for _, a := range []arrow.Array{sa, na} {
			if a.Len() != rows || a.NullN() != len(nullAt) {
				t.Fatalf("round %d: %d rows %d nulls, want %d and %d", round, a.Len(), a.NullN(), rows, len(nullAt))
			}
			if len(nullAt) == 0 && a.Data().Buffers()[0] != nil {
				t.Errorf("round %d: a validity bitmap without nulls", round)
			}
		}
		for i := range rows {
			if sa.IsNull(i) != isNull[i] || na.IsNull(i) != isNull[i] {
				t.Fatalf("round %d row %d: null %v/%v, want %v", round, i, sa.IsNull(i), na.IsNull(i), isNull[i])
			}
			if !isNull[i] && (sa.Value(i) != fmt.Sprint(i) || na.Value(i) != int32(i)) {
				t.Fatalf("round %d row %d: %q / %d", round, i, sa.Value(i), na.Value(i))
			}
			if isNull[i] && na.Value(i) != 0 {
				t.Fatalf("round %d row %d: a null's slot holds %d, not 0", round, i, na.Value(i))
			}
		}
		sa.Release()
		na.Release()
	}
}
