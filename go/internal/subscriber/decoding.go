package subscriber

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/pubsub-go/pubsub-go/go/internal/decode"
	"github.com/pubsub-go/pubsub-go/go/internal/rawbatch"
)

// decoding is the schema-mode stage: the decode pool's workers run it on
// finished lots (decode_pool.go).
type decoding struct {
	cfg    *decode.DecoderConfig
	dec    *decode.Decoder
	mem    memory.Allocator
	schema *arrow.Schema // decoded fields, raw fields, DecodeErrorColumn
}

// newDecoding starts the decoder of cfg.
func newDecoding(ctx context.Context, cfg *decode.DecoderConfig, mem memory.Allocator) (*decoding, error) {
	dec, err := cfg.Open(ctx, mem, decodeWorkers()) // one instance per decode worker (decode_pool.go)
	if err != nil {
		return nil, err
	}
	if err := decode.CheckNames(dec.Schema()); err != nil {
		dec.Close()
		return nil, invalid("decoder %s: its schema: %v", cfg.Name(), err)
	}
	fields := append(append([]arrow.Field{}, dec.Schema().Fields()...), rawbatch.Schema().Fields()...)
	fields = append(fields, arrow.Field{Name: decode.DecodeErrorColumn, Type: arrow.BinaryTypes.String, Nullable: true})
	return &decoding{cfg: cfg, dec: dec, mem: mem, schema: arrow.NewSchema(fields, nil)}, nil
}

// apply decodes raw's payloads and returns the decoded batch and its
// number of rows that failed to decode. raw is not released.
func (d *decoding) apply(ctx context.Context, raw arrow.RecordBatch) (arrow.RecordBatch, int, error) {
	n := int(raw.NumRows())
	var decoded []arrow.Array
	var errs arrow.Array
	if n == 0 {
		// No call into the module for the many empty batches of an idle
		// subscription.
		for _, f := range d.dec.Schema().Fields() {
			decoded = append(decoded, array.MakeArrayOfNull(d.mem, f.Type, 0))
		}
		errs = array.MakeArrayOfNull(d.mem, arrow.BinaryTypes.String, 0)
	} else {
		payloads := raw.Column(rawbatch.ColPayload).(*array.Binary)
		var rec arrow.RecordBatch
		var rowErrs *array.String
		var err error
		if d.cfg.TopicSchema != nil {
			rec, rowErrs, err = d.dec.DecodeRouted(payloads, routes(raw))
		} else {
			rec, rowErrs, err = d.dec.Decode(ctx, payloads)
		}
		if err != nil {
			return nil, 0, err
		}
		defer rec.Release()
		decoded = rec.Columns()
		for _, c := range decoded {
			c.Retain()
		}
		errs = rowErrs
	}
	cols := append(decoded, raw.Columns()...)
	cols = append(cols, errs)
	out := array.NewRecordBatch(d.schema, cols, int64(n))
	for _, c := range decoded {
		c.Release()
	}
	nerr := errs.Len() - errs.NullN()
	errs.Release()
	return out, nerr, nil
}

// routes reads each message's schema revision and encoding from its
// attributes (schemaFrom=topic).
func routes(raw arrow.RecordBatch) func(int) decode.Route {
	ids := raw.Column(rawbatch.ColMessageID).(*array.String)
	attrs := raw.Column(rawbatch.ColAttributes).(*array.Map)
	keys := attrs.Keys().(*array.String)
	vals := attrs.Items().(*array.String)
	return func(i int) decode.Route {
		r := decode.Route{MessageID: ids.Value(i)}
		if attrs.IsNull(i) {
			return r
		}
		start, end := attrs.ValueOffsets(i)
		for j := int(start); j < int(end); j++ {
			switch keys.Value(j) {
			case decode.AttrSchemaRevision:
				r.Revision = vals.Value(j)
			case decode.AttrSchemaEncoding:
				r.Encoding = vals.Value(j)
			}
		}
		return r
	}
}

// close is a no-op on nil (a subscriber without a decoder).
func (d *decoding) close() {
	if d != nil {
		d.dec.Close()
	}
}

// decodeStatus gives a failure of cfg's decoder a status code (naming
// the limit that was hit); note, if any, ends the message.
func decodeStatus(err error, cfg *decode.DecoderConfig, what, note string) error {
	return cfg.StatusOf(err, what, note)
}
