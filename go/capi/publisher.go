package main

/*
#include "pubsubgo.h"
*/
import "C"

import (
	"context"
	"encoding/json"
	"time"

	"github.com/apache/arrow-go/v18/arrow/cdata"
	"google.golang.org/grpc/codes"

	"github.com/pubsub-go/pubsub-go/go/internal/publisher"
	"github.com/pubsub-go/pubsub-go/go/internal/rpc"
)

var publishers = table[*publisher.Publisher]{what: "publisher"}

//export pg_publisher_open
func pg_publisher_open(config *C.char, handleOut *C.uint64_t, errOut *C.struct_PgError) C.int {
	return guard(errOut, func() error {
		var cfg publisher.Config
		if err := decodeConfig("publisher", config, &cfg); err != nil {
			return err
		}
		p, err := publisher.Open(context.Background(), cfg)
		if err != nil {
			return err
		}
		*handleOut = C.uint64_t(publishers.Put(p))
		return nil
	})
}

//export pg_publisher_publish
func pg_publisher_publish(h C.uint64_t, arr *C.struct_ArrowArray, schema *C.struct_ArrowSchema, errOut *C.struct_PgError) C.int {
	return guard(errOut, func() error {
		if arr == nil || schema == nil {
			return rpc.Errorf(codes.InvalidArgument, "pg_publisher_publish: ArrowArray/ArrowSchema pointers must not be NULL")
		}
		rec, err := cdata.ImportCRecordBatch(carray(arr), cschema(schema))
		if err != nil {
			return rpc.Errorf(codes.InvalidArgument, "publish: cannot import the Arrow batch: %v", err)
		}
		defer rec.Release()
		p, err := publishers.get(h)
		if err != nil {
			return err
		}
		return p.Publish(context.Background(), rec)
	})
}

//export pg_publisher_start_ids
func pg_publisher_start_ids(h C.uint64_t, prefix *C.char, errOut *C.struct_PgError) C.int {
	return guard(errOut, func() error {
		if prefix == nil {
			return rpc.Errorf(codes.InvalidArgument, "pg_publisher_start_ids: prefix must not be NULL")
		}
		p, err := publishers.get(h)
		if err != nil {
			return err
		}
		return p.StartIDs(C.GoString(prefix))
	})
}

//export pg_publisher_flush
func pg_publisher_flush(h C.uint64_t, timeoutMs C.int64_t, jsonOut **C.char, errOut *C.struct_PgError) C.int {
	return guard(errOut, func() error {
		p, err := publishers.get(h)
		if err != nil {
			return err
		}
		ctx := context.Background()
		if timeoutMs > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, time.Duration(timeoutMs)*time.Millisecond)
			defer cancel()
		}
		res, err := p.Flush(ctx)
		if b, jerr := json.Marshal(res); jerr == nil {
			setString(jsonOut, string(b))
		}
		return err
	})
}

//export pg_publisher_close
func pg_publisher_close(h C.uint64_t, errOut *C.struct_PgError) C.int {
	return guard(errOut, func() error {
		return closeHandle(&publishers, h, func(v *publisher.Publisher) error { return v.Close() })
	})
}
