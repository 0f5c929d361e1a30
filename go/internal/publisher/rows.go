package publisher

import (
	"encoding/binary"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

const acceptedColumns = "accepted columns: payload (binary|string, required), attributes (map<string,string>), ordering_key (string), and the timestamp_column (timestamp) when timestamp_attribute is set"

// knownColumn reports whether name is one of the message's own columns.
func knownColumn(name string) bool {
	return name == "payload" || name == "attributes" || name == "ordering_key"
}

// outMsg is one message ready for batching: its entry in a
// PublishRequest's messages field, already encoded, so a request is sent
// as the topic plus its entries back to back (request.go) and no
// PubsubMessage, attribute map or cloned payload is made per row (those,
// proto.Size and protobuf's marshal were 0.5-0.6 us of a 1 KB message,
// BenchmarkToRequest1KB).
type outMsg struct {
	entry []byte // field tag, length prefix and the encoded PubsubMessage
	key   string // ordering key; "" none
	size  int64  // data + attribute keys and values + ordering key
	chunk *chunk // the buffer entry lies in
}

// rowOptions are the parts of Config that shape messages.
type rowOptions struct {
	ordering    bool
	idAttribute string
	idPrefix    string
	tsAttribute string // stamped with tsColumn's value in epoch millis
	tsColumn    string
}

// varBinary is the common read API of binary, string and their large
// variants.
type varBinary interface {
	arrow.Array
	ValueBytes() []byte
	ValueOffset64(i int) int64
	ValueLen(i int) int
}

// stringArray is the common read API of string and large_string.
type stringArray interface {
	arrow.Array
	Value(i int) string
}

// columns are the recognised columns of one record.
type columns struct {
	payload     varBinary
	attributes  *array.Map
	keys, items stringArray // the attributes map's entries
	orderingKey stringArray
	timestamp   *array.Timestamp
	tsPerMilli  int64 // timestamp units per millisecond (0: coarser than ms)
	tsMilliPer  int64 // milliseconds per unit, for second timestamps
}

// encodeRows validates rec and encodes every row as a message. Every byte
// is copied (into one chunk from pool per call that the entries slice): rec
// may be released as soon as this returns. firstRow is the id number of row
// 0 for id stamping. out is reused when it has room. Nothing is returned
// unless every row is valid; the chunk, if any, carries the caller's
// reference, to release once the entries are queued.
func encodeRows(rec arrow.RecordBatch, opt rowOptions, firstRow int64, pool *chunkPool, out []outMsg) ([]outMsg, *chunk, error) {
	cols, err := findColumns(rec, opt)
	if err != nil {
		return nil, nil, err
	}
	n := int(rec.NumRows())
	if n == 0 {
		return nil, nil, nil
	}
	payloads := cols.payload.ValueBytes()
	base := cols.payload.ValueOffset64(0)
	c := pool.get(encodedBound(cols, n, opt))
	buf := c.buf
	if cap(out) >= n {
		out = out[:n]
	} else {
		out = make([]outMsg, n)
	}
	fail := func(err error) ([]outMsg, *chunk, error) {
		c.release()
		return nil, nil, err
	}
	var e rowEncoder
	for i := range n {
		if cols.payload.IsNull(i) {
			return fail(invalid("row %d: payload is null (every row needs a payload; use an empty value instead)", i))
		}
		start := cols.payload.ValueOffset64(i) - base
		e.reset(payloads[start : start+int64(cols.payload.ValueLen(i))])
		if cols.attributes != nil && cols.attributes.IsValid(i) {
			if err := e.addAttributes(cols, i, opt.idAttribute); err != nil {
				return fail(err)
			}
		}
		if cols.orderingKey != nil && cols.orderingKey.IsValid(i) {
			if k := cols.orderingKey.Value(i); k != "" {
				if !opt.ordering {
					return fail(invalid("row %d has ordering_key %.64q but message ordering is off: set enable_message_ordering=true (the subscription must enable ordering too)", i, k))
				}
				if len(k) > maxOrderingKeyBytes {
					return fail(invalid("row %d: ordering_key is %d bytes, over the %d-byte limit", i, len(k), maxOrderingKeyBytes))
				}
				e.key = k
			}
		}
		if cols.timestamp != nil {
			if cols.timestamp.IsNull(i) {
				return fail(invalid("row %d: %s is null; timestamp_attribute %q needs every row's event time", i, opt.tsColumn, opt.tsAttribute))
			}
			e.stampTimestamp(opt.tsAttribute, cols.millis(i))
		}
		if opt.idAttribute != "" {
			e.stampID(opt.idAttribute, opt.idPrefix, firstRow+int64(i))
		}
		size, err := e.check(i)
		if err != nil {
			return fail(err)
		}
		from := len(buf)
		buf = e.appendEntry(buf)
		out[i] = outMsg{entry: buf[from:len(buf):len(buf)], key: strings.Clone(e.key), size: size, chunk: c}
	}
	c.buf = buf
	return out, c, nil
}

// millis is row i's timestamp in epoch milliseconds, rounded down (as
// Beam's Instant keeps event times).
func (c columns) millis(i int) int64 {
	v := int64(c.timestamp.Value(i))
	if c.tsPerMilli == 0 {
		return v * c.tsMilliPer
	}
	q := v / c.tsPerMilli
	if v%c.tsPerMilli < 0 {
		q--
	}
	return q
}

func findColumns(rec arrow.RecordBatch, opt rowOptions) (columns, error) {
	var cols columns
	seen := map[string]bool{}
	for i, f := range rec.Schema().Fields() {
		if seen[f.Name] {
			return cols, invalid("duplicate column %q; %s", f.Name, acceptedColumns)
		}
		seen[f.Name] = true
		col := rec.Column(i)
		switch f.Name {
		case "payload":
			p, ok := col.(varBinary)
			if !ok || !isBinaryLike(f.Type) {
				return cols, invalid("column \"payload\" has type %s; %s", f.Type, acceptedColumns)
			}
			cols.payload = p
		case "attributes":
			m, ok := col.(*array.Map)
			if !ok {
				return cols, invalid("column \"attributes\" has type %s; %s", f.Type, acceptedColumns)
			}
			entries := m.ListValues().(*array.Struct)
			k, kok := entries.Field(0).(stringArray)
			v, vok := entries.Field(1).(stringArray)
			if !kok || !vok || !isString(entries.Field(0).DataType()) || !isString(entries.Field(1).DataType()) {
				return cols, invalid("column \"attributes\" has type %s; %s", f.Type, acceptedColumns)
			}
			cols.attributes, cols.keys, cols.items = m, k, v
		case "ordering_key":
			k, ok := col.(stringArray)
			if !ok || !isString(f.Type) {
				return cols, invalid("column \"ordering_key\" has type %s; %s", f.Type, acceptedColumns)
			}
			cols.orderingKey = k
		case opt.tsColumn:
			ts, ok := col.(*array.Timestamp)
			if !ok || opt.tsColumn == "" {
				return cols, invalid("column %q has type %s; timestamp_attribute %q takes a timestamp column", f.Name, f.Type, opt.tsAttribute)
			}
			switch ts.DataType().(*arrow.TimestampType).Unit {
			case arrow.Second:
				cols.tsMilliPer = 1000
			case arrow.Millisecond:
				cols.tsPerMilli = 1
			case arrow.Microsecond:
				cols.tsPerMilli = 1000
			case arrow.Nanosecond:
				cols.tsPerMilli = 1_000_000
			}
			cols.timestamp = ts
		default:
			return cols, invalid("unexpected column %q; %s", f.Name, acceptedColumns)
		}
	}
	if cols.payload == nil {
		return cols, invalid("missing column \"payload\"; %s", acceptedColumns)
	}
	if opt.tsColumn != "" && cols.timestamp == nil {
		return cols, invalid("missing column %q: timestamp_attribute %q takes the event time from it", opt.tsColumn, opt.tsAttribute)
	}
	return cols, nil
}

func isString(t arrow.DataType) bool {
	return t.ID() == arrow.STRING || t.ID() == arrow.LARGE_STRING
}

func isBinaryLike(t arrow.DataType) bool {
	return isString(t) || t.ID() == arrow.BINARY || t.ID() == arrow.LARGE_BINARY
}

// encodedBound is the most bytes toMessages' entries can take: every
// value's bytes plus the most framing each can carry (a tag and a 10-byte
// length; a stamped id's digits and prefix besides), so the one buffer is
// never regrown (a regrowth would copy every payload again).
func encodedBound(cols columns, n int, opt rowOptions) int {
	const framing = 1 + binary.MaxVarintLen64
	bound := n*(framing+framing) + len(cols.payload.ValueBytes())
	if cols.attributes != nil {
		entries := int(cols.keys.Len())
		bound += entries*(3*framing) + varBytes(cols.keys) + varBytes(cols.items)
	}
	if cols.orderingKey != nil {
		bound += n*framing + varBytes(cols.orderingKey)
	}
	if opt.idAttribute != "" {
		bound += n * (3*framing + len(opt.idAttribute) + len(opt.idPrefix) + 1 + 20)
	}
	if opt.tsAttribute != "" {
		bound += n * (3*framing + len(opt.tsAttribute) + 20)
	}
	return bound
}

// varBytes is the length of a string array's value buffer (0 if it has no
// such buffer).
func varBytes(a stringArray) int {
	if v, ok := a.(varBinary); ok {
		return len(v.ValueBytes())
	}
	return 0
}
