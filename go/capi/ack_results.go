package main

/*
#include "pubsubgo.h"
*/
import "C"

import (
	"encoding/json"

	"github.com/pubsub-go/pubsub-go/go/internal/subscriber"
)

//export pg_subscriber_ack_results
func pg_subscriber_ack_results(h C.uint64_t, arr *C.struct_ArrowArray, schema *C.struct_ArrowSchema, jsonOut **C.char, errOut *C.struct_PgError) C.int {
	return withAckIDs(h, arr, schema, errOut, func(s *subscriber.Subscriber, ids []string) error {
		out, err := s.AckWithResults(ids)
		if b, merr := json.Marshal(out); merr == nil {
			setString(jsonOut, string(b))
		}
		return err
	})
}
