package decode

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/pubsub-go/pubsub-go/go/internal/decode/internal/guest"
)

// Batches handed out as they lie in a wasmtime instance's memory (pin.go).

// vpcBatch is n VPC flow lines whose text and numbers depend on seed.
func vpcBatch(seed, n int) *array.Binary {
	lines := make([]string, n)
	for i := range lines {
		lines[i] = fmt.Sprintf("2 acct%d-%d eni-%x 10.%d.0.%d 172.16.%d.1 %d 443 6 %d %d 1418530010 1418530070 ACCEPT OK",
			seed, i, seed*1000+i, seed%250, i%250, i%200, 1000+seed+i, seed*7+i, seed*11+i)
	}
	return binaryArray(lines...)
}

// text is every value of rec as text: a copy that later decodes cannot change.
func text(rec arrow.RecordBatch) string {
	var b strings.Builder
	for _, c := range rec.Columns() {
		fmt.Fprintln(&b, c)
	}
	return b.String()
}

// decodeVPC decodes batch seed of n rows with d, whose output allocator is
// alloc; copied says whether the batch took memory from alloc (a pinned
// batch takes none).
func decodeVPC(t *testing.T, d *Decoder, alloc *memory.CheckedAllocator, seed, n int) (rec arrow.RecordBatch, txt string, copied bool) {
	t.Helper()
	in := vpcBatch(seed, n)
	defer in.Release()
	before := alloc.CurrentAlloc()
	rec, errs, err := d.Decode(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	copied = alloc.CurrentAlloc() > before
	if errs.NullN() != errs.Len() {
		t.Fatalf("batch %d: rows failed: %v", seed, errs)
	}
	errs.Release()
	return rec, text(rec), copied
}

func newVPCDecoder(t *testing.T, spec DecoderConfig) (*Decoder, *memory.CheckedAllocator) {
	t.Helper()
	alloc := memory.NewCheckedAllocator(memory.DefaultAllocator)
	spec.Wasm = guestModule(t, "examples/vpcflow-c/vpcflow.c")
	d, err := NewDecoder(context.Background(), spec, alloc)
	if err != nil {
		t.Fatal(err)
	}
	return d, alloc
}

// TestPinnedBatchesOutliveLaterBatches holds batches decoded as they lie in
// guest memory while the same decoder decodes more, on one instance slot:
// what each held batch reads must not change, the pins stop at guest.MaxPinned
// (later batches are copies), and releasing the batches returns the pinned
// instances to the pool (or closes those it has no room for).
func TestPinnedBatchesOutliveLaterBatches(t *testing.T) {
	withWasmtime(t, func(t *testing.T) {
		d, alloc := newVPCDecoder(t, DecoderConfig{instances: 1})
		defer d.Close()
		type held struct {
			rec  arrow.RecordBatch
			text string
		}
		var kept []held
		for seed := 1; seed <= guest.MaxPinned+2; seed++ {
			rec, txt, copied := decodeVPC(t, d, alloc, seed, 500+seed)
			if want := seed > guest.MaxPinned; copied != want {
				t.Fatalf("batch %d: copied %v, want %v (%d pins taken before it)", seed, copied, want, min(seed-1, guest.MaxPinned))
			}
			kept = append(kept, held{rec, txt})
		}
		if pins, _, _ := d.guest.Counts(); pins != guest.MaxPinned {
			t.Fatalf("%d pins taken, want %d", pins, guest.MaxPinned)
		}
		for i, h := range kept {
			if got := text(h.rec); got != h.text {
				t.Fatalf("batch %d changed after later batches decoded:\n%.300s\nwant\n%.300s", i+1, got, h.text)
			}
		}
		for _, h := range kept {
			h.rec.Release()
		}
		if pins, idle, slots := d.guest.Counts(); pins != 0 || idle != 1 || slots != 1 {
			t.Fatalf("after release: %d pins, %d idle, %d slots; want 0, 1, 1", pins, idle, slots)
		}
		rec, _, copied := decodeVPC(t, d, alloc, 9, 10)
		rec.Release()
		if copied {
			t.Fatal("a batch after the release was copied: the pins did not come back")
		}
		alloc.AssertSize(t, 0)
	})
}

// TestPinnedBatchOutlivesClose reads a pinned batch after its decoder was
// closed and another decoder has run, and releases it from another
// goroutine, as Python's garbage collector may: the instance is closed
// then, not before.
func TestPinnedBatchOutlivesClose(t *testing.T) {
	withWasmtime(t, func(t *testing.T) {
		d, alloc := newVPCDecoder(t, DecoderConfig{})
		rec, want, copied := decodeVPC(t, d, alloc, 3, 700)
		if copied {
			t.Fatal("the batch was copied")
		}
		d.Close()
		d2, alloc2 := newVPCDecoder(t, DecoderConfig{})
		other, _, _ := decodeVPC(t, d2, alloc2, 4, 700)
		other.Release()
		d2.Close()
		if got := text(rec); got != want {
			t.Fatalf("batch changed after Close:\n%.300s\nwant\n%.300s", got, want)
		}
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { defer wg.Done(); rec.Release() }()
		wg.Wait()
		if pins, idle, slots := d.guest.Counts(); pins != 0 || idle != 0 || slots != 0 {
			t.Fatalf("after release: %d pins, %d idle, %d slots; want none", pins, idle, slots)
		}
	})
}

// TestWazeroBatchesAreCopies: wazero's memory is Go memory, which must not
// cross the C Data Interface, so its batches never alias it.
func TestWazeroBatchesAreCopies(t *testing.T) {
	d, alloc := newVPCDecoder(t, DecoderConfig{Engine: "wazero"})
	defer d.Close()
	rec, _, copied := decodeVPC(t, d, alloc, 1, 100)
	defer rec.Release()
	if pins, _, _ := d.guest.Counts(); !copied || pins != 0 {
		t.Fatalf("copied %v, %d pins: a wazero batch must be a copy", copied, pins)
	}
}
