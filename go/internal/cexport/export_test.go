package cexport_test

import (
	"strings"
	"testing"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/cdata"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/memory/mallocator"

	"github.com/pubsub-go/pubsub-go/go/internal/cexport"
	"github.com/pubsub-go/pubsub-go/go/internal/cexport/cexporttest"
)

// batch is a record of every shape the library exports: nulls, an empty
// string buffer, a struct over a list, a null column, booleans.
func batch(t *testing.T, mem memory.Allocator) arrow.RecordBatch {
	t.Helper()
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "i", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "empty", Type: arrow.BinaryTypes.String},
		{Name: "s", Type: arrow.StructOf(
			arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
			arrow.Field{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true}), Nullable: true},
		{Name: "n", Type: arrow.Null, Nullable: true},
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean},
	}, nil)
	rec, _, err := array.RecordFromJSON(mem, sc, strings.NewReader(`[
		{"i": 1, "empty": "", "s": {"a": 7, "tags": ["x", "yz"]}, "n": null, "b": true},
		{"i": null, "empty": "", "s": null, "n": null, "b": false},
		{"i": 3, "empty": "", "s": {"a": null, "tags": null}, "n": null, "b": true}]`))
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// TestRecordBatchRoundTrips: what arrow-go's importer reads back equals
// the batch, and the batch's memory is freed when the importer releases
// the export, not before.
func TestRecordBatchRoundTrips(t *testing.T) {
	mem := memory.NewCheckedAllocator(mallocator.NewMallocator())
	rec := batch(t, mem)
	out := cexporttest.New()
	defer cexporttest.Free(out)
	cexport.RecordBatch(rec, out)
	rec.Release() // the export holds its own reference
	if mem.CurrentAlloc() == 0 {
		t.Fatal("the batch's memory was freed while exported")
	}
	back, err := cdata.ImportCRecordBatchWithSchema(cdata.ArrayFromPtr(uintptr(out)), batch(t, memory.DefaultAllocator).Schema())
	if err != nil {
		t.Fatal(err)
	}
	want := batch(t, memory.DefaultAllocator)
	defer want.Release()
	if !array.RecordEqual(back, want) {
		t.Fatalf("imported\n%v\nwant\n%v", back, want)
	}
	back.Release()
	mem.AssertSize(t, 0)
}

// TestMovedChildrenAreReleasedByTheirOwner: a consumer may move columns
// out of the batch and release them, and the batch, in any order; the
// memory is freed at the last release.
func TestMovedChildrenAreReleasedByTheirOwner(t *testing.T) {
	for _, order := range [][]int{{0, 1, 2}, {2, 1, 0}, {1, 0, 2}} {
		mem := memory.NewCheckedAllocator(mallocator.NewMallocator())
		rec := batch(t, mem)
		root := cexporttest.New()
		cexport.RecordBatch(rec, root)
		rec.Release()
		arrays := []unsafe.Pointer{root, cexporttest.MoveChild(root, 2), cexporttest.MoveChild(root, 0)}
		for n, i := range order {
			if mem.CurrentAlloc() == 0 {
				t.Fatalf("order %v: freed after %d of 3 releases", order, n)
			}
			cexporttest.Release(arrays[i])
			if !cexporttest.Released(arrays[i]) {
				t.Fatalf("order %v: array %d not marked released", order, i)
			}
		}
		mem.AssertSize(t, 0)
		for _, a := range arrays {
			cexporttest.Free(a)
		}
	}
}

// TestArrayRoundTrips: one array (the ack ids' shape) exported alone.
func TestArrayRoundTrips(t *testing.T) {
	mem := memory.NewCheckedAllocator(mallocator.NewMallocator())
	b := array.NewStringBuilder(mem)
	b.AppendValues([]string{"a", "", "bc"}, []bool{true, false, true})
	a := b.NewArray()
	b.Release()
	out := cexporttest.New()
	defer cexporttest.Free(out)
	cexport.Array(a, out)
	back, err := cdata.ImportCArrayWithType(cdata.ArrayFromPtr(uintptr(out)), arrow.BinaryTypes.String)
	if err != nil {
		t.Fatal(err)
	}
	if !array.Equal(back, a) {
		t.Fatalf("imported %v, want %v", back, a)
	}
	a.Release()
	back.Release()
	mem.AssertSize(t, 0)
}
