package main

/*
#include "pubsubgo.h"
*/
import "C"

import (
	"context"
	"time"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/cdata"
	"google.golang.org/grpc/codes"

	"github.com/pubsub-go/pubsub-go/go/internal/cexport"
	"github.com/pubsub-go/pubsub-go/go/internal/rpc"
	"github.com/pubsub-go/pubsub-go/go/internal/subscriber"
)

var subscribers = table[*subscriber.Subscriber]{what: "subscriber"}

// nextSafetyMargin bounds a Next call beyond its requested wait, so that a
// stuck network call can never hang the caller.
const nextSafetyMargin = 60 * time.Second

//export pg_subscriber_open
func pg_subscriber_open(config *C.char, handleOut *C.uint64_t, errOut *C.struct_PgError) C.int {
	return guard(errOut, func() error {
		var cfg subscriber.Config
		if err := decodeConfig("subscriber", config, &cfg); err != nil {
			return err
		}
		s, err := subscriber.OpenWithAllocator(context.Background(), cfg, alloc)
		if err != nil {
			return err
		}
		*handleOut = C.uint64_t(subscribers.Put(s))
		return nil
	})
}

// nextWait is NextWait for a C call: up to maxRows messages within waitMs
// (out: the wait ran out), bounded by nextSafetyMargin beyond it.
func nextWait(s *subscriber.Subscriber, maxRows, waitMs C.int64_t) (*subscriber.Batch, bool, error) {
	wait := time.Duration(waitMs) * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), wait+nextSafetyMargin)
	defer cancel()
	return s.NextWait(ctx, int(maxRows), wait)
}

//export pg_subscriber_next
func pg_subscriber_next(h C.uint64_t, maxRows C.int64_t, waitMs C.int64_t,
	outBatch *C.struct_ArrowArray, outSchema *C.struct_ArrowSchema,
	outAckIDs *C.struct_ArrowArray, outAckSchema *C.struct_ArrowSchema, waitedOut *C.int32_t, errOut *C.struct_PgError) C.int {
	return guard(errOut, func() error {
		s, err := subscribers.get(h)
		if err != nil {
			return err
		}
		if outBatch == nil || outAckIDs == nil {
			return rpc.Errorf(codes.InvalidArgument, "pg_subscriber_next: the output ArrowArray pointers must not be NULL")
		}
		b, out, err := nextWait(s, maxRows, waitMs)
		if err != nil {
			return err
		}
		if waitedOut != nil {
			*waitedOut = 0
			if out {
				*waitedOut = 1
			}
		}
		defer b.Record.Release()
		defer b.AckIDs.Release()
		// A NULL schema pointer is not exported (the caller has it).
		if outSchema != nil {
			cdata.ExportArrowSchema(b.Record.Schema(), cschema(outSchema))
		}
		cexport.RecordBatch(b.Record, unsafe.Pointer(outBatch))
		// One array: arrow-go's exporter, which also exports its field's
		// schema, costs a handle and a release call, as cexport does.
		cdata.ExportArrowArray(b.AckIDs, carray(outAckIDs), cschema(outAckSchema))
		return nil
	})
}

// importAckIDs moves a C utf8 array of ack ids into Go strings.
func importAckIDs(arr *C.struct_ArrowArray, schema *C.struct_ArrowSchema) ([]string, error) {
	if arr == nil || schema == nil {
		return nil, rpc.Errorf(codes.InvalidArgument, "ack ids: ArrowArray/ArrowSchema pointers must not be NULL")
	}
	_, a, err := cdata.ImportCArray(carray(arr), cschema(schema))
	if err != nil {
		return nil, rpc.Errorf(codes.InvalidArgument, "ack ids: %v", err)
	}
	defer a.Release()
	var ids []string
	switch col := a.(type) {
	case *array.String:
		ids = make([]string, 0, col.Len())
		for i := 0; i < col.Len(); i++ {
			if col.IsValid(i) {
				ids = append(ids, col.Value(i))
			}
		}
	case *array.LargeString:
		ids = make([]string, 0, col.Len())
		for i := 0; i < col.Len(); i++ {
			if col.IsValid(i) {
				ids = append(ids, col.Value(i))
			}
		}
	default:
		return nil, rpc.Errorf(codes.InvalidArgument, "ack ids must be a utf8 or large_utf8 array, got %s", a.DataType())
	}
	return ids, nil
}

func withAckIDs(h C.uint64_t, arr *C.struct_ArrowArray, schema *C.struct_ArrowSchema, errOut *C.struct_PgError,
	f func(s *subscriber.Subscriber, ids []string) error) C.int {
	return guard(errOut, func() error {
		s, err := subscribers.get(h)
		if err != nil {
			if arr != nil && arr.release != nil {
				cdata.ReleaseCArrowArray(carray(arr))
			}
			return err
		}
		ids, err := importAckIDs(arr, schema)
		if err != nil {
			return err
		}
		return f(s, ids)
	})
}

//export pg_subscriber_ack
func pg_subscriber_ack(h C.uint64_t, arr *C.struct_ArrowArray, schema *C.struct_ArrowSchema, errOut *C.struct_PgError) C.int {
	return withAckIDs(h, arr, schema, errOut, func(s *subscriber.Subscriber, ids []string) error { return s.Ack(ids) })
}

//export pg_subscriber_nack
func pg_subscriber_nack(h C.uint64_t, arr *C.struct_ArrowArray, schema *C.struct_ArrowSchema, errOut *C.struct_PgError) C.int {
	return withAckIDs(h, arr, schema, errOut, func(s *subscriber.Subscriber, ids []string) error { return s.Nack(ids) })
}

//export pg_subscriber_modack
func pg_subscriber_modack(h C.uint64_t, arr *C.struct_ArrowArray, schema *C.struct_ArrowSchema, deadline C.int32_t, errOut *C.struct_PgError) C.int {
	return withAckIDs(h, arr, schema, errOut, func(s *subscriber.Subscriber, ids []string) error {
		if deadline < 0 || deadline > 600 {
			return rpc.Errorf(codes.InvalidArgument, "modack deadline %d s is out of range; expected 0..600", int32(deadline))
		}
		return s.Modack(ids, int(deadline))
	})
}

//export pg_subscriber_release
func pg_subscriber_release(h C.uint64_t, arr *C.struct_ArrowArray, schema *C.struct_ArrowSchema, errOut *C.struct_PgError) C.int {
	return withAckIDs(h, arr, schema, errOut, func(s *subscriber.Subscriber, ids []string) error {
		s.Release(ids)
		return nil
	})
}

// The C struct is subscriber.Stats, so a copy fills it; this fails to
// compile if their sizes differ (the names are checked by a test).
var _ [unsafe.Sizeof(C.struct_PgSubscriberStats{}) - unsafe.Sizeof(subscriber.Stats{})]struct{}
var _ [unsafe.Sizeof(subscriber.Stats{}) - unsafe.Sizeof(C.struct_PgSubscriberStats{})]struct{}

//export pg_subscriber_stats
func pg_subscriber_stats(h C.uint64_t, out *C.struct_PgSubscriberStats, errOut *C.struct_PgError) C.int {
	return guard(errOut, func() error {
		s, err := subscribers.get(h)
		if err != nil {
			return err
		}
		if out == nil {
			return rpc.Errorf(codes.InvalidArgument, "pg_subscriber_stats: the output pointer must not be NULL")
		}
		*(*subscriber.Stats)(unsafe.Pointer(out)) = s.Stats()
		return nil
	})
}

//export pg_subscriber_pause
func pg_subscriber_pause(h C.uint64_t, paused C.int, errOut *C.struct_PgError) C.int {
	return guard(errOut, func() error {
		s, err := subscribers.get(h)
		if err != nil {
			return err
		}
		if paused != 0 {
			s.Pause()
		} else {
			s.Resume()
		}
		return nil
	})
}

//export pg_subscriber_close
func pg_subscriber_close(h C.uint64_t, errOut *C.struct_PgError) C.int {
	return guard(errOut, func() error {
		return closeHandle(&subscribers, h, func(v *subscriber.Subscriber) error { return v.Close() })
	})
}
