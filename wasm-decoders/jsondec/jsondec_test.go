package jsondec

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/pubsub-go/pubsub-go/wasm-decoders/arrowlite"
	"github.com/pubsub-go/pubsub-go/wasm-decoders/internal/ipccheck"
	"github.com/pubsub-go/pubsub-go/wasm-decoders/sdk"
)

// Semantics are covered end to end by testdata/decoders/vectors through both
// hosts; these tests pin the helpers and the decoder's safety properties.

func TestJavaDouble(t *testing.T) {
	for f, want := range map[float64]string{
		1: "1.0", 2.5: "2.5", 100000: "100000.0", 1e7: "1.0E7", 1.2345e7: "1.2345E7",
		0.001: "0.001", 0.0001: "1.0E-4", -1.5e-10: "-1.5E-10", 123.456: "123.456",
		9999999: "9999999.0", math.Copysign(0, -1): "-0.0", 1e21: "1.0E21", 0.1: "0.1",
	} {
		if got := javaDouble(f); got != want {
			t.Errorf("javaDouble(%v) = %q, want %q", f, got, want)
		}
	}
}

func TestParseDecimal(t *testing.T) {
	for _, c := range []struct {
		in       string
		p, s     int32
		want     int64
		overflow bool
	}{
		{"12.345", 10, 2, 1235, false}, {"-12.345", 10, 2, -1235, false}, {"0.004", 10, 2, 0, false},
		{"1e2", 5, 0, 100, false}, {"1E-2", 5, 3, 10, false}, {"999.995", 5, 2, 0, true},
		{"1e400", 38, 0, 0, true}, {"1e-400", 38, 2, 0, false}, {"+7", 3, 1, 70, false},
		{"0.5", 3, 0, 1, false}, {"-0.5", 3, 0, -1, false}, {"0.49", 3, 0, 0, false},
	} {
		lo, hi, err := parseDecimal([]byte(c.in), c.p, c.s)
		if c.overflow {
			if err == nil {
				t.Errorf("%s as decimal(%d,%d): no overflow", c.in, c.p, c.s)
			}
			continue
		}
		if err != nil || int64(lo) != c.want || hi != c.want>>63 {
			t.Errorf("%s as decimal(%d,%d) = %d/%d %v, want %d", c.in, c.p, c.s, int64(lo), hi, err, c.want)
		}
	}
	for _, bad := range []string{"", "-", ".", "1e", "1x", "1.2.3", "e5"} {
		if _, _, err := parseDecimal([]byte(bad), 10, 2); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestParseTimestamp(t *testing.T) {
	for in, want := range map[string]int64{
		"1970-01-01T00:00:00Z":         0,
		"1970-01-01T00:00:01.5Z":       1_500_000,
		"1970-01-01 01:00:00+01:00":    0,
		"1970-01-01T00:00:00.1234567Z": 123_456,
		"1970-01-02":                   86_400_000_000,
		"1969-12-31T23:59:59.999999Z":  -1,
		"  1970-01-01T00:00:00-0130 ":  5_400_000_000,
		"2000-02-29T12:00:00UTC":       951_825_600_000_000,
		"1970-01-01T00:00:00GMT+02:00": -7_200_000_000,
		"1970-1-1T0:0":                 0,
	} {
		got, ok := parseTimestamp([]byte(in), 0, true)
		if !ok || got != want {
			t.Errorf("%q = %d %v, want %d", in, got, ok, want)
		}
	}
	for _, bad := range []string{"", "1970-13-01", "1970-01-01T25:00", "1970-01-01T00:00:00Zx", "1970-01-01T00:00:00 Europe/Oslo", "19700101", "2023-02-29"} {
		if _, ok := parseTimestamp([]byte(bad), 0, true); ok {
			t.Errorf("%q accepted", bad)
		}
	}
	if _, ok := parseTimestamp([]byte("1970-01-01T00:00:00Z"), 0, false); ok {
		t.Error("an offset accepted for a zone-less column")
	}
}

func newModule(t testing.TB, s *arrowlite.Schema, opts map[string]string) *sdk.Module {
	t.Helper()
	m := sdk.NewModule(New)
	if err := m.Init(sdk.EncodeConfig(arrowlite.EncodeSchema(s), opts)); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestNestingLimit(t *testing.T) {
	s := &arrowlite.Schema{Fields: []arrowlite.Field{{Name: "a", Nullable: true, Type: arrowlite.Utf8Type()}}}
	m := newModule(t, s, nil)
	deep := `{"a": ` + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + `}`
	out, err := m.Decode(sdk.EncodeInput([][]byte{[]byte(deep)}))
	if err != nil {
		t.Fatal(err)
	}
	rec, err := ipccheck.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	if msg := rec.Column(1).(*array.String).Value(0); !strings.Contains(msg, "nesting deeper than 1000") {
		t.Fatalf("error %q", msg)
	}
}

func TestSchemaErrors(t *testing.T) {
	for _, s := range []*arrowlite.Schema{
		nil,
		{Fields: []arrowlite.Field{{Name: "m", Type: arrowlite.MapType(arrowlite.IntType(32, true), arrowlite.Field{Type: arrowlite.Utf8Type()})}}},
	} {
		var schemaIPC []byte
		if s != nil {
			schemaIPC = arrowlite.EncodeSchema(s)
		}
		if err := sdk.NewModule(New).Init(sdk.EncodeConfig(schemaIPC, nil)); err == nil {
			t.Errorf("schema %v accepted", s)
		}
	}
	s := &arrowlite.Schema{Fields: []arrowlite.Field{{Name: "a", Type: arrowlite.Utf8Type()}}}
	if err := sdk.NewModule(New).Init(sdk.EncodeConfig(arrowlite.EncodeSchema(s), map[string]string{"timezone": "Europe/Oslo"})); err == nil {
		t.Error("region time zone accepted")
	}
}

// fuzzSchema has every type the decoder supports.
func fuzzSchema() *arrowlite.Schema {
	f := func(name string, t *arrowlite.DataType) arrowlite.Field {
		return arrowlite.Field{Name: name, Nullable: true, Type: t}
	}
	return &arrowlite.Schema{Fields: []arrowlite.Field{
		f("i8", arrowlite.IntType(8, true)), f("u32", arrowlite.IntType(32, false)), f("i64", arrowlite.IntType(64, true)),
		f("f32", arrowlite.Float32Type()), f("f64", arrowlite.Float64Type()), f("b", arrowlite.BoolType()),
		f("s", arrowlite.Utf8Type()), f("bin", arrowlite.BinaryType()), f("d", arrowlite.Date32Type()),
		f("dec", arrowlite.DecimalType(12, 3)), f("ts", arrowlite.TimestampType(arrowlite.Nanosecond, "UTC")),
		f("ntz", arrowlite.TimestampType(arrowlite.Millisecond, "")), f("n", arrowlite.NullType()),
		f("l", arrowlite.ListType(f("item", arrowlite.StructType(f("x", arrowlite.IntType(32, true)), f("y", arrowlite.Utf8Type()))))),
		f("m", arrowlite.MapType(arrowlite.Utf8Type(), f("", arrowlite.ListType(f("item", arrowlite.Float64Type()))))),
		f("st", arrowlite.StructType(f("a", arrowlite.StructType(f("b", arrowlite.Utf8Type()))), f("c", arrowlite.BoolType()))),
	}}
}

// FuzzJSONDecode feeds arbitrary payloads to the decoder: it must never
// panic, must reject or accept each payload as one whole row, its output
// must be valid Arrow, and with an all-string schema every valid JSON
// object must decode.
func FuzzJSONDecode(f *testing.F) {
	for _, s := range []string{
		`{"i8": -1, "u32": 4000000000, "i64": 5, "f32": 1.5, "f64": NaN, "b": true, "s": {"k": [1, 2.5e3]}, "bin": "AAE=",
		  "d": "2024-01-01", "dec": "1,234.5", "ts": 1700000000, "ntz": "2024-01-01 00:00:00.123", "n": [1],
		  "l": [{"x": 1, "y": "a"}, null, {}], "m": {"k": [1, null]}, "st": {"a": {"b": 'q'}, "c": false}}`,
		`{"l": [{"x": 1.5}]}`, `{"m": {"a": [1], "a": [2]}}`, `{"st": {"a": {"b": 1}}, "st": null}`, `[1, 2]`, `null`, ``,
		`{"s": "\ud83d\ude00\u00e9\\"}`, `{"dec": 1e39}`, `{"ts": "1900-01-01T00:00:00+18:00"}`, `{"a":`, `{"s": 'x'}`,
	} {
		f.Add([]byte(s))
	}
	m := newModule(f, fuzzSchema(), map[string]string{"timezone": "-05:30"})
	strs := &arrowlite.Schema{Fields: []arrowlite.Field{
		{Name: "a", Nullable: true, Type: arrowlite.Utf8Type()},
		{Name: "b", Nullable: true, Type: arrowlite.Utf8Type()},
		{Name: "s", Nullable: true, Type: arrowlite.Utf8Type()},
	}}
	ms := newModule(f, strs, nil)
	f.Fuzz(func(t *testing.T, payload []byte) {
		out, err := m.Decode(sdk.EncodeInput([][]byte{payload, []byte(`{"i64": 1}`)}))
		if err != nil {
			t.Fatal(err)
		}
		rec, err := ipccheck.Read(out)
		if err != nil {
			t.Fatalf("invalid output: %v", err)
		}
		errs := rec.Column(int(rec.NumCols()) - 1).(*array.String)
		if errs.IsValid(0) && strings.HasPrefix(errs.Value(0), "decoder panic") {
			t.Fatalf("panic: %s", errs.Value(0))
		}
		if errs.IsValid(1) || rec.Column(2).(*array.Int64).Value(1) != 1 {
			t.Fatalf("a bad row disturbed the next one: %v", errs)
		}
		rec.Release()

		out, err = ms.Decode(sdk.EncodeInput([][]byte{payload}))
		if err != nil {
			t.Fatal(err)
		}
		rec, err = ipccheck.Read(out)
		if err != nil {
			t.Fatalf("invalid output: %v", err)
		}
		defer rec.Release()
		trimmed := strings.TrimSpace(string(payload))
		if json.Valid(payload) && utf8.Valid(payload) && strings.HasPrefix(trimmed, "{") && depth(payload) <= maxDepth {
			if e := rec.Column(3).(*array.String); e.IsValid(0) {
				t.Fatalf("valid JSON object rejected: %s", e.Value(0))
			}
		}
	})
}

// depth is the maximum bracket nesting outside strings.
func depth(b []byte) int {
	d, max, inStr, esc := 0, 0, false, false
	for _, c := range b {
		switch {
		case esc:
			esc = false
		case inStr && c == '\\':
			esc = true
		case c == '"':
			inStr = !inStr
		case !inStr && (c == '{' || c == '['):
			d++
			if d > max {
				max = d
			}
		case !inStr && (c == '}' || c == ']'):
			d--
		}
	}
	return max
}

// skipPlain's eight-bytes-at-a-time scan finds the same byte as a plain
// loop, from every start, with every special byte at every lane.
func TestSkipPlainMatchesByteLoop(t *testing.T) {
	naive := func(b []byte, i int, q byte) int {
		for ; i < len(b); i++ {
			if c := b[i]; c == q || c == '\\' || c < 0x20 || c >= 0x80 {
				return i
			}
		}
		return i
	}
	specials := []byte{'"', '\'', '\\', 0, 0x1f, 0x80, 0xc3, 0xff}
	plain := []byte("abcdefghijklmnopqrstuvwxyz !#$%&()*+,-./0123456789:;<=>?@[]^_`{|}~\x7f")
	for _, q := range []byte{'"', '\''} {
		for n := 0; n <= 20; n++ {
			for at := 0; at <= n; at++ {
				for _, sp := range specials {
					b := make([]byte, n)
					for i := range b {
						b[i] = plain[(i*7+n)%len(plain)]
					}
					if at < n {
						b[at] = sp
					}
					for start := 0; start <= n; start++ {
						if got, want := skipPlain(b, start, q), naive(b, start, q); got != want {
							t.Fatalf("skipPlain(%q, %d, %q) = %d, want %d", b, start, q, got, want)
						}
					}
				}
			}
		}
	}
}
