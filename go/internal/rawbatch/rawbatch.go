// Package rawbatch decodes Pub/Sub ReceivedMessages straight into Arrow
// builders, producing record batches in the connector's raw schema plus the
// matching ack ids as a separate array.
package rawbatch

import (
	"slices"
	"unsafe"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Column positions in the raw schema.
const (
	ColMessageID = iota
	ColPublishTime
	ColAttributes
	ColPayload
	ColOrderingKey
	ColDeliveryAttempt
)

// PublishTimeType is the type of the publish_time column.
var PublishTimeType = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}

// AttributesType is the type of the attributes column.
var AttributesType = arrow.MapOf(arrow.BinaryTypes.String, arrow.BinaryTypes.String)

var schema = arrow.NewSchema([]arrow.Field{
	{Name: "message_id", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "publish_time", Type: PublishTimeType, Nullable: true},
	{Name: "attributes", Type: AttributesType, Nullable: true},
	{Name: "payload", Type: arrow.BinaryTypes.Binary, Nullable: true},
	{Name: "ordering_key", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "delivery_attempt", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
}, nil)

// Schema is the raw schema. It is shared and immutable.
func Schema() *arrow.Schema { return schema }

// rowOverhead approximates the fixed bytes per row: offsets of the five
// variable-width columns and the ack id, the timestamp and the int32.
const rowOverhead = 6*4 + 8 + 4

// Builder accumulates messages into the raw schema. It is not safe for
// concurrent use. A Builder can build many batches; call Release when done.
type Builder struct {
	rb      *array.RecordBuilder
	id      *array.StringBuilder
	ts      *array.TimestampBuilder
	attrs   *array.MapBuilder
	entries *array.StructBuilder
	keys    *array.StringBuilder
	vals    *array.StringBuilder
	payload *array.BinaryBuilder
	okey    *array.StringBuilder
	attempt *array.Int32Builder
	ackIDs  *array.StringBuilder

	bytes   int
	keyBuf  []string // scratch for sorting attribute keys
	nextCap int      // rows to reserve when a batch starts without ReserveFor
}

// NewBuilder returns a Builder whose buffers come from mem (in production
// a mallocator, so batches can be exported through the C Data Interface).
func NewBuilder(mem memory.Allocator) *Builder {
	rb := array.NewRecordBuilder(mem, schema)
	attrs := rb.Field(ColAttributes).(*array.MapBuilder)
	return &Builder{
		rb:      rb,
		id:      rb.Field(ColMessageID).(*array.StringBuilder),
		ts:      rb.Field(ColPublishTime).(*array.TimestampBuilder),
		attrs:   attrs,
		entries: attrs.ValueBuilder().(*array.StructBuilder),
		keys:    attrs.KeyBuilder().(*array.StringBuilder),
		vals:    attrs.ItemBuilder().(*array.StringBuilder),
		payload: rb.Field(ColPayload).(*array.BinaryBuilder),
		okey:    rb.Field(ColOrderingKey).(*array.StringBuilder),
		attempt: rb.Field(ColDeliveryAttempt).(*array.Int32Builder),
		ackIDs:  array.NewStringBuilder(mem),
	}
}

// Release frees the builder's buffers (not those of batches already built).
func (b *Builder) Release() {
	b.rb.Release()
	b.ackIDs.Release()
}

// Len is the number of rows appended since the last NewBatch.
func (b *Builder) Len() int { return b.ackIDs.Len() }

// Bytes approximates the Arrow memory the pending rows will occupy.
func (b *Builder) Bytes() int { return b.bytes }

// ReserveFor sizes every buffer for msgs exactly, so appending them
// allocates once per buffer instead of growing by doubling (each growth is
// a realloc and copy in C memory).
func (b *Builder) ReserveFor(msgs []*pubsubpb.ReceivedMessage) {
	var idBytes, payloadBytes, okeyBytes, ackBytes, nAttrs, keyBytes, valBytes int
	for _, m := range msgs {
		pm := m.GetMessage()
		idBytes += len(pm.GetMessageId())
		payloadBytes += len(pm.GetData())
		okeyBytes += len(pm.GetOrderingKey())
		ackBytes += len(m.GetAckId())
		for k, v := range pm.GetAttributes() {
			keyBytes += len(k)
			valBytes += len(v)
		}
		nAttrs += len(pm.GetAttributes())
	}
	b.reserveRows(len(msgs))
	grow(b.entries, nAttrs)
	b.id.ReserveData(idBytes)
	b.keys.ReserveData(keyBytes)
	b.vals.ReserveData(valBytes)
	b.payload.ReserveData(payloadBytes)
	b.okey.ReserveData(okeyBytes)
	b.ackIDs.ReserveData(ackBytes)
}

// reserveRows makes room for n more rows. It resizes to exact lengths
// rather than calling Reserve: Reserve rounds up to a power of two, which
// NewBatch then trims with another realloc.
func (b *Builder) reserveRows(n int) {
	grow(b.id, n)
	grow(b.ts, n)
	grow(b.attrs, n+1) // the list offsets take one more entry
	grow(b.payload, n)
	grow(b.okey, n)
	grow(b.attempt, n)
	grow(b.ackIDs, n)
}

// grow makes room for n more rows in bl.
func grow(bl array.Builder, n int) {
	if want := bl.Len() + n; bl.Cap() < want {
		bl.Resize(want)
	}
}

// Append adds one message as a row. Absent parts follow the raw schema:
// no ordering key and delivery attempt 0 (no dead-letter policy) are null,
// no attributes is an empty map, no data is an empty payload.
func (b *Builder) Append(m *pubsubpb.ReceivedMessage) {
	if b.Len() == 0 && b.nextCap > 0 {
		// A fresh batch without ReserveFor: start at the previous batch's
		// row count instead of doubling up from a handful of rows.
		b.reserveRows(b.nextCap)
	}
	pm := m.GetMessage()
	id, data, okey, ack := pm.GetMessageId(), pm.GetData(), pm.GetOrderingKey(), m.GetAckId()
	b.bytes += rowOverhead + len(id) + len(data) + len(okey) + len(ack)

	b.id.BinaryBuilder.Append(bytesOf(id))

	if t := pm.GetPublishTime(); t != nil {
		// Exact for any Timestamp with microsecond precision; sub-microsecond
		// nanos are truncated (nanos is never negative, so this floors).
		b.ts.Append(arrow.Timestamp(t.GetSeconds()*1_000_000 + int64(t.GetNanos())/1_000))
	} else {
		b.ts.AppendNull()
	}

	b.appendAttributes(pm.GetAttributes())

	b.payload.Append(data) // nil appends a valid empty value

	if okey != "" {
		b.okey.BinaryBuilder.Append(bytesOf(okey))
	} else {
		b.okey.AppendNull()
	}

	if a := m.GetDeliveryAttempt(); a > 0 {
		b.attempt.Append(a)
	} else {
		b.attempt.AppendNull()
	}

	b.ackIDs.BinaryBuilder.Append(bytesOf(ack))
}

// appendAttributes writes the map with keys sorted, so equal messages give
// equal rows whatever Go's map iteration order. Entries are appended to the
// struct builder as we go: left to the map builder, it catches up at
// NewBatch with a Reserve that regrows the already full key and value
// buffers.
func (b *Builder) appendAttributes(attrs map[string]string) {
	b.attrs.Append(true)
	switch len(attrs) {
	case 0:
		return
	case 1:
		for k, v := range attrs {
			b.entries.Append(true)
			b.keys.BinaryBuilder.Append(bytesOf(k))
			b.vals.BinaryBuilder.Append(bytesOf(v))
			b.bytes += 8 + len(k) + len(v)
		}
		return
	}
	keys := b.keyBuf[:0]
	for k := range attrs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := attrs[k]
		b.entries.Append(true)
		b.keys.BinaryBuilder.Append(bytesOf(k))
		b.vals.BinaryBuilder.Append(bytesOf(v))
		b.bytes += 8 + len(k) + len(v)
	}
	clear(keys)
	b.keyBuf = keys
}

// NewBatch returns the rows appended so far as a record batch in the raw
// schema and their ack ids, in the same order, as a separate utf8 array.
// The caller releases both. The builder is reset for the next batch.
func (b *Builder) NewBatch() (rec arrow.RecordBatch, ackIDs *array.String) {
	if n := b.Len(); n > 0 {
		b.nextCap = n
	}
	b.bytes = 0
	return b.rb.NewRecordBatch(), b.ackIDs.NewStringArray()
}

// bytesOf views s as bytes without copying. Only for builder Append calls,
// which copy the bytes and never write through the slice; it avoids the
// allocation a []byte(s) conversion costs for strings over 32 bytes.
func bytesOf(s string) []byte {
	return unsafe.Slice(unsafe.StringData(s), len(s))
}
