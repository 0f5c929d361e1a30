package main

// Schema mode for the JVM front end: the decoder's target schema from
// Spark's own description of it, and the decoder opened on the driver.
//
// The JVM has no Arrow Java it can rely on (Spark 3.5 bundles Arrow 12,
// 4.x 18 and 19), so the target schema crosses as Spark's StructType JSON
// (StructType.json()) and becomes an Arrow schema here, by the mapping the
// Python front end uses: pyspark's to_arrow_schema with timestamps in UTC
// (python/pubsub_go/_spark_version.py, spark_to_arrow_schema).

/*
#include "pubsubgo.h"
*/
import "C"

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/cdata"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"google.golang.org/grpc/codes"

	"github.com/pubsub-go/pubsub-go/go/internal/decode"
	"github.com/pubsub-go/pubsub-go/go/internal/rpc"
)

// Java_io_pubsubgo_spark_bridge_Decoders_sparkArrowSchema converts a Spark
// StructType's JSON (the NUL-terminated string at sparkJSON) into an Arrow
// schema and returns its IPC bytes as base64 (a malloc'd NUL-terminated
// string at *b64Out, freed with Native.free): the decoder config's
// "schema" (go/internal/decode.DecoderConfig).
//
//export Java_io_pubsubgo_spark_bridge_Decoders_sparkArrowSchema
func Java_io_pubsubgo_spark_bridge_Decoders_sparkArrowSchema(env, cls unsafe.Pointer, sparkJSON, b64Out, errAddr C.int64_t) C.int {
	return guard(errp(errAddr), func() error {
		if sparkJSON == 0 || b64Out == 0 {
			return rpc.Errorf(codes.InvalidArgument, "sparkArrowSchema: the schema and the output must not be NULL")
		}
		s, err := sparkToArrowSchema([]byte(C.GoString((*C.char)(ptr(sparkJSON)))))
		if err != nil {
			return rpc.Errorf(codes.InvalidArgument, "%v", err)
		}
		b, err := schemaIPC(s)
		if err != nil {
			return rpc.Errorf(codes.Internal, "serializing the Arrow schema: %v", err)
		}
		setString((**C.char)(ptr(b64Out)), base64.StdEncoding.EncodeToString(b))
		return nil
	})
}

// Java_io_pubsubgo_spark_bridge_Decoders_decoderSchema opens the decoder of a
// decoder config (the subscriber config's "decoder", JSON at config), as
// the tasks will, and closes it again: on the driver, so a schema or
// option the decoder rejects fails the query at its start. When schemaOut
// is not 0 it exports the decoder's own columns there (without
// __decode_error): the derived schema of a source without .schema().
//
//export Java_io_pubsubgo_spark_bridge_Decoders_decoderSchema
func Java_io_pubsubgo_spark_bridge_Decoders_decoderSchema(env, cls unsafe.Pointer, config, schemaOut, errAddr C.int64_t) C.int {
	return guard(errp(errAddr), func() error {
		var cfg decode.DecoderConfig
		if err := decodeConfig("decoder", (*C.char)(ptr(config)), &cfg); err != nil {
			return err
		}
		dec, err := cfg.Open(context.Background(), alloc, 1)
		if err != nil {
			return err
		}
		defer dec.Close()
		if schemaOut != 0 {
			cdata.ExportArrowSchema(dec.Schema(), cschema((*C.struct_ArrowSchema)(ptr(schemaOut))))
		}
		return nil
	})
}

func schemaIPC(s *arrow.Schema) ([]byte, error) {
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(s))
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// sparkField is a field of Spark's StructType JSON.
type sparkField struct {
	Name     string          `json:"name"`
	Type     json.RawMessage `json:"type"`
	Nullable bool            `json:"nullable"`
}

// sparkComplex is a complex type of Spark's JSON: struct, array, map, udt.
type sparkComplex struct {
	Type              string          `json:"type"`
	Fields            []sparkField    `json:"fields"`
	ElementType       json.RawMessage `json:"elementType"`
	ContainsNull      bool            `json:"containsNull"`
	KeyType           json.RawMessage `json:"keyType"`
	ValueType         json.RawMessage `json:"valueType"`
	ValueContainsNull bool            `json:"valueContainsNull"`
	SQLType           json.RawMessage `json:"sqlType"`
}

// sparkToArrowSchema is pyspark's to_arrow_schema(schema, timezone="UTC")
// over the JSON of a StructType. Field metadata is left out (the decoders
// read none).
func sparkToArrowSchema(js []byte) (*arrow.Schema, error) {
	var st sparkComplex
	if err := json.Unmarshal(js, &st); err != nil {
		return nil, fmt.Errorf("the Spark schema is not a StructType's JSON: %v", err)
	}
	if st.Type != "struct" {
		return nil, fmt.Errorf("the Spark schema is a %q, not a struct", st.Type)
	}
	fields, err := sparkFields(st.Fields, "")
	if err != nil {
		return nil, err
	}
	return arrow.NewSchema(fields, nil), nil
}

func sparkFields(in []sparkField, path string) ([]arrow.Field, error) {
	out := make([]arrow.Field, 0, len(in))
	for _, f := range in {
		t, err := sparkType(f.Type, path+f.Name)
		if err != nil {
			return nil, err
		}
		out = append(out, arrow.Field{Name: f.Name, Type: t, Nullable: f.Nullable})
	}
	return out, nil
}

var (
	decimalRe  = regexp.MustCompile(`^decimal\((\d+),\s*(\d+)\)$`)
	charRe     = regexp.MustCompile(`^(char|varchar)\(\d+\)$`)
	dayTimeRe  = regexp.MustCompile(`^interval (day|hour|minute|second)( to (day|hour|minute|second))?$`)
	timeTypeRe = regexp.MustCompile(`^time(\(\d\))?$`)
)

func sparkType(raw json.RawMessage, path string) (arrow.DataType, error) {
	var name string
	if err := json.Unmarshal(raw, &name); err == nil {
		return simpleType(name, path)
	}
	var c sparkComplex
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("column %s: a type that is neither a name nor an object: %s", path, raw)
	}
	switch c.Type {
	case "struct":
		fields, err := sparkFields(c.Fields, path+".")
		if err != nil {
			return nil, err
		}
		return arrow.StructOf(fields...), nil
	case "array":
		e, err := sparkType(c.ElementType, path+"[]")
		if err != nil {
			return nil, err
		}
		return arrow.ListOfField(arrow.Field{Name: "element", Type: e, Nullable: c.ContainsNull}), nil
	case "map":
		k, err := sparkType(c.KeyType, path+".key")
		if err != nil {
			return nil, err
		}
		v, err := sparkType(c.ValueType, path+".value")
		if err != nil {
			return nil, err
		}
		m := arrow.MapOf(k, v)
		m.SetItemNullable(c.ValueContainsNull)
		return m, nil
	case "udt":
		return sparkType(c.SQLType, path)
	}
	return nil, fmt.Errorf("column %s: Spark type %s has no Arrow type (UNSUPPORTED_DATA_TYPE_FOR_ARROW_CONVERSION)", path, raw)
}

func simpleType(name, path string) (arrow.DataType, error) {
	switch name {
	case "boolean":
		return arrow.FixedWidthTypes.Boolean, nil
	case "byte":
		return arrow.PrimitiveTypes.Int8, nil
	case "short":
		return arrow.PrimitiveTypes.Int16, nil
	case "integer":
		return arrow.PrimitiveTypes.Int32, nil
	case "long":
		return arrow.PrimitiveTypes.Int64, nil
	case "float":
		return arrow.PrimitiveTypes.Float32, nil
	case "double":
		return arrow.PrimitiveTypes.Float64, nil
	case "string":
		return arrow.BinaryTypes.String, nil
	case "binary":
		return arrow.BinaryTypes.Binary, nil
	case "date":
		return arrow.FixedWidthTypes.Date32, nil
	case "timestamp":
		return &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, nil
	case "timestamp_ntz":
		return &arrow.TimestampType{Unit: arrow.Microsecond}, nil
	case "null", "void":
		return arrow.Null, nil
	case "variant":
		return arrow.StructOf(
			arrow.Field{Name: "value", Type: arrow.BinaryTypes.Binary},
			arrow.Field{Name: "metadata", Type: arrow.BinaryTypes.Binary,
				Metadata: arrow.NewMetadata([]string{"variant"}, []string{"true"})}), nil
	}
	if m := decimalRe.FindStringSubmatch(name); m != nil {
		p, _ := strconv.Atoi(m[1])
		s, _ := strconv.Atoi(m[2])
		return &arrow.Decimal128Type{Precision: int32(p), Scale: int32(s)}, nil
	}
	// A collated string (Spark 4: "string collate UTF8_LCASE") and CHAR /
	// VARCHAR (which a schema given to a reader is read as) are strings.
	if strings.HasPrefix(name, "string collate ") || charRe.MatchString(name) {
		return arrow.BinaryTypes.String, nil
	}
	if dayTimeRe.MatchString(name) {
		return &arrow.DurationType{Unit: arrow.Microsecond}, nil
	}
	if timeTypeRe.MatchString(name) {
		return arrow.FixedWidthTypes.Time64ns, nil
	}
	return nil, fmt.Errorf("column %s: Spark type %s has no Arrow type (UNSUPPORTED_DATA_TYPE_FOR_ARROW_CONVERSION)", path, name)
}
