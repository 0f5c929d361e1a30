package rawbatch

import (
	"bytes"
	"fmt"
	"testing"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/pubsub-go/pubsub-go/go/internal/cmem"
)

// TestBinaryColumnValues: values of every size (empty, within the
// reserve, past it so the buffer moves), across batches, with nothing
// leaked (the checked allocator asserts 0 at the end).
func TestBinaryColumnValues(t *testing.T) {
	mem := checkedAlloc(t)
	c := binaryColumn{mem: mem}
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
		arr := c.finish().(*array.Binary)
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

func (a *countingUninit) AllocateUninitialized(size int) []byte {
	a.uninit++
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
