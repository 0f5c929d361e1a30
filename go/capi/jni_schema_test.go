package main

import (
	"bytes"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
)

// The JSON of StructType.fromDDL("id BIGINT NOT NULL, qty INT, price
// DECIMAL(10,2), ratio DOUBLE, ok BOOLEAN, note STRING, at TIMESTAMP, ntz
// TIMESTAMP_NTZ, day DATE, b TINYINT, s SMALLINT, f FLOAT, raw BINARY,
// tags ARRAY<STRING>, props MAP<STRING, BIGINT>, customer STRUCT<name:
// STRING, address: STRUCT<city: STRING NOT NULL>>, span INTERVAL DAY TO
// SECOND, c CHAR(3), n VOID") as Spark 3.5 writes it.
const sparkJSON = `{"type":"struct","fields":[
{"name":"id","type":"long","nullable":false,"metadata":{}},
{"name":"qty","type":"integer","nullable":true,"metadata":{}},
{"name":"price","type":"decimal(10,2)","nullable":true,"metadata":{}},
{"name":"ratio","type":"double","nullable":true,"metadata":{}},
{"name":"ok","type":"boolean","nullable":true,"metadata":{}},
{"name":"note","type":"string","nullable":true,"metadata":{"comment":"x"}},
{"name":"at","type":"timestamp","nullable":true,"metadata":{}},
{"name":"ntz","type":"timestamp_ntz","nullable":true,"metadata":{}},
{"name":"day","type":"date","nullable":true,"metadata":{}},
{"name":"b","type":"byte","nullable":true,"metadata":{}},
{"name":"s","type":"short","nullable":true,"metadata":{}},
{"name":"f","type":"float","nullable":true,"metadata":{}},
{"name":"raw","type":"binary","nullable":true,"metadata":{}},
{"name":"tags","type":{"type":"array","elementType":"string","containsNull":true},"nullable":true,"metadata":{}},
{"name":"props","type":{"type":"map","keyType":"string","valueType":"long","valueContainsNull":false},"nullable":true,"metadata":{}},
{"name":"customer","type":{"type":"struct","fields":[
  {"name":"name","type":"string","nullable":true,"metadata":{}},
  {"name":"address","type":{"type":"struct","fields":[{"name":"city","type":"string","nullable":false,"metadata":{}}]},"nullable":true,"metadata":{}}]},
 "nullable":true,"metadata":{}},
{"name":"span","type":"interval day to second","nullable":true,"metadata":{}},
{"name":"c","type":"char(3)","nullable":true,"metadata":{}},
{"name":"n","type":"void","nullable":true,"metadata":{}}]}`

func TestSparkToArrowSchemaIsPysparksMapping(t *testing.T) {
	props := arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64)
	props.SetItemNullable(false)
	f := func(name string, dt arrow.DataType) arrow.Field {
		return arrow.Field{Name: name, Type: dt, Nullable: true}
	}
	want := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		f("qty", arrow.PrimitiveTypes.Int32),
		f("price", &arrow.Decimal128Type{Precision: 10, Scale: 2}),
		f("ratio", arrow.PrimitiveTypes.Float64),
		f("ok", arrow.FixedWidthTypes.Boolean),
		f("note", arrow.BinaryTypes.String),
		f("at", &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}),
		f("ntz", &arrow.TimestampType{Unit: arrow.Microsecond}),
		f("day", arrow.FixedWidthTypes.Date32),
		f("b", arrow.PrimitiveTypes.Int8),
		f("s", arrow.PrimitiveTypes.Int16),
		f("f", arrow.PrimitiveTypes.Float32),
		f("raw", arrow.BinaryTypes.Binary),
		f("tags", arrow.ListOfField(arrow.Field{Name: "element", Type: arrow.BinaryTypes.String, Nullable: true})),
		f("props", props),
		f("customer", arrow.StructOf(f("name", arrow.BinaryTypes.String),
			f("address", arrow.StructOf(arrow.Field{Name: "city", Type: arrow.BinaryTypes.String})))),
		f("span", &arrow.DurationType{Unit: arrow.Microsecond}),
		f("c", arrow.BinaryTypes.String),
		f("n", arrow.Null),
	}, nil)
	got, err := sparkToArrowSchema([]byte(sparkJSON))
	if err != nil {
		t.Fatal(err)
	}
	if !got.Equal(want) {
		t.Fatalf("got\n%v\nwant\n%v", got, want)
	}
	// The list's item is "element" and the map's entries key/value, as pyarrow names them.
	if n := got.Field(13).Type.(*arrow.ListType).ElemField().Name; n != "element" {
		t.Fatalf("list item named %q", n)
	}
	// What the decoder config carries reads back as the same schema.
	b, err := schemaIPC(got)
	if err != nil {
		t.Fatal(err)
	}
	r, err := ipc.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	if !r.Schema().Equal(want) {
		t.Fatalf("IPC round trip: %v", r.Schema())
	}
}

func TestSparkToArrowSchemaRefusesWhatPysparkRefuses(t *testing.T) {
	for _, js := range []string{
		`{"type":"struct","fields":[{"name":"ym","type":"interval year to month","nullable":true}]}`,
		`{"type":"struct","fields":[{"name":"ci","type":"calendarinterval","nullable":true}]}`,
		`{"type":"array","elementType":"string","containsNull":true}`,
		`not json`,
	} {
		if _, err := sparkToArrowSchema([]byte(js)); err == nil {
			t.Errorf("%s: no error", js)
		}
	}
}
