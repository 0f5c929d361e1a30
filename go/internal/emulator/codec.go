package emulator

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
)

// codec is gRPC's proto codec, except that a PublishRequest is read from
// one copy of its bytes, its messages' data left where they lie in it: the
// stored message keeps that copy, instead of one allocation and one copy
// per message (what publishing at data-plane speed costs most here).
type codec struct {
	encoding.CodecV2
}

func newCodec() codec {
	c := encoding.GetCodecV2(proto.Name)
	if c == nil {
		panic("emulator: gRPC's proto codec is not registered")
	}
	return codec{c}
}

func (c codec) Unmarshal(data mem.BufferSlice, v any) error {
	if m, ok := v.(*pubsubpb.PublishRequest); ok {
		return unmarshalPublish(data.Materialize(), m)
	}
	return c.CodecV2.Unmarshal(data, v)
}

var errTruncated = errors.New("publish request: truncated or malformed protobuf")

// unmarshalPublish reads PublishRequest{1: topic, 2: repeated PubsubMessage}.
func unmarshalPublish(b []byte, m *pubsubpb.PublishRequest) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return errTruncated
		}
		b = b[n:]
		if typ == protowire.BytesType && (num == 1 || num == 2) {
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return errTruncated
			}
			b = b[n:]
			if num == 1 {
				if !utf8.Valid(v) {
					return errors.New("publish request: topic is not UTF-8")
				}
				m.Topic = string(v)
				continue
			}
			msg, err := unmarshalMessage(v)
			if err != nil {
				return err
			}
			m.Messages = append(m.Messages, msg)
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return errTruncated
		}
		b = b[n:]
	}
	return nil
}

// unmarshalMessage reads the fields of a PubsubMessage a publisher sets:
// 1 data (aliased), 2 attributes, 5 ordering_key; others are skipped.
func unmarshalMessage(b []byte) (*pubsubpb.PubsubMessage, error) {
	m := &pubsubpb.PubsubMessage{}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, errTruncated
		}
		b = b[n:]
		if typ != protowire.BytesType || (num != 1 && num != 2 && num != 5) {
			n = protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return nil, errTruncated
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return nil, errTruncated
		}
		b = b[n:]
		switch num {
		case 1:
			m.Data = v[:len(v):len(v)]
		case 2:
			k, val, err := unmarshalEntry(v)
			if err != nil {
				return nil, err
			}
			if m.Attributes == nil {
				m.Attributes = map[string]string{}
			}
			m.Attributes[k] = val
		case 5:
			if !utf8.Valid(v) {
				return nil, errors.New("publish request: an ordering key is not UTF-8")
			}
			m.OrderingKey = string(v)
		}
	}
	return m, nil
}

// unmarshalEntry reads a map<string, string> entry {1: key, 2: value}.
func unmarshalEntry(b []byte) (k, v string, err error) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return "", "", errTruncated
		}
		b = b[n:]
		if typ != protowire.BytesType || (num != 1 && num != 2) {
			n = protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return "", "", errTruncated
			}
			b = b[n:]
			continue
		}
		s, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return "", "", errTruncated
		}
		b = b[n:]
		if !utf8.Valid(s) {
			return "", "", fmt.Errorf("publish request: attribute %s is not UTF-8", map[protowire.Number]string{1: "key", 2: "value"}[num])
		}
		if num == 1 {
			k = string(s)
		} else {
			v = string(s)
		}
	}
	return k, v, nil
}
