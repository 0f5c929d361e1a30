// Package rawbatch appends received messages (wire views, see package wire)
// straight into Arrow builders, producing record batches in the connector's
// raw schema plus the matching ack ids as a separate array.
package rawbatch

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/pubsub-go/pubsub-go/go/internal/wire"
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
	payload binaryColumn // not an arrow-go builder: see binary.go
	okey    *array.StringBuilder
	attempt *array.Int32Builder
	ackIDs  *array.StringBuilder

	bytes int
	cur   shape // of the rows appended since the last NewBatch
	prev  shape // of the last non-empty batch: what the next one reserves
}

// shape is what a batch needs from each buffer: rows, attribute entries
// and the value bytes of every variable-width column.
type shape struct {
	rows, attrs                          int
	id, keys, vals, payload, okey, ackID int
}

// NewBuilder returns a Builder whose buffers come from mem (in production
// C memory (cmem), so batches can be exported through the C Data Interface).
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
		payload: binaryColumn{mem: mem},
		okey:    rb.Field(ColOrderingKey).(*array.StringBuilder),
		attempt: rb.Field(ColDeliveryAttempt).(*array.Int32Builder),
		ackIDs:  array.NewStringBuilder(mem),
	}
}

// Release frees the builder's buffers (not those of batches already built).
func (b *Builder) Release() {
	b.rb.Release()
	b.ackIDs.Release()
	b.payload.release()
}

// Len is the number of rows appended since the last NewBatch.
func (b *Builder) Len() int { return b.ackIDs.Len() }

// Bytes approximates the Arrow memory the pending rows will occupy.
func (b *Builder) Bytes() int { return b.bytes }

// reserve sizes every buffer of a fresh batch like the previous batch plus
// an eighth, so a steady stream of similar batches appends without growing
// buffers by doubling (each growth is a realloc and copy in C memory, and
// the rounding up to a power of two wastes up to half).
func (b *Builder) reserve() {
	p := b.prev
	if p.rows == 0 {
		return
	}
	more := func(n int) int { return n + n/8 }
	rows := more(p.rows)
	grow(b.id, rows)
	grow(b.ts, rows)
	grow(b.attrs, rows+1) // the list offsets take one more entry
	grow(b.okey, rows)
	grow(b.attempt, rows)
	grow(b.ackIDs, rows)
	grow(b.entries, more(p.attrs)) // the struct's own validity only
	grow(b.keys, more(p.attrs))
	grow(b.vals, more(p.attrs))
	b.id.ReserveData(more(p.id))
	b.keys.ReserveData(more(p.keys))
	b.vals.ReserveData(more(p.vals))
	b.payload.reserve(rows, more(p.payload))
	b.okey.ReserveData(more(p.okey))
	b.ackIDs.ReserveData(more(p.ackID))
}

// grow makes room for n rows in bl. It resizes to the exact length rather
// than calling Reserve, which rounds up to a power of two.
func grow(bl array.Builder, n int) {
	if bl.Cap() < n {
		bl.Resize(n)
	}
}

// Append adds one message as a row. Absent parts follow the raw schema:
// no ordering key and delivery attempt 0 (no dead-letter policy) are null,
// no attributes is an empty map, no data is an empty payload. The bytes
// are copied; m may be reused afterwards.
func (b *Builder) Append(m *wire.Message) {
	if b.cur.rows == 0 {
		b.reserve()
	}
	c := &b.cur
	c.rows++
	c.id += len(m.MessageID)
	c.payload += len(m.Data)
	c.okey += len(m.OrderingKey)
	c.ackID += len(m.AckID)
	b.bytes += rowOverhead + len(m.MessageID) + len(m.Data) + len(m.OrderingKey) + len(m.AckID)

	b.id.BinaryBuilder.Append(m.MessageID)
	if m.HasPublishTime {
		// Exact for any Timestamp with microsecond precision; sub-microsecond
		// nanos are truncated (nanos is never negative, so this floors).
		b.ts.Append(arrow.Timestamp(m.PublishSeconds*1_000_000 + int64(m.PublishNanos)/1_000))
	} else {
		b.ts.AppendNull()
	}

	// Entries are appended to the struct builder as we go: left to the map
	// builder, it catches up at NewBatch with a Reserve that regrows the
	// already full key and value buffers.
	b.attrs.Append(true)
	for _, a := range m.Attributes {
		b.entries.Append(true)
		b.keys.BinaryBuilder.Append(a.Key)
		b.vals.BinaryBuilder.Append(a.Value)
		c.attrs++
		c.keys += len(a.Key)
		c.vals += len(a.Value)
		b.bytes += 8 + len(a.Key) + len(a.Value)
	}

	b.payload.append(m.Data) // nil appends a valid empty value
	if len(m.OrderingKey) > 0 {
		b.okey.BinaryBuilder.Append(m.OrderingKey)
	} else {
		b.okey.AppendNull()
	}
	if m.DeliveryAttempt > 0 {
		b.attempt.Append(m.DeliveryAttempt)
	} else {
		b.attempt.AppendNull()
	}
	b.ackIDs.BinaryBuilder.Append(m.AckID)
}

// NewBatch returns the rows appended so far as a record batch in the raw
// schema and their ack ids, in the same order, as a separate utf8 array.
// The caller releases both. The builder is reset for the next batch.
func (b *Builder) NewBatch() (rec arrow.RecordBatch, ackIDs *array.String) {
	if b.cur.rows > 0 {
		b.prev = b.cur
	}
	b.cur = shape{}
	b.bytes = 0
	// The record builder's payload field stays empty: the column is
	// built apart (binary.go).
	cols := make([]arrow.Array, len(schema.Fields()))
	for i := range cols {
		if i == ColPayload {
			cols[i] = b.payload.finish()
		} else {
			cols[i] = b.rb.Field(i).NewArray()
		}
	}
	rows := int64(cols[ColPayload].Len())
	rec = array.NewRecordBatch(schema, cols, rows)
	for _, c := range cols {
		c.Release()
	}
	return rec, b.ackIDs.NewStringArray()
}
