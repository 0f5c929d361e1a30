package decode

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/pubsub-go/pubsub-go/wasm-decoders/arrowlite"
	"github.com/pubsub-go/pubsub-go/wasm-decoders/protodec"
	"github.com/pubsub-go/pubsub-go/wasm-decoders/sdk"
)

// The protobuf decoder against messages protobuf-go writes (from their
// canonical JSON), compiled from .proto source as Pub/Sub stores it.
// Spark's from_protobuf of the same bytes is tests/test_protobuf.py.

// testProto is the message type the Python tests use too
// (tests/protobuf_vectors.py).
var testProto = func() string {
	b, err := os.ReadFile("../../../testdata/protobuf/event.proto")
	if err != nil {
		panic(err)
	}
	return string(b)
}()

func protoOptions(t testing.TB, message, encoding string) map[string]string {
	t.Helper()
	set, msgs, err := CompileProtoSource(testProto)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(msgs, ",") != "pgtest.Inner,pgtest.Event,pgtest.Node" {
		t.Fatalf("messages %v", msgs)
	}
	return map[string]string{protodec.OptDescriptorSet: base64.StdEncoding.EncodeToString(set),
		protodec.OptMessage: message, protodec.OptEncoding: encoding}
}

// protoBinary is the binary form of a JSON-written message.
func protoBinary(t testing.TB, opts map[string]string, jsonText string) string {
	t.Helper()
	raw, _ := base64.StdEncoding.DecodeString(opts[protodec.OptDescriptorSet])
	files, err := protodec.LoadDescriptorSet(raw)
	if err != nil {
		t.Fatal(err)
	}
	md, err := protodec.FindMessage(files, opts[protodec.OptMessage])
	if err != nil {
		t.Fatal(err)
	}
	m := dynamicpb.NewMessage(md)
	if err := protojson.Unmarshal([]byte(jsonText), m); err != nil {
		t.Fatal(err)
	}
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func openProto(t testing.TB, opts map[string]string, schema *arrow.Schema) *Decoder {
	t.Helper()
	d, err := NewDecoder(context.Background(), DecoderConfig{Format: "protobuf", Options: opts, Target: schema}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// rows are the decoded rows as JSON objects (arrow-go's JSON of each
// column), and the row errors.
func protoRows(t *testing.T, d *Decoder, payloads ...string) ([]map[string]any, []string) {
	t.Helper()
	in := binaryArray(payloads...)
	defer in.Release()
	rec, errs, err := d.Decode(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	defer errs.Release()
	rows := make([]map[string]any, rec.NumRows())
	for i := range rows {
		rows[i] = map[string]any{}
	}
	for j, col := range rec.Columns() {
		b, err := json.Marshal(col)
		if err != nil {
			t.Fatal(err)
		}
		var vals []any
		if err := json.Unmarshal(b, &vals); err != nil {
			t.Fatal(err)
		}
		for i, v := range vals {
			rows[i][rec.ColumnName(j)] = v
		}
	}
	msgs := make([]string, errs.Len())
	for i := range msgs {
		if errs.IsValid(i) {
			msgs[i] = errs.Value(i)
		}
	}
	return rows, msgs
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

const richEvent = `{"id": "7", "title": "hello", "inner": {"name": "in", "nums": [1, 2]},
  "items": [{"name": "a"}, {"nums": [3]}], "counts": {"x": "1"}, "color": "GREEN",
  "at": "2024-05-06T07:08:09.123456789Z", "maybe": "0", "number": 5, "opt": 0,
  "u32": 4294967295, "s64": "-3", "score": 0.5, "blob": "AQI=", "colors": ["RED", "COLOR_UNSPECIFIED"],
  "byid": {"4": {"name": "four"}}, "flag": true}`

func TestProtobufDerivedSchemaIsFromProtobufs(t *testing.T) {
	d := openProto(t, protoOptions(t, "pgtest.Event", ""), nil)
	want := []string{
		"id: type=int64, nullable", "title: type=utf8, nullable",
		"inner: type=struct<name: utf8 nullable, nums: list<element: int32> nullable>, nullable",
		"items: type=list<element: struct<name: utf8 nullable, nums: list<element: int32> nullable>>, nullable",
		"counts: type=map<utf8, int64, items_non_nullable>, nullable", "color: type=utf8, nullable",
		"at: type=timestamp[us, tz=UTC], nullable", "maybe: type=struct<value: int64 nullable>, nullable",
		"text: type=utf8, nullable", "number: type=int32, nullable", "opt: type=int32, nullable",
		"u32: type=int32, nullable", "s64: type=int64, nullable", "score: type=float64, nullable",
		"blob: type=binary, nullable", "colors: type=list<element: utf8>, nullable",
		"byid: type=map<int32, struct<name: utf8 nullable, nums: list<element: int32> nullable>, items_non_nullable>, nullable",
		"flag: type=bool, nullable",
	}
	var got []string
	for _, f := range d.Schema().Fields() {
		got = append(got, f.String())
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("schema:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestProtobufDecodesAsFromProtobuf(t *testing.T) {
	for _, enc := range []string{"binary", "json"} {
		t.Run(enc, func(t *testing.T) {
			opts := protoOptions(t, "pgtest.Event", enc)
			d := openProto(t, opts, nil)
			payload := func(js string) string {
				if enc == "json" {
					return js
				}
				return protoBinary(t, opts, js)
			}
			rows, errs := protoRows(t, d, payload(richEvent), payload(`{}`), payload(`{"text": "t", "maybe": "9"}`))
			if errs[0] != "" || errs[1] != "" || errs[2] != "" {
				t.Fatalf("errors %q", errs)
			}
			r := rows[0]
			for k, want := range map[string]string{
				"id": `7`, "title": `"hello"`, "inner": `{"name":"in","nums":[1,2]}`,
				"items":  `[{"name":"a","nums":[]},{"name":null,"nums":[3]}]`,
				"counts": `[{"key":"x","value":1}]`, "color": `"GREEN"`,
				"maybe": `{"value":null}`,                  // a proto3 zero inside the wrapper: null, as Spark gives it
				"text":  `null`, "number": `5`, "opt": `0`, // explicit presence keeps the zero
				"u32": `-1`, "s64": `-3`, "score": `0.5`, "blob": `"AQI="`,
				"colors": `["RED","COLOR_UNSPECIFIED"]`, // list items keep their zeros
				"byid":   `[{"key":4,"value":{"name":"four","nums":[]}}]`, "flag": `true`,
			} {
				if got := jsonOf(r[k]); got != want {
					t.Errorf("%s = %s, want %s", k, got, want)
				}
			}
			if got := jsonOf(r["at"]); got != `"2024-05-06T07:08:09.123456Z"` {
				t.Errorf("at = %s", got)
			}
			for k, v := range rows[1] { // proto3 zeros and absent messages are null; lists and maps empty
				if s := jsonOf(v); s != "null" && s != "[]" {
					t.Errorf("empty message: %s = %s", k, s)
				}
			}
			if jsonOf(rows[2]["text"]) != `"t"` || jsonOf(rows[2]["number"]) != "null" || jsonOf(rows[2]["maybe"]) != `{"value":9}` {
				t.Errorf("row 2: %v", rows[2])
			}
		})
	}
}

func TestProtobufWireRules(t *testing.T) {
	opts := protoOptions(t, "pgtest.Event", "")
	d := openProto(t, opts, nil)
	var b []byte
	tag := func(n protowire.Number, wt protowire.Type) { b = protowire.AppendTag(b, n, wt) }
	// A oneof's later member wins; a scalar's last occurrence wins; a
	// message given twice merges; packed and unpacked runs of one
	// repeated field concatenate; unknown fields are skipped.
	tag(9, protowire.BytesType)
	b = protowire.AppendString(b, "first")
	tag(10, protowire.VarintType)
	b = protowire.AppendVarint(b, 3)
	tag(1, protowire.VarintType)
	b = protowire.AppendVarint(b, 1)
	tag(1, protowire.VarintType)
	b = protowire.AppendVarint(b, 2)
	tag(3, protowire.BytesType)
	b = protowire.AppendBytes(b, protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "n"))
	tag(3, protowire.BytesType)
	b = protowire.AppendBytes(b, protowire.AppendVarint(protowire.AppendTag(nil, 2, protowire.VarintType), 8))
	tag(16, protowire.BytesType)
	b = protowire.AppendBytes(b, []byte{1, 2})
	tag(16, protowire.VarintType)
	b = protowire.AppendVarint(b, 1)
	tag(99, protowire.Fixed64Type)
	b = protowire.AppendFixed64(b, 0)
	rows, errs := protoRows(t, d, string(b), string(b[:len(b)-3]), "\xff")
	if errs[0] != "" {
		t.Fatal(errs[0])
	}
	r := rows[0]
	if jsonOf(r["text"]) != "null" || jsonOf(r["number"]) != "3" || jsonOf(r["id"]) != "2" ||
		jsonOf(r["inner"]) != `{"name":"n","nums":[8]}` || jsonOf(r["colors"]) != `["RED","GREEN","RED"]` {
		t.Errorf("row %v", r)
	}
	for _, e := range errs[1:] {
		if !strings.Contains(e, "malformed protobuf") {
			t.Errorf("error %q", e)
		}
	}
	if jsonOf(rows[1]["id"]) != "null" {
		t.Errorf("a failed row is null: %v", rows[1])
	}
}

func TestProtobufTargetSchemaPicksAndWidens(t *testing.T) {
	opts := protoOptions(t, "pgtest.Event", "")
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "ID", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "number", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "color", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "missing", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	d := openProto(t, opts, schema)
	rows, errs := protoRows(t, d, protoBinary(t, opts, richEvent))
	if errs[0] != "" || jsonOf(rows[0]) != `{"ID":7,"color":2,"missing":null,"number":5}` {
		t.Fatalf("%v %q", rows, errs)
	}
	bad := arrow.NewSchema([]arrow.Field{{Name: "title", Type: arrow.PrimitiveTypes.Int64}}, nil)
	_, err := NewDecoder(context.Background(), DecoderConfig{Format: "protobuf", Options: opts, Target: bad}, memory.DefaultAllocator)
	if err == nil || !strings.Contains(err.Error(), "title: protobuf string cannot be decoded into int64") {
		t.Fatalf("err %v", err)
	}
}

func TestProtobufRecursionAndConfigErrors(t *testing.T) {
	opts := protoOptions(t, "Node", "")
	_, err := NewDecoder(context.Background(), DecoderConfig{Format: "protobuf", Options: opts}, memory.DefaultAllocator)
	if err == nil || !strings.Contains(err.Error(), "message pgtest.Node is recursive") {
		t.Fatalf("err %v", err)
	}
	opts[protodec.OptRecursiveDepth] = "2"
	d := openProto(t, opts, nil)
	if got := d.Schema().Field(1).Type.String(); got != "struct<v: utf8 nullable>" {
		t.Fatalf("depth 2: next is %s", got)
	}
	rows, _ := protoRows(t, d, protoBinary(t, opts, `{"v": "a", "next": {"v": "b", "next": {"v": "c"}}}`))
	if jsonOf(rows[0]) != `{"next":{"v":"b"},"v":"a"}` {
		t.Fatalf("rows %v", rows)
	}
	for opt, want := range map[string]string{
		protodec.OptMessage:        `no message type "pgtest.Nope"`,
		protodec.OptEncoding:       `protobuf_encoding="pgtest.Nope" is not one of binary, json`,
		protodec.OptDescriptorSet:  "not base64",
		protodec.OptRecursiveDepth: "must be an integer from 1 to 10",
	} {
		o := protoOptions(t, "pgtest.Event", "")
		o[opt] = "pgtest.Nope"
		_, err := NewDecoder(context.Background(), DecoderConfig{Format: "protobuf", Options: o}, memory.DefaultAllocator)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err %v, want %q", opt, err, want)
		}
	}
	src := map[string]string{OptProtobufSource: "syntax = \"proto3\"; message M { int32 x = 1 }", protodec.OptMessage: "M"}
	_, err = NewDecoder(context.Background(), DecoderConfig{Format: "protobuf", Options: src}, memory.DefaultAllocator)
	if err == nil || !strings.Contains(err.Error(), "does not compile") || !strings.Contains(err.Error(), "pubsub_schema.proto:1:") {
		t.Fatalf("err %v", err)
	}
	src[OptProtobufSource] = "syntax = \"proto3\"; message M { int32 x = 1; }"
	d = openProto(t, src, nil)
	rows, _ = protoRows(t, d, "\x08\x05")
	if jsonOf(rows[0]) != `{"x":5}` {
		t.Fatalf("rows %v", rows)
	}
}

// benchProtoEvent is a pgtest.Event of about 1 KB (the bench's payload size).
func benchProtoEvent(i int) string {
	return fmt.Sprintf(`{"id": "%d", "title": "%s", "inner": {"name": "inner-%d", "nums": [1, 2, 3, 4, 5, 6, 7, 8]},
	  "items": [{"name": "alpha-%d", "nums": [1, 2]}, {"name": "beta", "nums": [3]}, {"name": "gamma"}, {"name": "delta", "nums": [4, 5, 6]}],
	  "counts": {"clicks": "%d", "views": "12345", "shares": "7", "likes": "99"}, "color": "GREEN",
	  "at": "2024-05-06T07:08:09.123456Z", "maybe": "%d", "text": "%s", "opt": 1, "u32": 77, "s64": "-12345",
	  "score": 0.25, "blob": "%s", "colors": ["RED", "GREEN", "RED"], "byid": {"1": {"name": "one"}, "2": {"name": "two"}}, "flag": true}`,
		i, strings.Repeat("t", 440), i, i, i, i, strings.Repeat("x", 200),
		base64.StdEncoding.EncodeToString([]byte(strings.Repeat("b", 150))))
}

// BenchmarkDecodeProtobufNative decodes ~1 KB binary events on the native
// data-plane path, as BenchmarkDecodeAvroNative does its records.
func BenchmarkDecodeProtobufNative(b *testing.B) {
	opts := protoOptions(b, "pgtest.Event", "")
	benchDecode(b, DecoderConfig{Format: "protobuf", Options: opts}, func(i int) []byte {
		return []byte(protoBinary(b, opts, benchProtoEvent(i)))
	})
}

// A row given up inside a map entry (its key written, its value not)
// leaves the next rows' entries whole and in line with their keys.
func TestProtobufRowFailingInAMapEntryLeavesTheNextRowsRight(t *testing.T) {
	opts := protoOptions(t, "pgtest.Event", "")
	d := openProto(t, opts, nil)
	inner := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "\xff") // invalid UTF-8
	entry := protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 9)
	entry = protowire.AppendBytes(protowire.AppendTag(entry, 2, protowire.BytesType), inner)
	bad := protowire.AppendBytes(protowire.AppendTag(nil, 17, protowire.BytesType), entry)
	good := protoBinary(t, opts, `{"byid": {"4": {"name": "four"}, "5": {"name": "five"}}}`)
	rows, errs := protoRows(t, d, good, string(bad), good)
	if errs[0] != "" || errs[2] != "" || !strings.Contains(errs[1], "UTF-8") {
		t.Fatalf("errors %q", errs)
	}
	want := jsonOf(rows[0]["byid"])
	if got := jsonOf(rows[2]["byid"]); got != want || !strings.Contains(want, "five") {
		t.Fatalf("byid after the failed row: %s, want %s", got, want)
	}
}

// The one-pass walk gives exactly the rows and errors of the two passes:
// on well-formed events, on concatenations of two (every singular field,
// message and oneof member twice: the last wins, messages merge), on the
// oneof's other member appended, and on mutated bytes.
func TestProtobufOnePassEqualsTwoPasses(t *testing.T) {
	opts := protoOptions(t, "pgtest.Event", "")
	rich := protoBinary(t, opts, richEvent)
	payloads := []string{rich, "", protoBinary(t, opts, `{"text": "t"}`)}
	for i := 0; i < 20; i++ {
		payloads = append(payloads, protoBinary(t, opts, benchProtoEvent(i)))
	}
	for _, p := range payloads[:6] {
		payloads = append(payloads, p+rich, rich+p, p+protoBinary(t, opts, `{"text": "other"}`))
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for i, n := 0, len(payloads); i < 3000; i++ {
		if p := payloads[rng.IntN(n)]; p != "" {
			payloads = append(payloads, mutate(rng, p, 1+i%3))
		}
	}
	decode := func(twoPasses bool) ([]arrowlite.Layout, []string) {
		d, schema, err := protodec.New(sdk.Config{Options: opts})
		if err != nil {
			t.Fatal(err)
		}
		if twoPasses {
			d.(*protodec.Decoder).TwoPassOnly()
		}
		cols := make([]*arrowlite.Builder, len(schema.Fields))
		for j, f := range schema.Fields {
			cols[j] = arrowlite.NewBuilder(f.Type)
		}
		var errs []string
		for i, p := range payloads {
			if err := d.Decode([]byte(p), cols); err != nil {
				errs = append(errs, fmt.Sprintf("%d: %v", i, err))
				for _, c := range cols { // as the sdk does with a row error
					c.Truncate(i)
					c.AppendNull()
				}
			}
		}
		var layouts []arrowlite.Layout
		var walk func(b *arrowlite.Builder)
		walk = func(b *arrowlite.Builder) {
			layouts = append(layouts, b.Layout())
			for _, c := range b.Children {
				walk(c)
			}
		}
		for _, c := range cols {
			walk(c)
		}
		return layouts, errs
	}
	one, oneErrs := decode(false)
	two, twoErrs := decode(true)
	if !reflect.DeepEqual(oneErrs, twoErrs) {
		t.Fatalf("errors differ:\none pass:   %v\ntwo passes: %v", oneErrs, twoErrs)
	}
	// Compared as printed: an empty slice and a nil one are the same
	// content (a builder's buffers may be either, depending on whether it
	// grew before a row error truncated it), which reflect.DeepEqual tells apart.
	if fmt.Sprintf("%+v", one) != fmt.Sprintf("%+v", two) {
		for i := range one {
			if fmt.Sprintf("%+v", one[i]) != fmt.Sprintf("%+v", two[i]) {
				t.Fatalf("column layout %d differs:\none pass:   %+v\ntwo passes: %+v", i, one[i], two[i])
			}
		}
		t.Fatal("layouts differ")
	}
	if len(oneErrs) == 0 || len(oneErrs) == len(payloads) {
		t.Fatalf("%d of %d payloads failed: the mutations should make some, not all, fail", len(oneErrs), len(payloads))
	}
}

// mutate is seed with k random byte changes, cuts or insertions (never
// empty: seed again instead).
func mutate(rng *rand.Rand, seed string, k int) string {
	b := []byte(seed)
	for ; k > 0; k-- {
		switch rng.IntN(3) {
		case 0:
			b[rng.IntN(len(b))] = byte(rng.IntN(256))
		case 1:
			b = b[:rng.IntN(len(b))]
		default:
			at := rng.IntN(len(b) + 1)
			b = append(b[:at:at], append([]byte{byte(rng.IntN(256))}, b[at:]...)...)
		}
		if len(b) == 0 {
			b = []byte(seed)
		}
	}
	return string(b)
}

// Mutated payloads are rejected or decoded, never a panic (which the sdk
// would turn into a row error naming it).
func TestProtobufMutatedPayloadsNeverPanic(t *testing.T) {
	opts := protoOptions(t, "pgtest.Event", "")
	d := openProto(t, opts, nil)
	seed := protoBinary(t, opts, richEvent)
	rng := rand.New(rand.NewPCG(1, 2))
	var payloads []string
	for i := 0; i < 3000; i++ {
		payloads = append(payloads, mutate(rng, seed, 1+i%4))
	}
	_, errs := protoRows(t, d, payloads...)
	failed := 0
	for _, e := range errs {
		if strings.Contains(e, "panic") {
			t.Fatalf("panic: %s", e)
		}
		if e != "" {
			failed++
		}
	}
	if failed == 0 || failed == len(errs) {
		t.Fatalf("%d of %d mutated payloads failed: the mutations should break some and not all", failed, len(errs))
	}
}
