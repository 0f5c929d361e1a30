package main

// The JVM sink's calls into the publisher. Spark hands a DSv2 writer rows,
// not Arrow, so the JVM lays each column out as Arrow buffers in its own
// off-heap memory (jvm/.../sink/ColumnBuffers.java) and passes their
// addresses here; this wraps them as Arrow arrays without a copy for the
// publisher, which copies each row into protobuf wire form and keeps
// nothing of the input (publisher.Publish).

/*
#include "pubsubgo.h"
*/
import "C"

import (
	"context"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"

	"github.com/pubsub-go/pubsub-go/go/internal/rpc"
)

//export Java_io_pubsubgo_spark_bridge_Native_publisherOpen
func Java_io_pubsubgo_spark_bridge_Native_publisherOpen(env, cls unsafe.Pointer, config, handleOut, errAddr C.int64_t) C.int {
	return pg_publisher_open((*C.char)(ptr(config)), (*C.uint64_t)(ptr(handleOut)), errp(errAddr))
}

//export Java_io_pubsubgo_spark_bridge_Native_publisherStartIds
func Java_io_pubsubgo_spark_bridge_Native_publisherStartIds(env, cls unsafe.Pointer, h, prefix, errAddr C.int64_t) C.int {
	return pg_publisher_start_ids(C.uint64_t(h), (*C.char)(ptr(prefix)), errp(errAddr))
}

//export Java_io_pubsubgo_spark_bridge_Native_publisherFlush
func Java_io_pubsubgo_spark_bridge_Native_publisherFlush(env, cls unsafe.Pointer, h, timeoutMs, jsonOut, errAddr C.int64_t) C.int {
	return pg_publisher_flush(C.uint64_t(h), timeoutMs, (**C.char)(ptr(jsonOut)), errp(errAddr))
}

//export Java_io_pubsubgo_spark_bridge_Native_publisherClose
func Java_io_pubsubgo_spark_bridge_Native_publisherClose(env, cls unsafe.Pointer, h, errAddr C.int64_t) C.int {
	return pg_publisher_close(C.uint64_t(h), errp(errAddr))
}

// The slots of the column descriptor publisherPublishColumns reads: int64s,
// addresses of Arrow buffers (0: no such buffer, or no such column). Offsets
// are int32, validity bitmaps LSB-first, as Arrow lays them out.
const (
	descRows = iota
	descPayloadOffsets
	descPayloadData
	descPayloadIsString // 1: utf8, 0: binary
	descKeyValidity     // ordering_key
	descKeyOffsets
	descKeyData
	descAttrValidity // attributes: map<utf8, utf8>
	descAttrOffsets
	descAttrKeyOffsets
	descAttrKeyData
	descAttrValValidity
	descAttrValOffsets
	descAttrValData
	descTimeValidity // the timestamp column (timestamp[us, UTC])
	descTimeValues
	descTimeName // NUL-terminated column name
	descPayloadValidity
	// schemaFrom=topic: the record's columns (the input's but the
	// message's own), encoded into the payload by the publisher's encoder.
	descFieldsSchema // NUL-terminated Spark StructType JSON of those columns (0: none)
	descFieldsNodes  // int64s, 4 per Arrow node in preorder: length, validity, buffer 1, buffer 2
	descSlots
)

// Java_io_pubsubgo_spark_bridge_Native_publisherPublishColumns publishes
// the rows laid out at the descriptor desc (descSlots int64s).
//
//export Java_io_pubsubgo_spark_bridge_Native_publisherPublishColumns
func Java_io_pubsubgo_spark_bridge_Native_publisherPublishColumns(env, cls unsafe.Pointer, h, desc, errAddr C.int64_t) C.int {
	return guard(errp(errAddr), func() error {
		p, err := publishers.get(C.uint64_t(h))
		if err != nil {
			return err
		}
		if desc == 0 {
			return rpc.Errorf(codes.InvalidArgument, "publishColumns: the descriptor must not be NULL")
		}
		d := unsafe.Slice((*int64)(ptr(desc)), descSlots)
		rec, err := columnsRecord(d)
		if err != nil {
			return err
		}
		defer rec.Release()
		return p.Publish(context.Background(), rec)
	})
}

// cbuf wraps n bytes of C memory at addr (nil for addr 0) without a copy.
func cbuf(addr int64, n int) *memory.Buffer {
	if addr == 0 {
		return nil
	}
	return memory.NewBufferBytes(unsafe.Slice((*byte)(ptr(C.int64_t(addr))), n))
}

func offsetsEnd(addr int64, rows int) int {
	return int(*(*int32)(unsafe.Add(ptr(C.int64_t(addr)), 4*rows)))
}

func bitmapLen(rows int) int { return (rows + 7) / 8 }

func varData(dt arrow.DataType, rows int, validity, offsets, data int64) arrow.ArrayData {
	end := offsetsEnd(offsets, rows)
	return array.NewData(dt, rows, []*memory.Buffer{cbuf(validity, bitmapLen(rows)), cbuf(offsets, 4*(rows+1)),
		cbuf(data, end)}, nil, nulls(validity), 0)
}

// nulls is the null count to give arrow-go: unknown (it counts) when there
// is a validity bitmap, else none (it would count a missing bitmap as all null).
func nulls(validity int64) int {
	if validity == 0 {
		return 0
	}
	return array.UnknownNullCount
}

func columnsRecord(d []int64) (arrow.RecordBatch, error) {
	rows := int(d[descRows])
	var fields []arrow.Field
	var cols []arrow.Array
	add := func(name string, a arrow.ArrayData) {
		fields = append(fields, arrow.Field{Name: name, Type: a.DataType(), Nullable: true})
		cols = append(cols, array.MakeFromData(a))
		a.Release()
	}
	var payloadType arrow.DataType = arrow.BinaryTypes.Binary
	if d[descPayloadIsString] != 0 {
		payloadType = arrow.BinaryTypes.String
	}
	if d[descPayloadOffsets] != 0 { // schemaFrom=topic: none, the encoder makes it
		add("payload", varData(payloadType, rows, d[descPayloadValidity], d[descPayloadOffsets], d[descPayloadData]))
	}
	if d[descKeyOffsets] != 0 {
		add("ordering_key", varData(arrow.BinaryTypes.String, rows, d[descKeyValidity], d[descKeyOffsets], d[descKeyData]))
	}
	if d[descAttrOffsets] != 0 {
		entries := offsetsEnd(d[descAttrOffsets], rows)
		keys := varData(arrow.BinaryTypes.String, entries, 0, d[descAttrKeyOffsets], d[descAttrKeyData])
		vals := varData(arrow.BinaryTypes.String, entries, d[descAttrValValidity], d[descAttrValOffsets], d[descAttrValData])
		mt := arrow.MapOf(arrow.BinaryTypes.String, arrow.BinaryTypes.String)
		st := mt.Elem().(*arrow.StructType)
		kv := array.NewData(st, entries, []*memory.Buffer{nil}, []arrow.ArrayData{keys, vals}, 0, 0)
		keys.Release()
		vals.Release()
		m := array.NewData(mt, rows, []*memory.Buffer{cbuf(d[descAttrValidity], bitmapLen(rows)),
			cbuf(d[descAttrOffsets], 4*(rows+1))}, []arrow.ArrayData{kv}, nulls(d[descAttrValidity]), 0)
		kv.Release()
		add("attributes", m)
	}
	if d[descTimeValues] != 0 {
		name := C.GoString((*C.char)(ptr(C.int64_t(d[descTimeName]))))
		ts := &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
		add(name, array.NewData(ts, rows, []*memory.Buffer{cbuf(d[descTimeValidity], bitmapLen(rows)),
			cbuf(d[descTimeValues], 8*rows)}, nil, nulls(d[descTimeValidity]), 0))
	}
	if d[descFieldsSchema] != 0 {
		s, err := sparkToArrowSchema([]byte(C.GoString((*C.char)(ptr(C.int64_t(d[descFieldsSchema]))))))
		if err != nil {
			return nil, rpc.Errorf(codes.InvalidArgument, "publishColumns: %v", err)
		}
		nodes, at := unsafe.Pointer(ptr(C.int64_t(d[descFieldsNodes]))), 0
		for _, f := range s.Fields() {
			a, err := nodeData(f.Type, nodes, &at)
			if err != nil {
				for _, c := range cols {
					c.Release()
				}
				return nil, rpc.Errorf(codes.InvalidArgument, "publishColumns: column %s: %v", f.Name, err)
			}
			add(f.Name, a)
		}
	}
	rec := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, int64(rows))
	for _, c := range cols {
		c.Release()
	}
	return rec, nil
}

// nodeData wraps the buffers of one Arrow node (and its children's, which
// follow it in preorder) as laid out by jvm/.../sink/RecordColumns.java:
// 4 int64s each, the node's length, its validity bitmap, and its first and
// second buffers (values; offsets and data; 0 where the layout has none).
func nodeData(dt arrow.DataType, nodes unsafe.Pointer, at *int) (arrow.ArrayData, error) {
	slot := func(k int) int64 { return *(*int64)(unsafe.Add(nodes, 8*(4**at+k))) }
	n, valid, b1, b2 := int(slot(0)), slot(1), slot(2), slot(3)
	*at++
	vb := cbuf(valid, bitmapLen(n))
	children := func(types ...arrow.DataType) ([]arrow.ArrayData, error) {
		var out []arrow.ArrayData
		for _, t := range types {
			c, err := nodeData(t, nodes, at)
			if err != nil {
				for _, o := range out {
					o.Release()
				}
				return nil, err
			}
			out = append(out, c)
		}
		return out, nil
	}
	withChildren := func(bufs []*memory.Buffer, types ...arrow.DataType) (arrow.ArrayData, error) {
		cs, err := children(types...)
		if err != nil {
			return nil, err
		}
		a := array.NewData(dt, n, bufs, cs, nulls(valid), 0)
		for _, c := range cs {
			c.Release()
		}
		return a, nil
	}
	switch t := dt.(type) {
	case *arrow.StringType, *arrow.BinaryType:
		return varData(dt, n, valid, b1, b2), nil
	case *arrow.BooleanType:
		return array.NewData(dt, n, []*memory.Buffer{vb, cbuf(b1, bitmapLen(n))}, nil, nulls(valid), 0), nil
	case *arrow.StructType:
		types := make([]arrow.DataType, t.NumFields())
		for i, f := range t.Fields() {
			types[i] = f.Type
		}
		return withChildren([]*memory.Buffer{vb}, types...)
	case *arrow.MapType: // before ListType: a map is a list of its entries' struct
		return withChildren([]*memory.Buffer{vb, cbuf(b1, 4*(n+1))}, t.Elem())
	case *arrow.ListType:
		return withChildren([]*memory.Buffer{vb, cbuf(b1, 4*(n+1))}, t.Elem())
	case arrow.FixedWidthDataType:
		return array.NewData(dt, n, []*memory.Buffer{vb, cbuf(b1, n*t.BitWidth()/8)}, nil, nulls(valid), 0), nil
	}
	return nil, rpc.Errorf(codes.InvalidArgument, "Arrow type %s is not laid out by the JVM sink", dt)
}
