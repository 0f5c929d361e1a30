package main

/*
#include "pubsubgo.h"
*/
import "C"

import (
	"context"
	"strconv"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/cdata"
	"google.golang.org/grpc/codes"

	"github.com/pubsub-go/pubsub-go/go/internal/cexport"
	"github.com/pubsub-go/pubsub-go/go/internal/decode"
	"github.com/pubsub-go/pubsub-go/go/internal/rpc"
)

// The decoder API: the same decoders schema mode runs (built-ins natively,
// user modules in the wazero sandbox), on any batch of payloads. Python's
// pubsub_go.decode and the Spark driver's schema checks use it.

type openDecoder struct {
	cfg decode.DecoderConfig
	dec *decode.Decoder
	out *arrow.Schema // the batches': the decoder's columns, then DecodeErrorColumn
}

var decoders = table[*openDecoder]{what: "decoder"}

//export pg_decoder_open
func pg_decoder_open(config *C.char, handleOut *C.uint64_t, errOut *C.struct_PgError) C.int {
	return guard(errOut, func() error {
		d := &openDecoder{}
		if err := decodeConfig("decoder", config, &d.cfg); err != nil {
			return err
		}
		dec, err := d.cfg.Open(context.Background(), alloc, 0)
		if err != nil {
			return err
		}
		d.dec = dec
		sc := dec.Schema()
		md := sc.Metadata()
		d.out = arrow.NewSchema(append(sc.Fields(),
			arrow.Field{Name: decode.DecodeErrorColumn, Type: arrow.BinaryTypes.String, Nullable: true}), &md)
		*handleOut = C.uint64_t(decoders.Put(d))
		return nil
	})
}

//export pg_decoder_schema
func pg_decoder_schema(h C.uint64_t, outSchema *C.struct_ArrowSchema, errOut *C.struct_PgError) C.int {
	return guard(errOut, func() error {
		d, err := decoders.get(h)
		if err != nil {
			return err
		}
		if outSchema == nil {
			return rpc.Errorf(codes.InvalidArgument, "pg_decoder_schema: the output ArrowSchema pointer must not be NULL")
		}
		cdata.ExportArrowSchema(d.dec.Schema(), cschema(outSchema))
		return nil
	})
}

//export pg_decoder_decode
func pg_decoder_decode(h C.uint64_t, payloads *C.struct_ArrowArray, payloadsSchema *C.struct_ArrowSchema,
	outBatch *C.struct_ArrowArray, outSchema *C.struct_ArrowSchema, errOut *C.struct_PgError) C.int {
	return guard(errOut, func() error {
		d, err := decoders.get(h)
		if err != nil {
			if payloads != nil && payloads.release != nil {
				cdata.ReleaseCArrowArray(carray(payloads))
			}
			return err
		}
		if payloads == nil || payloadsSchema == nil || outBatch == nil {
			return rpc.Errorf(codes.InvalidArgument, "pg_decoder_decode: the payloads' ArrowArray/ArrowSchema and the output ArrowArray pointers must not be NULL")
		}
		in, err := importPayloads(payloads, payloadsSchema)
		if err != nil {
			return err
		}
		defer in.Release()
		rec, errs, err := d.dec.Decode(context.Background(), in)
		if err != nil {
			return d.cfg.Status(err, "decoding a batch of "+strconv.Itoa(in.Len())+" payloads")
		}
		defer rec.Release()
		defer errs.Release()
		cols := rec.Columns()
		out := array.NewRecordBatch(d.out, append(cols[:len(cols):len(cols)], errs), rec.NumRows())
		defer out.Release()
		// outSchema NULL: the caller kept the schema of an earlier batch
		// (the same for every batch of a decoder), and the export skips it:
		// exporting a schema and importing it on the other side is a good
		// part of a call on a small batch.
		if outSchema != nil {
			cdata.ExportArrowSchema(out.Schema(), cschema(outSchema))
		}
		cexport.RecordBatch(out, unsafe.Pointer(outBatch))
		return nil
	})
}

//export pg_decoder_close
func pg_decoder_close(h C.uint64_t, errOut *C.struct_PgError) C.int {
	return guard(errOut, func() error {
		return closeHandle(&decoders, h, func(v *openDecoder) error { return v.dec.Close() })
	})
}

// importPayloads moves a C array of binary, large_binary, utf8 or
// large_utf8 payloads into a binary array (viewing the C buffers where the
// layout allows: the decoder copies what it keeps).
func importPayloads(arr *C.struct_ArrowArray, schema *C.struct_ArrowSchema) (*array.Binary, error) {
	_, a, err := cdata.ImportCArray(carray(arr), cschema(schema))
	if err != nil {
		return nil, rpc.Errorf(codes.InvalidArgument, "payloads: %v", err)
	}
	defer a.Release()
	switch a.DataType().ID() {
	case arrow.BINARY, arrow.STRING:
		d := a.Data()
		view := array.NewData(arrow.BinaryTypes.Binary, d.Len(), d.Buffers(), nil, d.NullN(), d.Offset())
		defer view.Release()
		return array.NewBinaryData(view), nil
	case arrow.LARGE_BINARY, arrow.LARGE_STRING:
		b := array.NewBinaryBuilder(alloc, arrow.BinaryTypes.Binary)
		defer b.Release()
		for i := 0; i < a.Len(); i++ {
			switch v := a.(type) {
			case *array.LargeBinary:
				if v.IsNull(i) {
					b.AppendNull()
				} else {
					b.Append(v.Value(i))
				}
			case *array.LargeString:
				if v.IsNull(i) {
					b.AppendNull()
				} else {
					b.AppendString(v.Value(i))
				}
			}
		}
		return b.NewBinaryArray(), nil
	}
	return nil, rpc.Errorf(codes.InvalidArgument, "payloads must be a binary, large_binary, string or large_string array, got %s", a.DataType())
}
