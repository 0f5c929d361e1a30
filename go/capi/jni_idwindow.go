package main

// The JVM source's idAttribute (jvm/.../source/IdWindow.java): the Arrow
// work the JVM has no Arrow library for. The task decides which rows to
// keep (a mask over the attributes column, in Java); here the batch log's
// copy of a batch is cut to those rows, and the window's id files (Arrow
// IPC files of one string column "id", as the Python source writes them)
// are written and read.

/*
#include <stdlib.h>
#include "pubsubgo.h"
*/
import "C"

import (
	"bytes"
	"encoding/binary"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"google.golang.org/grpc/codes"

	"github.com/pubsub-go/pubsub-go/go/internal/rpc"
)

// Java_io_pubsubgo_spark_bridge_Native_ipcSelect reads the Arrow IPC stream
// of one record batch (n bytes at data, as subscriberTake logged it) and
// writes, malloc'd at *logOut, the stream of only its rows at rows (nRows
// ascending int32 indexes): the batch log's entry holds just what the task
// handed to Spark, so a replay hands over the same rows.
//
//export Java_io_pubsubgo_spark_bridge_Native_ipcSelect
func Java_io_pubsubgo_spark_bridge_Native_ipcSelect(env, cls unsafe.Pointer, data, n, rows, nRows, logOut,
	logLenOut, errAddr C.int64_t) C.int {
	return guard(errp(errAddr), func() error {
		if data == 0 || n <= 0 || (rows == 0 && nRows > 0) || nRows < 0 || logOut == 0 || logLenOut == 0 {
			return rpc.Errorf(codes.InvalidArgument, "ipcSelect: %d bytes at %d, %d rows at %d, outputs %d %d",
				int64(n), int64(data), int64(nRows), int64(rows), int64(logOut), int64(logLenOut))
		}
		src := unsafe.Slice((*byte)(ptr(data)), int(n))
		r, err := ipc.NewReader(bytes.NewReader(src), ipc.WithAllocator(alloc))
		if err != nil {
			return rpc.Errorf(codes.Internal, "batch log: a batch is not an Arrow IPC stream: %v", err)
		}
		defer r.Release()
		if !r.Next() {
			return rpc.Errorf(codes.Internal, "batch log: a batch's stream holds no record batch: %v", r.Err())
		}
		var keep []int32
		if nRows > 0 {
			keep = unsafe.Slice((*int32)(ptr(rows)), int(nRows))
		}
		rec, err := selectRows(r.RecordBatch(), keep)
		if err != nil {
			return err
		}
		defer rec.Release()
		w := newCWriter(ipcSize(rec))
		iw := ipc.NewWriter(w, ipc.WithSchema(rec.Schema()))
		err = iw.Write(rec)
		if err == nil {
			err = iw.Close()
		}
		if err != nil {
			w.free()
			return rpc.Errorf(codes.Internal, "batch log: serializing a batch: %v", err)
		}
		*(*unsafe.Pointer)(ptr(logOut)) = w.p
		*(*C.int64_t)(ptr(logLenOut)) = C.int64_t(w.n)
		return nil
	})
}

// selectRows is rec with only the rows at keep (ascending): each column's
// runs of consecutive kept rows, concatenated.
func selectRows(rec arrow.RecordBatch, keep []int32) (arrow.RecordBatch, error) {
	type span struct{ lo, hi int64 }
	var spans []span
	for i, k := range keep {
		if int64(k) < 0 || int64(k) >= rec.NumRows() || (i > 0 && k <= keep[i-1]) {
			return nil, rpc.Errorf(codes.InvalidArgument, "ipcSelect: row %d of a %d-row batch, at %d (rows must ascend)",
				k, rec.NumRows(), i)
		}
		if len(spans) > 0 && spans[len(spans)-1].hi == int64(k) {
			spans[len(spans)-1].hi++
		} else {
			spans = append(spans, span{int64(k), int64(k) + 1})
		}
	}
	if len(spans) == 0 {
		spans = []span{{0, 0}}
	}
	cols := make([]arrow.Array, 0, rec.NumCols())
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	for _, c := range rec.Columns() {
		parts := make([]arrow.Array, len(spans))
		for j, s := range spans {
			parts[j] = array.NewSlice(c, s.lo, s.hi)
		}
		if len(parts) == 1 {
			cols = append(cols, parts[0])
			continue
		}
		joined, err := array.Concatenate(parts, alloc)
		for _, p := range parts {
			p.Release()
		}
		if err != nil {
			return nil, rpc.Errorf(codes.Internal, "ipcSelect: joining a column's rows: %v", err)
		}
		cols = append(cols, joined)
	}
	return array.NewRecordBatch(rec.Schema(), cols, int64(len(keep))), nil
}

var idSchema = arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.BinaryTypes.String}}, nil)

// Java_io_pubsubgo_spark_bridge_Native_idsToArrow writes ids (n bytes at
// data, each a little-endian uint32 length then its UTF-8 bytes) as an
// Arrow IPC file of one string column "id", malloc'd at *out.
//
//export Java_io_pubsubgo_spark_bridge_Native_idsToArrow
func Java_io_pubsubgo_spark_bridge_Native_idsToArrow(env, cls unsafe.Pointer, data, n, out, outLen, errAddr C.int64_t) C.int {
	return guard(errp(errAddr), func() error {
		if (data == 0 && n > 0) || n < 0 || out == 0 || outLen == 0 {
			return rpc.Errorf(codes.InvalidArgument, "idsToArrow: %d bytes at %d, outputs %d %d", int64(n), int64(data),
				int64(out), int64(outLen))
		}
		var src []byte
		if n > 0 {
			src = unsafe.Slice((*byte)(ptr(data)), int(n))
		}
		b := array.NewStringBuilder(alloc)
		defer b.Release()
		for len(src) > 0 {
			if len(src) < 4 || int(binary.LittleEndian.Uint32(src)) > len(src)-4 {
				return rpc.Errorf(codes.InvalidArgument, "idsToArrow: an id's length runs past the %d bytes given", int64(n))
			}
			l := int(binary.LittleEndian.Uint32(src))
			b.Append(string(src[4 : 4+l]))
			src = src[4+l:]
		}
		col := b.NewArray()
		defer col.Release()
		rec := array.NewRecordBatch(idSchema, []arrow.Array{col}, int64(col.Len()))
		defer rec.Release()
		w := newCWriter(ipcSize(rec))
		fw, err := ipc.NewFileWriter(w, ipc.WithSchema(idSchema), ipc.WithAllocator(alloc))
		if err == nil {
			err = fw.Write(rec)
			if cerr := fw.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			w.free()
			return rpc.Errorf(codes.Internal, "idAttribute: writing an id file: %v", err)
		}
		*(*unsafe.Pointer)(ptr(out)) = w.p
		*(*C.int64_t)(ptr(outLen)) = C.int64_t(w.n)
		return nil
	})
}

// Java_io_pubsubgo_spark_bridge_Native_idsFromArrow reads an id file (an
// Arrow IPC file whose first column holds strings, n bytes at data) and
// writes its ids, as idsToArrow takes them, malloc'd at *out.
//
//export Java_io_pubsubgo_spark_bridge_Native_idsFromArrow
func Java_io_pubsubgo_spark_bridge_Native_idsFromArrow(env, cls unsafe.Pointer, data, n, out, outLen, errAddr C.int64_t) C.int {
	return guard(errp(errAddr), func() error {
		if data == 0 || n <= 0 || out == 0 || outLen == 0 {
			return rpc.Errorf(codes.InvalidArgument, "idsFromArrow: %d bytes at %d, outputs %d %d", int64(n), int64(data),
				int64(out), int64(outLen))
		}
		src := unsafe.Slice((*byte)(ptr(data)), int(n))
		f, err := ipc.NewFileReader(bytes.NewReader(src), ipc.WithAllocator(alloc))
		if err != nil {
			return rpc.Errorf(codes.DataLoss, "idAttribute: an id file is not an Arrow IPC file: %v", err)
		}
		defer f.Close()
		var enc []byte
		var l [4]byte
		for i := 0; i < f.NumRecords(); i++ {
			rec, err := f.RecordBatch(i)
			if err != nil {
				return rpc.Errorf(codes.DataLoss, "idAttribute: reading an id file: %v", err)
			}
			if rec.NumCols() == 0 {
				continue
			}
			col, ok := rec.Column(0).(*array.String)
			if !ok {
				return rpc.Errorf(codes.DataLoss, "idAttribute: an id file's column is %s, not a string", rec.Column(0).DataType())
			}
			for j := 0; j < col.Len(); j++ {
				if col.IsNull(j) {
					continue
				}
				v := col.Value(j)
				binary.LittleEndian.PutUint32(l[:], uint32(len(v)))
				enc = append(enc, l[:]...)
				enc = append(enc, v...)
			}
		}
		cBytes(enc, out, outLen)
		return nil
	})
}
