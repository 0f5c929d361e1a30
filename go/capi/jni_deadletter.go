package main

// Schema mode's dead letters for the JVM front end (onDecodeError=
// deadletter): the rows of a decoded batch that failed to decode are
// published to the dead-letter topic with the original payload and
// attributes, plus the error, the message id and the subscription (the
// Python front end's spark/read/task/on_decode_error.py, dead_letter_batch).
// The batch arrives as the Arrow IPC stream the task already has for its
// batch log (subscriberTake's), so the JVM builds no Arrow of its own.

/*
#include "pubsubgo.h"
*/
import "C"

import (
	"bytes"
	"context"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"google.golang.org/grpc/codes"

	"github.com/pubsub-go/pubsub-go/go/internal/decode"
	"github.com/pubsub-go/pubsub-go/go/internal/rpc"
)

// The attributes a dead letter carries besides the original ones.
const (
	deadLetterErrorAttribute   = "pubsub_go_decode_error"
	deadLetterIDAttribute      = "pubsub_go_message_id"
	deadLetterSubAttribute     = "pubsub_go_subscription"
	pubsubAttributeValueMaxLen = 1024 // Pub/Sub's limit on an attribute value, in bytes
)

// deadLetterFlushTimeout bounds the wait for Pub/Sub to confirm the dead
// letters of one batch (the Python front end's flush(timeout_ms=60_000)).
const deadLetterFlushTimeout = 60 * time.Second

//export Java_io_pubsubgo_spark_bridge_DeadLetters_openPublisher
func Java_io_pubsubgo_spark_bridge_DeadLetters_openPublisher(env, cls unsafe.Pointer, config, handleOut, errAddr C.int64_t) C.int {
	return pg_publisher_open((*C.char)(ptr(config)), (*C.uint64_t)(ptr(handleOut)), errp(errAddr))
}

//export Java_io_pubsubgo_spark_bridge_DeadLetters_closePublisher
func Java_io_pubsubgo_spark_bridge_DeadLetters_closePublisher(env, cls unsafe.Pointer, h, errAddr C.int64_t) C.int {
	return pg_publisher_close(C.uint64_t(h), errp(errAddr))
}

// Java_io_pubsubgo_spark_bridge_DeadLetters_publishFailed publishes the rows of
// the batch in the n bytes of Arrow IPC at data whose __decode_error is
// set, through the publisher h, and returns once Pub/Sub confirmed them
// (the count at *countOut, an int64). subscription (NUL-terminated) names
// the source in each dead letter.
//
//export Java_io_pubsubgo_spark_bridge_DeadLetters_publishFailed
func Java_io_pubsubgo_spark_bridge_DeadLetters_publishFailed(env, cls unsafe.Pointer, h, data, n, subscription, countOut, errAddr C.int64_t) C.int {
	return guard(errp(errAddr), func() error {
		p, err := publishers.get(C.uint64_t(h))
		if err != nil {
			return err
		}
		if data == 0 || n <= 0 || subscription == 0 || countOut == 0 {
			return rpc.Errorf(codes.InvalidArgument, "deadLetters: the batch, subscription and count must not be NULL")
		}
		r, err := ipc.NewReader(bytes.NewReader(unsafe.Slice((*byte)(ptr(data)), int(n))), ipc.WithAllocator(alloc))
		if err != nil {
			return rpc.Errorf(codes.InvalidArgument, "deadLetters: the batch is not an Arrow IPC stream: %v", err)
		}
		defer r.Release()
		if !r.Next() {
			return rpc.Errorf(codes.InvalidArgument, "deadLetters: the stream holds no batch: %v", r.Err())
		}
		out, count, err := deadLetterBatch(r.RecordBatch(), C.GoString((*C.char)(ptr(subscription))))
		if err != nil {
			return err
		}
		*(*C.int64_t)(ptr(countOut)) = C.int64_t(count)
		if count == 0 {
			return nil
		}
		defer out.Release()
		ctx, cancel := context.WithTimeout(context.Background(), deadLetterFlushTimeout)
		defer cancel()
		if err := p.Publish(ctx, out); err != nil {
			return err
		}
		_, err = p.Flush(ctx)
		return err
	})
}

// deadLetterBatch is the failed rows of a decoded batch as a publishable
// batch: payload, and attributes with the error (cut to Pub/Sub's limit),
// the message id and the subscription added.
func deadLetterBatch(rec arrow.RecordBatch, subscription string) (arrow.RecordBatch, int, error) {
	col := func(name string) arrow.Array {
		if idx := rec.Schema().FieldIndices(name); len(idx) == 1 {
			return rec.Column(idx[0])
		}
		return nil
	}
	errs, _ := col(decode.DecodeErrorColumn).(*array.String)
	payloads, _ := col("payload").(*array.Binary)
	ids, _ := col("message_id").(*array.String)
	attrs, _ := col("attributes").(*array.Map)
	if errs == nil || payloads == nil || ids == nil || attrs == nil {
		return nil, 0, rpc.Errorf(codes.InvalidArgument, "deadLetters: the batch lacks %s, payload, message_id or attributes "+
			"of the types the subscriber gives them", decode.DecodeErrorColumn)
	}
	keys, _ := attrs.Keys().(*array.String)
	vals, _ := attrs.Items().(*array.String)
	mt := arrow.MapOf(arrow.BinaryTypes.String, arrow.BinaryTypes.String)
	pb := array.NewBinaryBuilder(alloc, arrow.BinaryTypes.Binary)
	defer pb.Release()
	mb := array.NewMapBuilderWithType(alloc, mt)
	defer mb.Release()
	kb, vb := mb.KeyBuilder().(*array.StringBuilder), mb.ItemBuilder().(*array.StringBuilder)
	count := 0
	for i := 0; i < errs.Len(); i++ {
		if errs.IsNull(i) {
			continue
		}
		count++
		if payloads.IsNull(i) {
			pb.AppendNull()
		} else {
			pb.Append(payloads.Value(i))
		}
		mb.Append(true)
		extra := map[string]string{deadLetterErrorAttribute: truncateUTF8(errs.Value(i), pubsubAttributeValueMaxLen),
			deadLetterIDAttribute: ids.Value(i), deadLetterSubAttribute: subscription}
		if !attrs.IsNull(i) && keys != nil && vals != nil {
			start, end := attrs.ValueOffsets(i)
			for j := start; j < end; j++ {
				k := keys.Value(int(j))
				if _, over := extra[k]; over {
					continue
				}
				kb.Append(k)
				if vals.IsNull(int(j)) {
					vb.AppendNull()
				} else {
					vb.Append(vals.Value(int(j)))
				}
			}
		}
		for _, k := range []string{deadLetterErrorAttribute, deadLetterIDAttribute, deadLetterSubAttribute} {
			kb.Append(k)
			vb.Append(extra[k])
		}
	}
	if count == 0 {
		return nil, 0, nil
	}
	p, m := pb.NewArray(), mb.NewArray()
	defer p.Release()
	defer m.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "payload", Type: arrow.BinaryTypes.Binary, Nullable: true},
		{Name: "attributes", Type: mt, Nullable: true}}, nil)
	return array.NewRecordBatch(schema, []arrow.Array{p, m}, int64(count)), count, nil
}

// truncateUTF8 cuts s to at most limit bytes, at a character boundary.
func truncateUTF8(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	s = s[:limit]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}
