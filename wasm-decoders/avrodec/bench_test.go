package avrodec

import (
	"encoding/binary"
	"fmt"
	"math"
	"testing"

	"github.com/pubsub-go/pubsub-go/wasm-decoders/arrowlite"
	"github.com/pubsub-go/pubsub-go/wasm-decoders/sdk"
)

// BenchmarkDecodeAvroNative runs the Avro decoder compiled natively on the
// same batch as go/internal/decode's BenchmarkDecodeAvroWasm.
func BenchmarkDecodeAvroNative(b *testing.B) {
	const avro = `{"type": "record", "name": "E", "fields": [
	  {"name": "id", "type": "long"}, {"name": "name", "type": "string"},
	  {"name": "tags", "type": {"type": "array", "items": "string"}}, {"name": "score", "type": "double"},
	  {"name": "at", "type": {"type": "long", "logicalType": "timestamp-micros"}}]}`
	f := func(name string, t *arrowlite.DataType) arrowlite.Field {
		return arrowlite.Field{Name: name, Nullable: true, Type: t}
	}
	s := &arrowlite.Schema{Fields: []arrowlite.Field{
		f("id", arrowlite.IntType(64, true)), f("name", arrowlite.Utf8Type()),
		f("tags", arrowlite.ListType(f("item", arrowlite.Utf8Type()))), f("score", arrowlite.Float64Type()),
		f("at", arrowlite.TimestampType(arrowlite.Microsecond, "UTC")),
	}}
	m, err := module(b, avro, s)
	if err != nil {
		b.Fatal(err)
	}
	var payloads [][]byte
	size := 0
	for i := 0; i < 1000; i++ {
		p := zz(nil, int64(i))
		p = str(p, fmt.Sprintf("user-%d", i))
		p = zz(p, 3)
		for _, t := range []string{"alpha", "beta", "gamma"} {
			p = str(p, t)
		}
		p = zz(p, 0)
		p = binary.LittleEndian.AppendUint64(p, math.Float64bits(float64(i)+0.25))
		p = zz(p, 1714979289123456+int64(i))
		payloads = append(payloads, p)
		size += len(p)
	}
	in := sdk.EncodeInput(payloads)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := m.Decode(in); err != nil {
			b.Fatal(err)
		}
	}
}
