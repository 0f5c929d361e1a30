package jsondec

import (
	"fmt"
	"testing"

	"github.com/pubsub-go/pubsub-go/wasm-decoders/arrowlite"
	"github.com/pubsub-go/pubsub-go/wasm-decoders/sdk"
)

// BenchmarkDecodeJSONNative runs the JSON decoder compiled natively on the
// same batch as go/internal/decode's BenchmarkDecodeJSONWasm.
func BenchmarkDecodeJSONNative(b *testing.B) {
	f := func(name string, t *arrowlite.DataType) arrowlite.Field {
		return arrowlite.Field{Name: name, Nullable: true, Type: t}
	}
	s := &arrowlite.Schema{Fields: []arrowlite.Field{
		f("id", arrowlite.IntType(64, true)), f("name", arrowlite.Utf8Type()),
		f("tags", arrowlite.ListType(f("item", arrowlite.Utf8Type()))), f("score", arrowlite.Float64Type()),
		f("at", arrowlite.TimestampType(arrowlite.Microsecond, "UTC")),
	}}
	m := newModule(b, s, nil)
	var payloads [][]byte
	size := 0
	for i := 0; i < 1000; i++ {
		p := fmt.Appendf(nil, `{"id": %d, "name": "user-%d", "tags": ["alpha", "beta", "gamma"], "score": %d.25, "at": "2024-05-06T07:08:%02d.123456Z", "extra": {"ignored": [1, 2, 3]}}`, i, i, i, i%60)
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
