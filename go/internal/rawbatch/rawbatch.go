// Package rawbatch appends received messages (wire views, see package wire)
// straight into Arrow buffers (columns.go), producing record batches in the
// connector's raw schema plus the matching ack ids as a separate array.
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

// Builder accumulates messages into the raw schema, each column written
// straight into its Arrow buffers (columns.go). It is not safe for
// concurrent use. A Builder can build many batches; call Release when done.
type Builder struct {
	id      varColumn
	ts      fixedColumn[int64]
	attrOff fixedColumn[int32] // the map's offsets into keys and vals
	keys    varColumn
	vals    varColumn
	payload varColumn
	okey    varColumn
	attempt fixedColumn[int32]
	ackIDs  varColumn

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
	str := func() varColumn { return varColumn{typ: arrow.BinaryTypes.String, mem: mem} }
	return &Builder{
		id:      str(),
		ts:      fixedColumn[int64]{typ: PublishTimeType, mem: mem},
		attrOff: fixedColumn[int32]{mem: mem},
		keys:    str(),
		vals:    str(),
		payload: varColumn{typ: arrow.BinaryTypes.Binary, mem: mem},
		okey:    str(),
		attempt: fixedColumn[int32]{typ: arrow.PrimitiveTypes.Int32, mem: mem},
		ackIDs:  str(),
	}
}

// Release frees the builder's buffers (not those of batches already built).
func (b *Builder) Release() {
	for _, c := range b.varColumns() {
		c.release()
	}
	b.ts.release()
	b.attrOff.release()
	b.attempt.release()
}

// grows counts the buffers moved to a larger one while rows were appended
// (reserve sized them too small); tests check steady batches make none.
func (b *Builder) grows() int {
	n := b.ts.grows + b.ts.valid.grows + b.attrOff.grows + b.attempt.grows + b.attempt.valid.grows
	for _, c := range b.varColumns() {
		n += c.grows + c.valid.grows
	}
	return n
}

// varColumns are the builder's utf8 and binary columns.
func (b *Builder) varColumns() []*varColumn {
	return []*varColumn{&b.id, &b.keys, &b.vals, &b.payload, &b.okey, &b.ackIDs}
}

// Len is the number of rows appended since the last NewBatch.
func (b *Builder) Len() int { return b.cur.rows }

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
	b.id.reserve(rows, more(p.id))
	b.ts.reserve(rows)
	b.attrOff.reserve(rows + 1) // the list offsets take one more entry
	b.keys.reserve(more(p.attrs), more(p.keys))
	b.vals.reserve(more(p.attrs), more(p.vals))
	b.payload.reserve(rows, more(p.payload))
	b.okey.reserve(rows, more(p.okey))
	b.attempt.reserve(rows)
	b.ackIDs.reserve(rows, more(p.ackID))
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

	b.id.append(m.MessageID)
	if m.HasPublishTime {
		// Exact for any Timestamp with microsecond precision; sub-microsecond
		// nanos are truncated (nanos is never negative, so this floors).
		b.ts.append(m.PublishSeconds*1_000_000 + int64(m.PublishNanos)/1_000)
	} else {
		b.ts.appendNull()
	}

	// The map's offsets: where this row's entries start; the entries
	// themselves are the key and value columns.
	b.attrOff.append(int32(c.attrs))
	for _, a := range m.Attributes {
		b.keys.append(a.Key)
		b.vals.append(a.Value)
		c.attrs++
		c.keys += len(a.Key)
		c.vals += len(a.Value)
		b.bytes += 8 + len(a.Key) + len(a.Value)
	}

	b.payload.append(m.Data) // nil appends a valid empty value
	if len(m.OrderingKey) > 0 {
		b.okey.append(m.OrderingKey)
	} else {
		b.okey.appendNull()
	}
	if m.DeliveryAttempt > 0 {
		b.attempt.append(m.DeliveryAttempt)
	} else {
		b.attempt.appendNull()
	}
	b.ackIDs.append(m.AckID)
}

// NewBatch returns the rows appended so far as a record batch in the raw
// schema and their ack ids, in the same order, as a separate utf8 array.
// The caller releases both. The builder is reset for the next batch.
func (b *Builder) NewBatch() (rec arrow.RecordBatch, ackIDs *array.String) {
	rows, attrs := b.cur.rows, b.cur.attrs
	if rows > 0 {
		b.prev = b.cur
	}
	b.cur = shape{}
	b.bytes = 0

	b.attrOff.append(int32(attrs)) // the end of the last row's entries
	entries := makeArray(AttributesType.Elem(), attrs, 0, []*memory.Buffer{nil},
		[]arrow.ArrayData{b.keys.finish(), b.vals.finish()})
	datas := make([]arrow.ArrayData, len(schema.Fields()))
	datas[ColMessageID] = b.id.finish()
	datas[ColPublishTime] = b.ts.finish()
	datas[ColAttributes] = makeArray(AttributesType, rows, 0, []*memory.Buffer{nil, b.attrOff.takeBuffer()},
		[]arrow.ArrayData{entries})
	datas[ColPayload] = b.payload.finish()
	datas[ColOrderingKey] = b.okey.finish()
	datas[ColDeliveryAttempt] = b.attempt.finish()
	cols := make([]arrow.Array, len(datas))
	for i, d := range datas {
		cols[i] = array.MakeFromData(d)
		d.Release()
	}
	rec = array.NewRecordBatch(schema, cols, int64(rows))
	for _, c := range cols {
		c.Release()
	}
	acks := b.ackIDs.finish()
	defer acks.Release()
	return rec, array.MakeFromData(acks).(*array.String)
}
