package avrodec

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/pubsub-go/pubsub-go/wasm-decoders/internal/ipccheck"
	"github.com/pubsub-go/pubsub-go/wasm-decoders/sdk"
)

// rows decodes payloads with the given decoder options and returns the
// rows as JSON lines (RecordToJSON), the __error column included.
func rows(t *testing.T, opts map[string]string, payloads ...[]byte) []string {
	t.Helper()
	m := sdk.NewModule(New)
	if err := m.Init(sdk.EncodeConfig(nil, opts)); err != nil {
		t.Fatal(err)
	}
	rec := decode(t, m, payloads...)
	defer rec.Release()
	var buf bytes.Buffer
	if err := array.RecordToJSON(rec, &buf); err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(buf.String()), "\n")
}

// errorOf is the __error column of a row from rows.
func errorOf(t *testing.T, row string) string {
	t.Helper()
	var v struct {
		Error *string `json:"__error"`
	}
	if err := json.Unmarshal([]byte(row), &v); err != nil {
		t.Fatal(err)
	}
	if v.Error == nil {
		return ""
	}
	return *v.Error
}

// binaryOf is the binary encoding of a datum given in Avro's JSON encoding.
func binaryOf(t testing.TB, schema, datum string) []byte {
	t.Helper()
	n, err := parseSchema(schema)
	if err != nil {
		t.Fatal(err)
	}
	v, err := parseJSON([]byte(datum))
	if err != nil {
		t.Fatal(err)
	}
	b, err := encodeJSON(nil, n, v, false)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

const jsonSchema = `{"type": "record", "name": "R", "namespace": "ns", "fields": [
  {"name": "i", "type": "int"}, {"name": "l", "type": "long"}, {"name": "f", "type": "float"},
  {"name": "d", "type": "double"}, {"name": "b", "type": "boolean"}, {"name": "s", "type": "string"},
  {"name": "by", "type": "bytes"}, {"name": "fx", "type": {"type": "fixed", "name": "F2", "size": 2}},
  {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B"]}},
  {"name": "a", "type": {"type": "array", "items": "long"}},
  {"name": "m", "type": {"type": "map", "values": ["null", "string"]}},
  {"name": "in", "type": {"type": "record", "name": "Inner", "fields": [{"name": "x", "type": "int"}]}},
  {"name": "u", "type": ["null", "string", "ns.Inner"]},
  {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
  {"name": "dec", "type": {"type": "bytes", "logicalType": "decimal", "precision": 5, "scale": 2}}
]}`

// The JSON encoding decodes to the same columns as the binary encoding of
// the same datum (the binary bytes written out by hand).
func TestJSONEncodingEqualsBinary(t *testing.T) {
	datum := `{"i": -3, "l": 1099511627776, "f": 1.5, "d": -0.25, "b": true, "s": "h\u00e9",
	  "by": "\u0000\u00ff", "fx": "ab", "e": "B", "a": [1, -1], "m": {"k2": {"string": "v"}, "k1": null},
	  "u": {"ns.Inner": {"x": 7}}, "in": {"x": 9}, "ts": 1500, "dec": "\u0004\u00d2"}`
	var bin []byte
	bin = zz(bin, -3)
	bin = zz(bin, 1<<40)
	bin = append(bin, 0, 0, 0xc0, 0x3f)             // 1.5f
	bin = append(bin, 0, 0, 0, 0, 0, 0, 0xd0, 0xbf) // -0.25
	bin = append(bin, 1)                            // true
	bin = str(bin, "h\u00e9")                       // UTF-8
	bin = append(zz(bin, 2), 0, 0xff)               // bytes
	bin = append(bin, 'a', 'b')                     // fixed
	bin = zz(bin, 1)                                // enum B
	bin = append(zz(zz(zz(bin, 2), 1), -1), 0)      // array
	bin = zz(bin, 2)                                // map block of 2
	bin = str(zz(str(bin, "k2"), 1), "v")           // k2: string branch
	bin = zz(str(bin, "k1"), 0)                     // k1: null branch
	bin = zz(bin, 0)                                // end of map
	bin = zz(bin, 9)                                // in.x
	bin = zz(zz(bin, 2), 7)                         // union branch Inner, x
	bin = zz(bin, 1500)                             // ts
	bin = append(zz(bin, 2), 0x04, 0xd2)            // 12.34
	if got := binaryOf(t, jsonSchema, datum); !bytes.Equal(got, bin) {
		t.Fatalf("transcoded\n%x\nwant\n%x", got, bin)
	}
	fromBinary := rows(t, map[string]string{"avro_schema": jsonSchema}, bin)
	fromJSON := rows(t, map[string]string{"avro_schema": jsonSchema, "avro_encoding": "json"}, []byte(datum))
	if fromJSON[0] != fromBinary[0] {
		t.Fatalf("json\n%s\nbinary\n%s", fromJSON[0], fromBinary[0])
	}
	for _, want := range []string{`"m":[{"key":"k2","value":"v"},{"key":"k1","value":null}]`, `"e":"B"`, `"__error":null`} {
		if !strings.Contains(fromJSON[0], want) {
			t.Errorf("row lacks %s: %s", want, fromJSON[0])
		}
	}
}

func TestJSONEncodingErrors(t *testing.T) {
	opts := map[string]string{"avro_schema": `{"type": "record", "name": "R", "fields": [
	  {"name": "u", "type": ["null", "int"]}, {"name": "by", "type": "bytes"}, {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A"]}}]}`,
		"avro_encoding": "json"}
	for _, c := range []struct{ payload, want string }{
		{`{"u": "1", "by": "", "e": "A"}`, `JSON value "1" matches no branch of avro union [null, int]`},
		{`{"u": {"long": 1}, "by": "", "e": "A"}`, `JSON value {long} matches no branch of avro union [null, int]`},
		{`{"u": null, "by": "\u0100", "e": "A"}`, "above U+00FF"},
		{`{"u": null, "by": "", "e": "Z"}`, `"Z" is not a symbol`},
		{`{"u": null, "by": ""}`, "e: missing (and no default)"},
		{`{"u": null, "by": "", "e": "A"} 1`, "data after the value"},
		{"\x00\x02", "invalid JSON-encoded avro datum"},
		{`{"u": {"int": 2147483648}, "by": "", "e": "A"}`, "is not an avro int"},
	} {
		got := errorOf(t, rows(t, opts, []byte(c.payload))[0])
		if !strings.Contains(got, c.want) {
			t.Errorf("%s: %s, want %q", c.payload, got, c.want)
		}
	}
}

// A union's value may be bare, as Pub/Sub's validation accepts it.
func TestJSONEncodingBareUnionValue(t *testing.T) {
	opts := map[string]string{"avro_schema": `{"type": "record", "name": "R", "fields": [
	  {"name": "u", "type": ["null", "int", "string"]}]}`, "avro_encoding": "json"}
	got := rows(t, opts, []byte(`{"u": 5}`), []byte(`{"u": "x"}`), []byte(`{"u": {"string": "y"}}`))
	want := []string{`"u":{"member0":5,"member1":null}`, `"u":{"member0":null,"member1":"x"}`, `"u":{"member0":null,"member1":"y"}`}
	for i, w := range want {
		if !strings.Contains(got[i], w) {
			t.Errorf("row %d: %s, want %s", i, got[i], w)
		}
	}
}

const writerV1 = `{"type": "record", "name": "R", "namespace": "ns", "fields": [
  {"name": "id", "type": "int"},
  {"name": "name", "type": "string"},
  {"name": "gone", "type": {"type": "array", "items": "string"}},
  {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B", "C"]}},
  {"name": "u", "type": ["null", "int", "string"]},
  {"name": "old_name", "type": "float"},
  {"name": "inner", "type": {"type": "record", "name": "In", "fields": [{"name": "x", "type": "long"}]}}
]}`

const readerV2 = `{"type": "record", "name": "R", "namespace": "ns", "fields": [
  {"name": "id", "type": "double"},
  {"name": "name", "type": "bytes"},
  {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B"], "default": "A"}},
  {"name": "u", "type": ["null", "long"]},
  {"name": "renamed", "aliases": ["old_name"], "type": "double"},
  {"name": "inner", "type": {"type": "record", "name": "In", "fields": [
    {"name": "x", "type": "long"}, {"name": "y", "type": ["null", "string"], "default": null}]}},
  {"name": "added", "type": "string", "default": "dflt"},
  {"name": "added_rec", "type": {"type": "record", "name": "D", "fields": [{"name": "z", "type": {"type": "array", "items": "int"}}]},
   "default": {"z": [1, 2]}},
  {"name": "opt", "type": ["null", "string"], "default": null},
  {"name": "bin", "type": "bytes", "default": "\u00ff"}
]}`

func TestWriterSchemaResolvesToReader(t *testing.T) {
	opts := map[string]string{"avro_schema": readerV2, "avro_writer_schema": writerV1}
	p1 := binaryOf(t, writerV1, `{"id": 5, "name": "n", "gone": ["x"], "e": "B", "u": {"int": 3}, "old_name": 0.5, "inner": {"x": 1}}`)
	p2 := binaryOf(t, writerV1, `{"id": -1, "name": "", "gone": [], "e": "C", "u": null, "old_name": 2, "inner": {"x": 2}}`)
	p3 := binaryOf(t, writerV1, `{"id": 0, "name": "", "gone": [], "e": "A", "u": {"string": "s"}, "old_name": 0, "inner": {"x": 3}}`)
	got := rows(t, opts, p1, p2, p3)
	want := []string{
		`{"__error":null,"added":"dflt","added_rec":{"z":[1,2]},"bin":"/w==","e":"B","id":5,"inner":{"x":1,"y":null},"name":"bg==","opt":null,"renamed":0.5,"u":3}`,
		`{"__error":null,"added":"dflt","added_rec":{"z":[1,2]},"bin":"/w==","e":"A","id":-1,"inner":{"x":2,"y":null},"name":"","opt":null,"renamed":2,"u":null}`,
	}
	for i, w := range want {
		if got[i] != w {
			t.Errorf("row %d:\n%s\nwant\n%s", i, got[i], w)
		}
	}
	// A writer union branch the reader cannot read fails that datum only.
	if !strings.Contains(errorOf(t, got[2]), "u: writer's avro string matches no branch of the reader's union [null, long]") {
		t.Errorf("row 2: %s", got[2])
	}
}

// The JSON encoding and resolution compose: a datum written as JSON under
// the old revision decodes to the new one.
func TestWriterSchemaWithJSONEncoding(t *testing.T) {
	opts := map[string]string{"avro_schema": readerV2, "avro_writer_schema": writerV1, "avro_encoding": "JSON"}
	got := rows(t, opts, []byte(`{"id": 5, "name": "n", "gone": ["x"], "e": "B", "u": {"int": 3}, "old_name": 0.5, "inner": {"x": 1}}`))
	if !strings.Contains(got[0], `"added":"dflt"`) || !strings.Contains(got[0], `"id":5`) || !strings.Contains(got[0], `"__error":null`) {
		t.Fatal(got[0])
	}
}

func TestResolutionErrors(t *testing.T) {
	rec := func(fields string) string {
		return `{"type": "record", "name": "R", "fields": [` + fields + `]}`
	}
	for _, c := range []struct{ writer, reader, want string }{
		{rec(`{"name": "a", "type": "long"}`), rec(`{"name": "a", "type": "int"}`), "writer's avro long cannot be read as the reader's int"},
		{rec(`{"name": "a", "type": "double"}`), rec(`{"name": "a", "type": "float"}`), "writer's avro double cannot be read as the reader's float"},
		{rec(`{"name": "a", "type": "int"}`), rec(`{"name": "b", "type": "int"}`), "the reader's field b is not in the writer's record R and has no default"},
		{rec(`{"name": "a", "type": {"type": "fixed", "name": "F", "size": 2}}`), rec(`{"name": "a", "type": {"type": "fixed", "name": "F", "size": 3}}`), "cannot be read as the reader's fixed F"},
		{rec(`{"name": "a", "type": {"type": "enum", "name": "E", "symbols": ["X"]}}`), rec(`{"name": "a", "type": {"type": "enum", "name": "G", "symbols": ["X"]}}`), "cannot be read"},
		{rec(`{"name": "a", "type": "int"}`), rec(`{"name": "a", "type": "int"}, {"name": "b", "type": "int", "default": "x"}`), "b: invalid default"},
	} {
		m := sdk.NewModule(New)
		err := m.Init(sdk.EncodeConfig(nil, map[string]string{"avro_schema": c.reader, "avro_writer_schema": c.writer}))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("writer %s reader %s: %v, want %q", c.writer, c.reader, err, c.want)
		}
	}
	// An enum symbol the reader lacks, with no reader default, fails the datum.
	w := rec(`{"name": "a", "type": {"type": "enum", "name": "E", "symbols": ["X", "Y"]}}`)
	r := rec(`{"name": "a", "type": {"type": "enum", "name": "E", "symbols": ["X"]}}`)
	got := rows(t, map[string]string{"avro_schema": r, "avro_writer_schema": w}, []byte{0}, []byte{2})
	if !strings.Contains(got[0], `"a":"X"`) || !strings.Contains(errorOf(t, got[1]), `avro enum symbol "Y" is not in the reader's enum`) {
		t.Fatal(got)
	}
}

// Hostile JSON datums and binary datums of another revision never panic,
// and a bad row does not disturb the next one.
func FuzzAvroJSONAndResolution(f *testing.F) {
	f.Add([]byte(`{"id": 5, "name": "n", "gone": ["x"], "e": "B", "u": {"int": 3}, "old_name": 0.5, "inner": {"x": 1}}`), false)
	f.Add([]byte(`{"id": 1, "name": "", "gone": [], "e": "C", "u": null, "old_name": "NaN", "inner": {"x": 2}}`), false)
	f.Add([]byte(`[[[[[[[[[[[[[[[[[[[[{"a":`), false)
	f.Add([]byte{0x0a, 0x02, 'n', 0x02, 0x02, 'x', 0x00, 0x04, 0x02, 0x06, 0, 0, 0, 0x3f, 0x02}, true)
	f.Add([]byte{0x0a}, true)
	var ms [2]*sdk.Module
	for i, enc := range []string{"json", "binary"} {
		ms[i] = sdk.NewModule(New)
		if err := ms[i].Init(sdk.EncodeConfig(nil, map[string]string{"avro_schema": readerV2, "avro_writer_schema": writerV1, "avro_encoding": enc})); err != nil {
			f.Fatal(err)
		}
	}
	good := map[bool][]byte{false: []byte(`{"id": 9, "name": "g", "gone": [], "e": "A", "u": null, "old_name": 1, "inner": {"x": 0}}`)}
	good[true] = binaryOf(f, writerV1, string(good[false]))
	f.Fuzz(func(t *testing.T, payload []byte, binary bool) {
		m, next := ms[0], good[false]
		if binary {
			m, next = ms[1], good[true]
		}
		out, err := m.Decode(sdk.EncodeInput([][]byte{payload, next}))
		if err != nil {
			t.Fatal(err)
		}
		rec, err := ipccheck.Read(out)
		if err != nil {
			t.Fatalf("invalid output: %v", err)
		}
		defer rec.Release()
		errs := rec.Column(int(rec.NumCols()) - 1).(*array.String)
		if errs.IsValid(0) && strings.HasPrefix(errs.Value(0), "decoder panic") {
			t.Fatalf("panic: %s", errs.Value(0))
		}
		if errs.IsValid(1) {
			t.Fatalf("a bad row disturbed the next one: %s", errs.Value(1))
		}
	})
}
