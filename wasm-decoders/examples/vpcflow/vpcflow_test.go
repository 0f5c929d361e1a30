package main

import (
	"bytes"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/pubsub-go/pubsub-go/wasm-decoders/arrowlite"
	"github.com/pubsub-go/pubsub-go/wasm-decoders/sdk"
)

// decode runs the decoder natively through the SDK's ABI pipeline, the
// same code the .wasm runs.
func decode(t *testing.T, schema *arrowlite.Schema, lines ...string) arrow.RecordBatch {
	t.Helper()
	m := sdk.NewModule(newDecoder)
	var schemaIPC []byte
	if schema != nil {
		schemaIPC = arrowlite.EncodeSchema(schema)
	}
	if err := m.Init(sdk.EncodeConfig(schemaIPC, nil)); err != nil {
		t.Fatal(err)
	}
	payloads := make([][]byte, len(lines))
	for i, l := range lines {
		payloads[i] = []byte(l)
	}
	out, err := m.Decode(sdk.EncodeInput(payloads))
	if err != nil {
		t.Fatal(err)
	}
	r, err := ipc.NewReader(bytes.NewReader(out), ipc.WithAllocator(memory.NewGoAllocator()))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	if !r.Next() {
		t.Fatal(r.Err())
	}
	rec := r.RecordBatch()
	rec.Retain()
	return rec
}

func TestFlowLogLines(t *testing.T) {
	rec := decode(t, nil,
		"2 123456789010 eni-1235b8ca123456789 172.31.16.139 172.31.16.21 20641 22 6 20 4249 1418530010 1418530070 ACCEPT OK",
		"2 123456789010 eni-1235b8ca123456789 - - - - - - - 1431280876 1431280934 - NODATA",
		"garbage",
		"2 1 eni-1 1.1.1.1 2.2.2.2 x 22 6 1 1 1 2 REJECT OK",
	)
	defer rec.Release()
	if rec.NumCols() != int64(len(columns))+1 {
		t.Fatalf("%d columns", rec.NumCols())
	}
	col := func(name string) arrow.Array { return rec.Column(rec.Schema().FieldIndices(name)[0]) }
	if got := col("dstport").(*array.Int32).Value(0); got != 22 {
		t.Errorf("dstport = %d", got)
	}
	if got := col("bytes").(*array.Int64).Value(0); got != 4249 {
		t.Errorf("bytes = %d", got)
	}
	if got := col("start").(*array.Timestamp).Value(0); got != 1418530010*1e6 {
		t.Errorf("start = %d", got)
	}
	if got := col("action").(*array.String).Value(0); got != "ACCEPT" {
		t.Errorf("action = %q", got)
	}
	if !col("srcaddr").IsNull(1) || col("log_status").(*array.String).Value(1) != "NODATA" {
		t.Errorf("NODATA row: %v %v", col("srcaddr"), col("log_status"))
	}
	errs := col(sdk.ErrorColumn).(*array.String)
	if errs.IsValid(0) || errs.IsValid(1) {
		t.Errorf("unexpected errors: %v", errs)
	}
	if errs.Value(2) != "want 14 space-separated fields, got 1" {
		t.Errorf("row 2 error: %q", errs.Value(2))
	}
	if errs.Value(3) != `srcport: "x" is not a number` || !col("version").IsNull(3) {
		t.Errorf("row 3: %q", errs.Value(3))
	}
}

func TestProjection(t *testing.T) {
	want := &arrowlite.Schema{Fields: []arrowlite.Field{
		{Name: "action", Nullable: true, Type: arrowlite.Utf8Type()},
		{Name: "srcport", Nullable: true, Type: arrowlite.IntType(32, true)},
	}}
	rec := decode(t, want, "2 1 eni-1 1.1.1.1 2.2.2.2 443 22 6 1 1 1 2 REJECT OK")
	defer rec.Release()
	if rec.NumCols() != 3 || rec.Column(0).(*array.String).Value(0) != "REJECT" || rec.Column(1).(*array.Int32).Value(0) != 443 {
		t.Fatalf("projection: %v", rec)
	}
}

func TestRejectsUnknownColumn(t *testing.T) {
	m := sdk.NewModule(newDecoder)
	bad := &arrowlite.Schema{Fields: []arrowlite.Field{{Name: "nope", Type: arrowlite.Utf8Type()}}}
	if err := m.Init(sdk.EncodeConfig(arrowlite.EncodeSchema(bad), nil)); err == nil {
		t.Fatal("unknown column accepted")
	}
}
