package publisher

import (
	"bytes"
	"strconv"
	"strings"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"google.golang.org/protobuf/proto"
)

const acceptedColumns = "accepted columns: payload (binary|string, required), attributes (map<string,string>), ordering_key (string)"

// outMsg is one message ready for batching.
type outMsg struct {
	pb   *pubsubpb.PubsubMessage
	wire int   // proto.Size of the message
	size int64 // data + attribute keys and values + ordering key
}

// rowOptions are the parts of Config that shape messages.
type rowOptions struct {
	ordering    bool
	idAttribute string
	idPrefix    string
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
}

// toMessages validates rec and converts every row to a message. Every byte
// is copied: rec may be released as soon as this returns. firstRow is the
// id number of row 0 for id stamping. Nothing is returned unless every
// row is valid.
func toMessages(rec arrow.RecordBatch, opt rowOptions, firstRow int64) ([]outMsg, error) {
	cols, err := findColumns(rec)
	if err != nil {
		return nil, err
	}
	n := int(rec.NumRows())
	if n == 0 {
		return nil, nil
	}
	// One copy of the whole payload region; rows are sub-slices of it.
	data := bytes.Clone(cols.payload.ValueBytes())
	base := cols.payload.ValueOffset64(0)

	out := make([]outMsg, n)
	for i := range n {
		if cols.payload.IsNull(i) {
			return nil, invalid("row %d: payload is null (every row needs a payload; use an empty value instead)", i)
		}
		start := cols.payload.ValueOffset64(i) - base
		end := start + int64(cols.payload.ValueLen(i))
		m := &pubsubpb.PubsubMessage{Data: data[start:end:end]}

		if cols.attributes != nil && cols.attributes.IsValid(i) {
			attrs, err := rowAttributes(cols, i)
			if err != nil {
				return nil, err
			}
			m.Attributes = attrs
		}
		if cols.orderingKey != nil && cols.orderingKey.IsValid(i) {
			if k := cols.orderingKey.Value(i); k != "" {
				if !opt.ordering {
					return nil, invalid("row %d has ordering_key %.64q but message ordering is off: set enable_message_ordering=true (the subscription must enable ordering too)", i, k)
				}
				if len(k) > maxOrderingKeyBytes {
					return nil, invalid("row %d: ordering_key is %d bytes, over the %d-byte limit", i, len(k), maxOrderingKeyBytes)
				}
				m.OrderingKey = strings.Clone(k)
			}
		}
		if opt.idAttribute != "" {
			if m.Attributes == nil {
				m.Attributes = make(map[string]string, 1)
			}
			m.Attributes[opt.idAttribute] = opt.idPrefix + "-" + strconv.FormatInt(firstRow+int64(i), 10)
		}
		if err := checkMessage(i, m); err != nil {
			return nil, err
		}
		out[i] = outMsg{pb: m, wire: proto.Size(m), size: messageSize(m)}
	}
	return out, nil
}

func findColumns(rec arrow.RecordBatch) (columns, error) {
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
		default:
			return cols, invalid("unexpected column %q; %s", f.Name, acceptedColumns)
		}
	}
	if cols.payload == nil {
		return cols, invalid("missing column \"payload\"; %s", acceptedColumns)
	}
	return cols, nil
}

func isString(t arrow.DataType) bool {
	return t.ID() == arrow.STRING || t.ID() == arrow.LARGE_STRING
}

func isBinaryLike(t arrow.DataType) bool {
	return isString(t) || t.ID() == arrow.BINARY || t.ID() == arrow.LARGE_BINARY
}

func rowAttributes(cols columns, i int) (map[string]string, error) {
	start, end := cols.attributes.ValueOffsets(i)
	if end-start > maxAttributes {
		return nil, invalid("row %d has %d attributes, over the limit of %d", i, end-start, maxAttributes)
	}
	attrs := make(map[string]string, end-start+1)
	for j := int(start); j < int(end); j++ {
		if cols.keys.IsNull(j) {
			return nil, invalid("row %d: null attribute key", i)
		}
		k := cols.keys.Value(j)
		if cols.items.IsNull(j) {
			return nil, invalid("row %d: attribute %q is null (use an empty string)", i, k)
		}
		attrs[strings.Clone(k)] = strings.Clone(cols.items.Value(j))
	}
	return attrs, nil
}

// checkMessage applies the service's per-message rules so that a bad row
// fails Publish by its index instead of failing a whole request later.
func checkMessage(row int, m *pubsubpb.PubsubMessage) error {
	if len(m.Data) == 0 && len(m.Attributes) == 0 {
		return invalid("row %d: empty payload and no attributes (the service requires one of them)", row)
	}
	for k, v := range m.Attributes {
		if err := checkAttributeKey(k); err != nil {
			return invalid("row %d: %v", row, err)
		}
		if len(v) > maxAttributeValueBytes {
			return invalid("row %d: attribute %q value is %d bytes, over the %d-byte limit", row, k, len(v), maxAttributeValueBytes)
		}
	}
	if len(m.Attributes) > maxAttributes {
		return invalid("row %d has %d attributes (with id_attribute), over the limit of %d", row, len(m.Attributes), maxAttributes)
	}
	if size := messageSize(m); size > maxMessageSize {
		return invalid("row %d: message is %d bytes (payload + attributes + ordering key), over the %d-byte limit", row, size, maxMessageSize)
	}
	return nil
}

// messageSize is the size the service counts against its message limit.
func messageSize(m *pubsubpb.PubsubMessage) int64 {
	n := int64(len(m.Data) + len(m.OrderingKey))
	for k, v := range m.Attributes {
		n += int64(len(k) + len(v))
	}
	return n
}
