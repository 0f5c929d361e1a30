package encode

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/pubsub-go/pubsub-go/wasm-decoders/avroschema"
)

// SinkSchema is the topic's schema the sink encodes to (schemaFrom=topic):
// the Python sink reads it on the driver with the admin op
// get_topic_schema and hands it to every publisher.
type SinkSchema struct {
	Type       string `json:"type"`     // AVRO or PROTOCOL_BUFFER
	Encoding   string `json:"encoding"` // BINARY or JSON
	Definition string `json:"definition"`
	Revision   string `json:"revision_id"` // for errors
	Name       string `json:"schema"`      // projects/P/schemas/S, for errors
}

// Encoder turns the record columns of a batch into one payload per row.
type Encoder struct {
	schema SinkSchema
	avro   *avroschema.Node
	proto  protoreflect.MessageDescriptor
	json   bool
	// The plan of the last batch schema seen: Spark hands a task batches
	// of one schema.
	planFor *arrow.Schema
	plan    *avroEnc
	pplan   *protoEnc
	planCol []int
}

// New checks the schema and parses its definition.
func New(s SinkSchema) (*Encoder, error) {
	e := &Encoder{schema: s}
	switch s.Encoding {
	case "BINARY":
	case "JSON":
		e.json = true
	default:
		return nil, fmt.Errorf("encode_schema.encoding %q: expected BINARY or JSON (the topic's schema settings)", s.Encoding)
	}
	switch s.Type {
	case "AVRO":
		n, err := avroschema.Parse(s.Definition)
		if err != nil {
			return nil, fmt.Errorf("schema %s revision %s: %v", s.Name, s.Revision, err)
		}
		if n.Kind != avroschema.Record {
			return nil, fmt.Errorf("schema %s revision %s is an Avro %s; the sink writes rows to record schemas", s.Name, s.Revision, n)
		}
		e.avro = n
	case "PROTOCOL_BUFFER":
		md, err := protoMessage(s.Definition)
		if err != nil {
			return nil, fmt.Errorf("schema %s revision %s: %v", s.Name, s.Revision, err)
		}
		e.proto = md
	default:
		return nil, fmt.Errorf("encode_schema.type %q: the sink encodes to AVRO and PROTOCOL_BUFFER schemas", s.Type)
	}
	return e, nil
}

// IsMismatch reports whether err is a column that does not fit the schema
// (found before any row is encoded) rather than a bad row.
func IsMismatch(err error) bool {
	var m *mismatchError
	return errors.As(err, &m)
}

// Encode returns rec with its record columns (every column but those in
// keep) replaced by a binary "payload" column holding each row encoded to
// the schema. The result must be released by the caller.
func (e *Encoder) Encode(rec arrow.RecordBatch, keep func(string) bool) (arrow.RecordBatch, error) {
	sch := rec.Schema()
	if e.planFor == nil || !e.planFor.Equal(sch) {
		var fields []arrow.Field
		var cols []int
		for i, f := range sch.Fields() {
			if keep(f.Name) {
				continue
			}
			if f.Name == "payload" {
				return nil, &mismatchError{"column \"payload\" does not go with schemaFrom=topic: the sink encodes the row's other columns to the topic's schema into the payload; drop it (or drop schemaFrom to write payload as it is)"}
			}
			fields = append(fields, f)
			cols = append(cols, i)
		}
		var err error
		if e.proto != nil {
			e.pplan, err = planProtoMessage("", fields, e.proto)
		} else {
			e.plan, err = planRecord("", fields, e.avro)
		}
		if err != nil {
			e.planFor = nil
			return nil, fmt.Errorf("the input does not fit schema %s revision %s: %w", e.schema.Name, e.schema.Revision, err)
		}
		e.planFor, e.planCol = sch, cols
	}
	n := int(rec.NumRows())
	b := array.NewBinaryBuilder(memory.DefaultAllocator, arrow.BinaryTypes.Binary)
	defer b.Release()
	b.Reserve(n)
	var buf []byte
	for i := range n {
		buf = buf[:0]
		var err error
		if e.proto != nil {
			if buf, err = e.protoPayload(buf, rec, i); err != nil {
				return nil, fmt.Errorf("schema %s revision %s: %w", e.schema.Name, e.schema.Revision, err)
			}
			b.Append(buf)
			continue
		}
		if e.json {
			buf = append(buf, '{')
		}
		for k, f := range e.plan.fields {
			if e.json {
				if k > 0 {
					buf = append(buf, ',')
				}
				buf = appendJSONString(buf, e.avro.Fields[k].Name)
				buf = append(buf, ':')
			}
			switch {
			case f == nil && e.json:
				buf, err = appendDefaultJSON(buf, e.avro.Fields[k].Type, e.avro.Fields[k].Default)
			case f == nil:
				buf, err = appendDefaultBin(buf, e.avro.Fields[k].Type, e.avro.Fields[k].Default)
			case e.json:
				buf, err = f.appendJSON(buf, rec.Column(e.planCol[e.plan.cols[k]]), i, i)
			default:
				buf, err = f.appendBin(buf, rec.Column(e.planCol[e.plan.cols[k]]), i, i)
			}
			if err != nil {
				return nil, fmt.Errorf("schema %s revision %s: %w", e.schema.Name, e.schema.Revision, err)
			}
		}
		if e.json {
			buf = append(buf, '}')
		}
		b.Append(buf)
	}
	payload := b.NewArray()
	defer payload.Release()
	var fields []arrow.Field
	var cols []arrow.Array
	for i, f := range sch.Fields() {
		if keep(f.Name) {
			fields = append(fields, f)
			cols = append(cols, rec.Column(i))
		}
	}
	fields = append(fields, arrow.Field{Name: "payload", Type: arrow.BinaryTypes.Binary})
	cols = append(cols, payload)
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, int64(n)), nil
}

// jsonMarshal is json.Marshal without HTML escaping (Avro JSON is not HTML).
func jsonMarshal(v any) ([]byte, error) {
	var w bytes.Buffer
	enc := json.NewEncoder(&w)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return []byte(strings.TrimSuffix(w.String(), "\n")), nil
}
