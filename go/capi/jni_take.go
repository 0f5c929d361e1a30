package main

// The JVM front end's pull and replay calls: a batch handed to Spark plus
// what the batch log needs of it, in one crossing.

/*
#include <stdlib.h>
#include <string.h>
#include "pubsubgo.h"
*/
import "C"

import (
	"bytes"
	"fmt"
	"strings"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/cdata"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"google.golang.org/grpc/codes"

	"github.com/pubsub-go/pubsub-go/go/internal/cexport"
	"github.com/pubsub-go/pubsub-go/go/internal/rawbatch"
	"github.com/pubsub-go/pubsub-go/go/internal/rpc"
)

// cBytes copies b into malloc'd memory for the caller (freed with pg_free).
func cBytes(b []byte, out, outLen C.int64_t) {
	p := C.malloc(C.size_t(len(b) + 1))
	if len(b) > 0 {
		C.memcpy(p, unsafe.Pointer(&b[0]), C.size_t(len(b)))
	}
	*(*unsafe.Pointer)(ptr(out)) = p
	*(*C.int64_t)(ptr(outLen)) = C.int64_t(len(b))
}

// Java_io_pubsubgo_spark_bridge_Native_subscriberTake is pg_subscriber_next
// for the JVM: the batch (and its schema when schema != 0) exported for
// Spark, its ack ids as text, one per line (malloc'd, at *acksOut, length
// *acksLenOut), and when logOut != 0 the batch as an Arrow IPC stream
// (malloc'd) for the batch log, serialized here from the Go record so the
// JVM needs no Arrow IPC writer of its own.
//
//export Java_io_pubsubgo_spark_bridge_Native_subscriberTake
func Java_io_pubsubgo_spark_bridge_Native_subscriberTake(env, cls unsafe.Pointer, h, maxRows, waitMs,
	batch, schema, acksOut, acksLenOut, logOut, logLenOut, waitedOut, errAddr C.int64_t) C.int {
	return guard(errp(errAddr), func() error {
		s, err := subscribers.get(C.uint64_t(h))
		if err != nil {
			return err
		}
		debugHook("take")
		if batch == 0 || acksOut == 0 || acksLenOut == 0 {
			return rpc.Errorf(codes.InvalidArgument, "subscriberTake: the batch and ack id outputs must not be NULL")
		}
		b, out, err := nextWait(s, maxRows, waitMs)
		if err != nil {
			return err
		}
		defer b.Record.Release()
		defer b.AckIDs.Release()
		if waitedOut != 0 {
			*(*C.int32_t)(ptr(waitedOut)) = 0
			if out {
				*(*C.int32_t)(ptr(waitedOut)) = 1
			}
		}
		if logOut != 0 {
			w := newCWriter(ipcSize(b.Record))
			iw := ipc.NewWriter(w, ipc.WithSchema(b.Record.Schema()))
			err := iw.Write(b.Record)
			if err == nil {
				err = iw.Close()
			}
			if err != nil {
				w.free()
				return rpc.Errorf(codes.Internal, "batch log: serializing a batch: %v", err)
			}
			*(*unsafe.Pointer)(ptr(logOut)) = w.p
			*(*C.int64_t)(ptr(logLenOut)) = C.int64_t(w.n)
		}
		cBytes([]byte(ackLines(b.AckIDs)), acksOut, acksLenOut)
		if schema != 0 {
			cdata.ExportArrowSchema(b.Record.Schema(), cschema((*C.struct_ArrowSchema)(ptr(schema))))
		}
		cexport.RecordBatch(b.Record, ptr(batch))
		return nil
	})
}

// cWriter collects the batch log's IPC bytes straight into malloc'd memory
// (handed to the JVM, freed with pg_free): no Go-heap buffer to grow, zero
// and collect for every batch.
type cWriter struct {
	p      unsafe.Pointer
	n, cap int
}

func newCWriter(size int) *cWriter {
	return &cWriter{p: C.malloc(C.size_t(size)), cap: size}
}

func (w *cWriter) Write(b []byte) (int, error) {
	if w.n+len(b) > w.cap {
		c := max(2*w.cap, w.n+len(b))
		p := C.realloc(w.p, C.size_t(c))
		if p == nil {
			return 0, fmt.Errorf("out of C memory for %d bytes", c)
		}
		w.p, w.cap = p, c
	}
	if len(b) > 0 {
		C.memcpy(unsafe.Add(w.p, w.n), unsafe.Pointer(&b[0]), C.size_t(len(b)))
	}
	w.n += len(b)
	return len(b), nil
}

func (w *cWriter) free() { C.free(w.p) }

// ipcSize is a batch's IPC stream size, give or take its metadata and
// padding: the sum of its buffers, plus room for the rest.
func ipcSize(rec arrow.RecordBatch) int {
	n := 64 << 10
	var add func(d arrow.ArrayData)
	add = func(d arrow.ArrayData) {
		for _, b := range d.Buffers() {
			if b != nil {
				n += b.Len() + 8
			}
		}
		for _, c := range d.Children() {
			add(c)
		}
	}
	for _, c := range rec.Columns() {
		add(c.Data())
	}
	return n
}

func ackLines(ids arrow.Array) string {
	col, ok := ids.(*array.String)
	if !ok || col.Len() == 0 {
		return ""
	}
	var sb strings.Builder
	for i := 0; i < col.Len(); i++ {
		sb.WriteString(col.Value(i))
		sb.WriteByte('\n')
	}
	return sb.String()
}

// Java_io_pubsubgo_spark_bridge_Native_ipcImport reads one Arrow IPC stream
// of one record batch (the n bytes at data, as subscriberTake logged it)
// and exports the batch, in C memory, for Spark (a batch log replay).
//
//export Java_io_pubsubgo_spark_bridge_Native_ipcImport
func Java_io_pubsubgo_spark_bridge_Native_ipcImport(env, cls unsafe.Pointer, data, n, batch, schema, errAddr C.int64_t) C.int {
	return guard(errp(errAddr), func() error {
		if data == 0 || n <= 0 || batch == 0 {
			return rpc.Errorf(codes.InvalidArgument, "ipcImport: %d bytes at address %d, batch output %d", int64(n), int64(data), int64(batch))
		}
		src := unsafe.Slice((*byte)(ptr(data)), int(n))
		r, err := ipc.NewReader(bytes.NewReader(src), ipc.WithAllocator(alloc))
		if err != nil {
			return rpc.Errorf(codes.DataLoss, "batch log: an entry's batch is not an Arrow IPC stream: %v", err)
		}
		defer r.Release()
		if !r.Next() {
			if r.Err() != nil {
				return rpc.Errorf(codes.DataLoss, "batch log: reading an entry's batch: %v", r.Err())
			}
			return rpc.Errorf(codes.DataLoss, "batch log: an entry's batch holds no record batch")
		}
		rec := r.RecordBatch()
		if schema != 0 {
			cdata.ExportArrowSchema(rec.Schema(), cschema((*C.struct_ArrowSchema)(ptr(schema))))
		}
		cexport.RecordBatch(rec, ptr(batch))
		return nil
	})
}

// Java_io_pubsubgo_spark_bridge_Native_rawSchema exports the raw schema
// (rawbatch.Schema: the columns of a batch without a decoder), so the JVM
// front end states it nowhere itself.
//
//export Java_io_pubsubgo_spark_bridge_Native_rawSchema
func Java_io_pubsubgo_spark_bridge_Native_rawSchema(env, cls unsafe.Pointer, schema, errAddr C.int64_t) C.int {
	return guard(errp(errAddr), func() error {
		if schema == 0 {
			return rpc.Errorf(codes.InvalidArgument, "rawSchema: the output must not be NULL")
		}
		cdata.ExportArrowSchema(rawbatch.Schema(), cschema((*C.struct_ArrowSchema)(ptr(schema))))
		return nil
	})
}
