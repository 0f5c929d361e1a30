// Package avrodec is the built-in Avro decoder: one Avro binary-encoded
// datum (no container file header, no schema-registry prefix) per payload,
// written with the schema given in the "avro_schema" option, decoded like
// Spark's from_avro. When the host gives no target schema, the decoder
// derives it as Spark's SchemaConverters.toSqlType does.
package avrodec

import (
	"errors"
	"fmt"
	"strings"

	"github.com/pubsub-go/pubsub-go/wasm-decoders/avroschema"
)

// The decoder's short names for the shared schema model.
type (
	akind  = avroschema.Kind
	node   = avroschema.Node
	afield = avroschema.Field
)

const (
	aNull   = avroschema.Null
	aBool   = avroschema.Boolean
	aInt    = avroschema.Int
	aLong   = avroschema.Long
	aFloat  = avroschema.Float
	aDouble = avroschema.Double
	aBytes  = avroschema.Bytes
	aString = avroschema.String
	aRecord = avroschema.Record
	aEnum   = avroschema.Enum
	aArray  = avroschema.Array
	aMap    = avroschema.Map
	aUnion  = avroschema.Union
	aFixed  = avroschema.Fixed
)

// parseSchema parses the avro_schema option; a text that is not JSON is
// named by its option, which is what the user wrote.
func parseSchema(text string) (*node, error) {
	n, err := avroschema.Parse(text)
	if errors.Is(err, avroschema.ErrNotJSON) {
		return nil, fmt.Errorf("avro_schema is not valid JSON: %s", strings.TrimPrefix(err.Error(), avroschema.ErrNotJSON.Error()+": "))
	}
	return n, err
}
