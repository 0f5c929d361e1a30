// Package wire decodes StreamingPullResponse messages straight from their
// protobuf encoding into views of the response bytes: no Go struct, map or
// string per message, so the subscriber's hot path allocates (and the GC
// scans) almost nothing, and the bytes go once from the wire into Arrow.
//
// Only the fields the connector uses are kept; unknown fields are skipped
// as protobuf requires. Strings are checked for valid UTF-8 like
// google.golang.org/protobuf does for proto3.
package wire

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
)

// Field numbers from google/pubsub/v1/pubsub.proto.
const (
	respReceivedMessages = 1

	recvAckID           = 1
	recvMessage         = 2
	recvDeliveryAttempt = 3

	msgData        = 1
	msgAttributes  = 2
	msgMessageID   = 3
	msgPublishTime = 4
	msgOrderingKey = 5

	mapKey   = 1
	mapValue = 2

	tsSeconds = 1
	tsNanos   = 2
)

// Attribute is one attribute of a message.
type Attribute struct {
	Key, Value []byte
}

// Message is one ReceivedMessage. Its slices point into the response bytes
// and are valid until the next Parse of the Response that holds it.
type Message struct {
	AckID       []byte
	MessageID   []byte
	Data        []byte
	OrderingKey []byte
	// Attributes are sorted by key, keys unique (the last of duplicates
	// wins, as in protobuf maps), so equal messages give equal rows.
	Attributes []Attribute

	HasPublishTime   bool
	PublishSeconds   int64
	PublishNanos     int32
	DeliveryAttempt  int32
	attrStart, attrN int // into Response.attrs while parsing
}

// Size approximates the message as Pub/Sub counts it for flow control:
// data, attributes, ordering key and ids.
func (m *Message) Size() int64 {
	n := len(m.Data) + len(m.MessageID) + len(m.OrderingKey) + len(m.AckID)
	for _, a := range m.Attributes {
		n += len(a.Key) + len(a.Value)
	}
	return int64(n)
}

// Response is a decoded StreamingPullResponse. Reuse one across Parse
// calls: its slices keep their capacity.
type Response struct {
	Messages []Message
	attrs    []Attribute
	scratch  []byte // ParseSegments' copies of messages split across segments
}

// Parse decodes b, replacing r's contents. On error r is unusable until
// the next successful Parse.
func (r *Response) Parse(b []byte) error {
	r.Messages = r.Messages[:0]
	r.attrs = r.attrs[:0]
	for len(b) > 0 {
		num, typ, n := consumeTag(b)
		if n < 0 {
			return malformed("StreamingPullResponse", n)
		}
		b = b[n:]
		if num == respReceivedMessages && typ == protowire.BytesType {
			v, n := consumeBytes(b)
			if n < 0 {
				return malformed("received_messages", n)
			}
			b = b[n:]
			r.Messages = append(r.Messages, Message{})
			if err := r.parseReceived(v, &r.Messages[len(r.Messages)-1]); err != nil {
				return fmt.Errorf("received_messages[%d]: %w", len(r.Messages)-1, err)
			}
			continue
		}
		// acknowledge_confirmation, modify_ack_deadline_confirmation,
		// subscription_properties and anything newer.
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return malformed("StreamingPullResponse", n)
		}
		b = b[n:]
	}
	r.pointAttributes()
	return nil
}

// pointAttributes points each message at its attributes. They are appended
// to one slice for the whole response, so only once it stopped growing.
func (r *Response) pointAttributes() {
	for i := range r.Messages {
		m := &r.Messages[i]
		m.Attributes = r.attrs[m.attrStart : m.attrStart+m.attrN : m.attrStart+m.attrN]
	}
}

func (r *Response) parseReceived(b []byte, m *Message) error {
	for len(b) > 0 {
		num, typ, n := consumeTag(b)
		if n < 0 {
			return malformed("ReceivedMessage", n)
		}
		b = b[n:]
		switch {
		case num == recvAckID && typ == protowire.BytesType:
			v, n := consumeBytes(b)
			if n < 0 {
				return malformed("ack_id", n)
			}
			m.AckID, b = v, b[n:]
			if !shortASCII(v) && !utf8.Valid(v) {
				return invalidUTF8("ack_id")
			}
		case num == recvMessage && typ == protowire.BytesType:
			v, n := consumeBytes(b)
			if n < 0 {
				return malformed("message", n)
			}
			b = b[n:]
			if err := r.parseMessage(v, m); err != nil {
				return fmt.Errorf("message: %w", err)
			}
		case num == recvDeliveryAttempt && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return malformed("delivery_attempt", n)
			}
			m.DeliveryAttempt, b = int32(v), b[n:]
		default:
			n := protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return malformed("ReceivedMessage", n)
			}
			b = b[n:]
		}
	}
	return nil
}

func (r *Response) parseMessage(b []byte, m *Message) error {
	m.attrStart = len(r.attrs)
	for len(b) > 0 {
		num, typ, n := consumeTag(b)
		if n < 0 {
			return malformed("PubsubMessage", n)
		}
		b = b[n:]
		if typ != protowire.BytesType || num > msgOrderingKey {
			n := protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return malformed("PubsubMessage", n)
			}
			b = b[n:]
			continue
		}
		v, n := consumeBytes(b)
		if n < 0 {
			return malformed("PubsubMessage", n)
		}
		b = b[n:]
		switch num {
		case msgData:
			m.Data = v
		case msgAttributes:
			k, val, err := parseMapEntry(v)
			if err != nil {
				return err
			}
			r.addAttribute(m, k, val)
		case msgMessageID:
			if !shortASCII(v) && !utf8.Valid(v) {
				return invalidUTF8("message_id")
			}
			m.MessageID = v
		case msgPublishTime:
			s, ns, err := parseTimestamp(v)
			if err != nil {
				return err
			}
			m.HasPublishTime, m.PublishSeconds, m.PublishNanos = true, s, ns
		case msgOrderingKey:
			if !shortASCII(v) && !utf8.Valid(v) {
				return invalidUTF8("ordering_key")
			}
			m.OrderingKey = v
		}
	}
	m.attrN = len(r.attrs) - m.attrStart
	return nil
}

// addAttribute inserts k=v into m's attributes, kept sorted by key; a
// repeated key replaces the earlier value. Messages carry a handful of
// attributes, so insertion sort beats anything cleverer.
func (r *Response) addAttribute(m *Message, k, v []byte) {
	own := r.attrs[m.attrStart:]
	i := len(own)
	for i > 0 && string(own[i-1].Key) > string(k) {
		i--
	}
	if i > 0 && string(own[i-1].Key) == string(k) {
		own[i-1].Value = v
		return
	}
	r.attrs = append(r.attrs, Attribute{})
	own = r.attrs[m.attrStart:]
	copy(own[i+1:], own[i:])
	own[i] = Attribute{Key: k, Value: v}
}

func parseMapEntry(b []byte) (k, v []byte, err error) {
	k, v = []byte{}, []byte{} // absent means empty, not null
	for len(b) > 0 {
		num, typ, n := consumeTag(b)
		if n < 0 {
			return nil, nil, malformed("attributes entry", n)
		}
		b = b[n:]
		if typ == protowire.BytesType && (num == mapKey || num == mapValue) {
			s, n := consumeBytes(b)
			if n < 0 {
				return nil, nil, malformed("attributes entry", n)
			}
			b = b[n:]
			if !shortASCII(s) && !utf8.Valid(s) {
				return nil, nil, invalidUTF8("attributes")
			}
			if num == mapKey {
				k = s
			} else {
				v = s
			}
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return nil, nil, malformed("attributes entry", n)
		}
		b = b[n:]
	}
	return k, v, nil
}

func parseTimestamp(b []byte) (secs int64, nanos int32, err error) {
	for len(b) > 0 {
		num, typ, n := consumeTag(b)
		if n < 0 {
			return 0, 0, malformed("publish_time", n)
		}
		b = b[n:]
		if typ == protowire.VarintType && (num == tsSeconds || num == tsNanos) {
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return 0, 0, malformed("publish_time", n)
			}
			b = b[n:]
			if num == tsSeconds {
				secs = int64(v)
			} else {
				nanos = int32(v)
			}
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return 0, 0, malformed("publish_time", n)
		}
		b = b[n:]
	}
	return secs, nanos, nil
}

// ErrMalformed is wrapped by every error about bytes that are not a valid
// StreamingPullResponse.
var ErrMalformed = errors.New("malformed StreamingPullResponse")

func malformed(what string, n int) error {
	return fmt.Errorf("%w: %s: %v", ErrMalformed, what, protowire.ParseError(n))
}

func invalidUTF8(field string) error {
	return fmt.Errorf("%w: %s is not valid UTF-8", ErrMalformed, field)
}
