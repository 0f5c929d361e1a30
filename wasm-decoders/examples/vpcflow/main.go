// Command vpcflow is an example custom decoder: VPC flow log records in
// the AWS default (version 2) format, one space-separated line per
// payload:
//
//	version account-id interface-id srcaddr dstaddr srcport dstport
//	protocol packets bytes start end action log-status
//
// "-" marks a missing value (e.g. NODATA records) and becomes null. The
// host's target schema may pick any of the columns, in any order; without
// one, all columns are produced.
//
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o vpcflow.wasm .
package main

import (
	"bytes"
	"fmt"
	"strconv"

	"github.com/pubsub-go/pubsub-go/wasm-decoders/arrowlite"
	"github.com/pubsub-go/pubsub-go/wasm-decoders/sdk"
)

type kind int

const (
	text kind = iota
	int32Col
	int64Col
	epochSeconds
)

// columns are the fields of a record, in line order.
var columns = []struct {
	name string
	kind kind
}{
	{"version", int32Col}, {"account_id", text}, {"interface_id", text},
	{"srcaddr", text}, {"dstaddr", text}, {"srcport", int32Col}, {"dstport", int32Col},
	{"protocol", int32Col}, {"packets", int64Col}, {"bytes", int64Col},
	{"start", epochSeconds}, {"end", epochSeconds}, {"action", text}, {"log_status", text},
}

func arrowType(k kind) *arrowlite.DataType {
	switch k {
	case int32Col:
		return arrowlite.IntType(32, true)
	case int64Col:
		return arrowlite.IntType(64, true)
	case epochSeconds:
		return arrowlite.TimestampType(arrowlite.Microsecond, "UTC")
	}
	return arrowlite.Utf8Type()
}

// decoder maps line position i to output column out[i] (-1: not wanted).
type decoder struct{ out []int }

func newDecoder(cfg sdk.Config) (sdk.Decoder, *arrowlite.Schema, error) {
	schema := cfg.Schema
	if schema == nil {
		schema = &arrowlite.Schema{}
		for _, c := range columns {
			schema.Fields = append(schema.Fields, arrowlite.Field{Name: c.name, Nullable: true, Type: arrowType(c.kind)})
		}
	}
	d := &decoder{out: make([]int, len(columns))}
	for i, c := range columns {
		d.out[i] = schema.FieldIndex(c.name)
		if j := d.out[i]; j >= 0 && schema.Fields[j].Type.String() != arrowType(c.kind).String() {
			return nil, nil, fmt.Errorf("vpcflow: column %s must be %s, not %s", c.name, arrowType(c.kind), schema.Fields[j].Type)
		}
	}
	for _, f := range schema.Fields {
		found := false
		for _, c := range columns {
			found = found || c.name == f.Name
		}
		if !found {
			return nil, nil, fmt.Errorf("vpcflow: unknown column %q", f.Name)
		}
	}
	return d, schema, nil
}

func (d *decoder) Decode(line []byte, cols []*arrowlite.Builder) error {
	fields := bytes.Fields(line)
	if len(fields) != len(columns) {
		return fmt.Errorf("want %d space-separated fields, got %d", len(columns), len(fields))
	}
	for i, f := range fields {
		j := d.out[i]
		if j < 0 {
			continue
		}
		b := cols[j]
		if string(f) == "-" {
			b.AppendNull()
			continue
		}
		switch columns[i].kind {
		case text:
			b.AppendBytes(f)
		default:
			bits := 64
			if columns[i].kind == int32Col {
				bits = 32
			}
			v, err := strconv.ParseInt(string(f), 10, bits)
			if err != nil {
				return fmt.Errorf("%s: %q is not a number", columns[i].name, f)
			}
			if columns[i].kind == epochSeconds {
				v *= 1e6
			}
			b.AppendInt(v)
		}
	}
	return nil
}

func init() { sdk.Register(newDecoder) }

func main() {}
