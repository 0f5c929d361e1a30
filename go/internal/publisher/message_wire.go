package publisher

import (
	"strconv"

	"google.golang.org/protobuf/encoding/protowire"
)

// A row is written straight into protobuf wire format, as the service's
// PublishRequest carries it, from views of the record's values: the
// payload and every attribute are copied once, into the entry.

// Field numbers from google/pubsub/v1/pubsub.proto (PublishRequest,
// PubsubMessage) and the map-entry convention (key 1, value 2).
const (
	fieldRequestTopic     protowire.Number = 1 // PublishRequest.topic
	fieldRequestMessages  protowire.Number = 2 // PublishRequest.messages
	fieldMessageData      protowire.Number = 1 // PubsubMessage.data
	fieldMessageAttribute protowire.Number = 2 // PubsubMessage.attributes (map entries)
	fieldMessageOrdering  protowire.Number = 5 // PubsubMessage.ordering_key
	fieldMapKey           protowire.Number = 1
	fieldMapValue         protowire.Number = 2
)

// attr is one attribute, viewed in the record (or the stamped id).
type attr struct{ k, v string }

// rowEncoder gathers one row's fields, checks them and appends the row's
// encoded entry; its scratch space is reused from row to row.
type rowEncoder struct {
	data  []byte
	attrs []attr
	key   string
	id    []byte // scratch for a stamped id value
	ts    []byte // scratch for a stamped timestamp
}

func (e *rowEncoder) reset(data []byte) {
	e.data, e.attrs, e.key = data, e.attrs[:0], ""
}

// addAttributes takes row i's attributes. A key given twice keeps its last
// value, as a map would; idAttribute is left out (stampID sets it).
func (e *rowEncoder) addAttributes(cols columns, i int, idAttribute string) error {
	start, end := cols.attributes.ValueOffsets(i)
	if end-start > maxAttributes {
		return invalid("row %d has %d attributes, over the limit of %d", i, end-start, maxAttributes)
	}
	for j := int(start); j < int(end); j++ {
		if cols.keys.IsNull(j) {
			return invalid("row %d: null attribute key", i)
		}
		k := cols.keys.Value(j)
		if cols.items.IsNull(j) {
			return invalid("row %d: attribute %q is null (use an empty string)", i, k)
		}
		if idAttribute != "" && k == idAttribute {
			continue
		}
		e.set(k, cols.items.Value(j))
	}
	return nil
}

// set adds k or replaces its value.
func (e *rowEncoder) set(k, v string) {
	for n := range e.attrs {
		if e.attrs[n].k == k {
			e.attrs[n].v = v
			return
		}
	}
	e.attrs = append(e.attrs, attr{k, v})
}

// stampID sets the id attribute to prefix-row.
func (e *rowEncoder) stampID(name, prefix string, row int64) {
	e.id = append(append(append(e.id[:0], prefix...), '-'), strconv.FormatInt(row, 10)...)
	e.attrs = append(e.attrs, attr{name, string(e.id)})
}

// stampTimestamp sets attribute name to ms in decimal, replacing a
// same-named attribute of the row.
func (e *rowEncoder) stampTimestamp(name string, ms int64) {
	e.ts = strconv.AppendInt(e.ts[:0], ms, 10)
	e.set(name, string(e.ts))
}

// check applies the service's per-message rules so that a bad row fails
// Publish by its index instead of failing a whole request later; it
// returns the row's size (size()).
func (e *rowEncoder) check(row int) (int64, error) {
	if len(e.data) == 0 && len(e.attrs) == 0 {
		return 0, invalid("row %d: empty payload and no attributes (the service requires one of them)", row)
	}
	for _, a := range e.attrs {
		if err := checkAttributeKey(a.k); err != nil {
			return 0, invalid("row %d: %v", row, err)
		}
		if len(a.v) > maxAttributeValueBytes {
			return 0, invalid("row %d: attribute %q value is %d bytes, over the %d-byte limit", row, a.k, len(a.v), maxAttributeValueBytes)
		}
	}
	if len(e.attrs) > maxAttributes {
		return 0, invalid("row %d has %d attributes (with id_attribute), over the limit of %d", row, len(e.attrs), maxAttributes)
	}
	size := e.size()
	if size > maxMessageSize {
		return 0, invalid("row %d: message is %d bytes (payload + attributes + ordering key), over the %d-byte limit", row, size, maxMessageSize)
	}
	return size, nil
}

// size is what the service counts against its message limit.
func (e *rowEncoder) size() int64 {
	n := int64(len(e.data) + len(e.key))
	for _, a := range e.attrs {
		n += int64(len(a.k) + len(a.v))
	}
	return n
}

// appendEntry appends the row as one element of PublishRequest.messages.
// Empty data and an empty ordering key are left out, as protobuf leaves
// out proto3 defaults; a map entry always has both its fields.
func (e *rowEncoder) appendEntry(b []byte) []byte {
	msg := 0
	if len(e.data) > 0 {
		msg += bytesField(len(e.data))
	}
	for _, a := range e.attrs {
		msg += bytesField(mapEntrySize(a))
	}
	if e.key != "" {
		msg += bytesField(len(e.key))
	}
	b = protowire.AppendTag(b, fieldRequestMessages, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(msg))
	if len(e.data) > 0 {
		b = protowire.AppendTag(b, fieldMessageData, protowire.BytesType)
		b = protowire.AppendBytes(b, e.data)
	}
	for _, a := range e.attrs {
		b = protowire.AppendTag(b, fieldMessageAttribute, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(mapEntrySize(a)))
		b = protowire.AppendTag(b, fieldMapKey, protowire.BytesType)
		b = protowire.AppendString(b, a.k)
		b = protowire.AppendTag(b, fieldMapValue, protowire.BytesType)
		b = protowire.AppendString(b, a.v)
	}
	if e.key != "" {
		b = protowire.AppendTag(b, fieldMessageOrdering, protowire.BytesType)
		b = protowire.AppendString(b, e.key)
	}
	return b
}

// bytesField is the encoded size of a length-delimited field (numbers
// below 16) of n bytes.
func bytesField(n int) int { return 1 + protowire.SizeVarint(uint64(n)) + n }

func mapEntrySize(a attr) int { return bytesField(len(a.k)) + bytesField(len(a.v)) }
