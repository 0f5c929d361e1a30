package decode

import (
	"context"
	"encoding/base64"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/pubsub-go/pubsub-go/go/internal/decode/native"
	"github.com/pubsub-go/pubsub-go/wasm-decoders/arrowlite"
	"github.com/pubsub-go/pubsub-go/wasm-decoders/avrodec"
	"github.com/pubsub-go/pubsub-go/wasm-decoders/protodec"
	"github.com/pubsub-go/pubsub-go/wasm-decoders/sdk"
)

// TopicSchema makes the built-in decoder decode each message by the
// revision of the topic's Pub/Sub schema and the encoding its attributes
// name (schemaFrom=topic, docs/source.md): a message written under another
// revision is resolved to the reader revision's columns (Avro's schema
// resolution; protobuf by field number). The driver fills it from the admin
// op get_topic_schema.
type TopicSchema struct {
	Schema     string `json:"schema"` // projects/P/schemas/S
	Type       string `json:"type"`   // AVRO or PROTOCOL_BUFFER
	RevisionID string `json:"revision_id"`
	// Revisions are the definitions known when the query started, by
	// revision id (RevisionID's at least).
	Revisions map[string]string `json:"revisions"`
	// Fetch gets the definition of a revision Revisions lacks (committed
	// after the query started); the subscriber sets it to a call through
	// its own connection. Nil: such messages fail to decode.
	Fetch func(ctx context.Context, schema, revision string) (string, error) `json:"-"`
}

// The attributes Pub/Sub stamps on every message of a topic with a schema.
const (
	AttrSchemaRevision = "googclient_schemarevisionid"
	AttrSchemaEncoding = "googclient_schemaencoding"
	// deletedRevision is the revision id Pub/Sub delivers for a message
	// whose revision was deleted after it was published.
	deletedRevision = "_deleted-schema-revision_"
)

// Route is what one message's attributes say about its payload; empty
// fields: the attribute is missing.
type Route = native.Route

// fetchTimeout bounds fetching one revision on an executor.
const fetchTimeout = 30 * time.Second

// revisionCache holds the definitions fetched in this process, by
// "schema@revision": each is fetched once however many decoders meet it.
var revisionCache sync.Map

// topicFormats are the built-in decoders of the schema types.
var topicFormats = map[string]string{"AVRO": "avro", "PROTOCOL_BUFFER": "protobuf"}

// validate checks ts and returns the built-in format that decodes it (the
// schema's type decides it, whatever decoder.format said).
func (ts *TopicSchema) validate() (string, error) {
	format, ok := topicFormats[ts.Type]
	if !ok {
		return "", invalid("decoder.topic_schema.type %q is not supported: schemaFrom=topic decodes AVRO and PROTOCOL_BUFFER schemas", ts.Type)
	}
	if ts.Schema == "" || ts.Revisions[ts.RevisionID] == "" {
		return "", invalid("decoder.topic_schema needs schema, revision_id and that revision's definition in revisions")
	}
	return format, nil
}

// definition is a revision's schema text, from Revisions, this process's
// cache, or Fetch.
func (ts *TopicSchema) definition(revision string) (string, error) {
	if d := ts.Revisions[revision]; d != "" {
		return d, nil
	}
	if revision == deletedRevision {
		return "", fmt.Errorf("its revision was deleted after it was published (Pub/Sub delivers it as %s)", deletedRevision)
	}
	key := ts.Schema + "@" + revision
	if d, ok := revisionCache.Load(key); ok {
		return d.(string), nil
	}
	if ts.Fetch == nil {
		return "", fmt.Errorf("revision %s is not one the query started with, and this decoder cannot fetch it", revision)
	}
	ctx, cancel := context.WithTimeout(context.Background(), fetchTimeout)
	defer cancel()
	d, err := ts.Fetch(ctx, ts.Schema, revision)
	if err != nil {
		return "", fmt.Errorf("unknown or deleted revision: %v", err)
	}
	revisionCache.Store(key, d)
	return d, nil
}

// factory is the sdk.Factory of the router: the module's columns come
// from the reader revision; each row is decoded by its own revision.
func (ts *TopicSchema) factory() sdk.Factory {
	return func(cfg sdk.Config) (sdk.Decoder, *arrowlite.Schema, error) {
		base := maps.Clone(cfg.Options)
		if base == nil {
			base = map[string]string{}
		}
		reader := ts.Revisions[ts.RevisionID]
		newDec := avrodec.New
		if ts.Type == "PROTOCOL_BUFFER" {
			newDec = protodec.New
			set, messages, err := CompileProtoSource(reader)
			if err != nil {
				return nil, nil, fmt.Errorf("schema %s revision %s: %w", ts.Schema, ts.RevisionID, err)
			}
			base[protodec.OptDescriptorSet] = base64.StdEncoding.EncodeToString(set)
			base[protodec.OptMessage] = topLevel(messages)
		} else {
			base["avro_schema"] = reader
		}
		_, schema, err := newDec(sdk.Config{Schema: cfg.Schema, Options: base})
		if err != nil {
			return nil, nil, fmt.Errorf("schema %s revision %s: %w", ts.Schema, ts.RevisionID, err)
		}
		return &router{ts: ts, schema: schema, base: base, newDec: newDec, subs: map[routeKey]routed{}}, schema, nil
	}
}

// topLevel is the message a Pub/Sub protobuf schema defines: its one
// top-level message type (the others listed are nested in it).
func topLevel(messages []string) string {
	for _, m := range messages {
		nested := false
		for _, o := range messages {
			if strings.HasPrefix(m, o+".") {
				nested = true
				break
			}
		}
		if !nested {
			return m
		}
	}
	return ""
}

type routeKey struct{ revision, encoding string }

type routed struct {
	dec sdk.Decoder
	err error
}

// router is an sdk.Decoder that hands each payload to the decoder of its
// (revision, encoding), made on first use; cur is set before each row
// (nativePool.decode).
type router struct {
	ts     *TopicSchema
	schema *arrowlite.Schema
	base   map[string]string
	newDec sdk.Factory
	subs   map[routeKey]routed
	cur    Route
}

// SetRoute is the route of the payload Decode gets next (native.Router).
func (r *router) SetRoute(rt Route) { r.cur = rt }

func (r *router) Decode(payload []byte, cols []*arrowlite.Builder) error {
	c := r.cur
	if c.Revision == "" || c.Encoding == "" {
		return fmt.Errorf("message %s has no %s and %s attributes, though its topic has schema %s "+
			"(published before the schema was attached?)", c.MessageID, AttrSchemaRevision, AttrSchemaEncoding, r.ts.Schema)
	}
	k := routeKey{c.Revision, c.Encoding}
	s, ok := r.subs[k]
	if !ok {
		s = r.open(k)
		r.subs[k] = s
	}
	if s.err != nil {
		return fmt.Errorf("message %s, schema revision %s: %v", c.MessageID, c.Revision, s.err)
	}
	if err := s.dec.Decode(payload, cols); err != nil {
		return fmt.Errorf("message %s, schema revision %s, %s encoding: %v", c.MessageID, c.Revision, c.Encoding, err)
	}
	return nil
}

func (r *router) open(k routeKey) routed {
	enc := strings.ToLower(k.encoding)
	if enc != "binary" && enc != "json" {
		return routed{err: fmt.Errorf("encoding %q is not BINARY or JSON", k.encoding)}
	}
	def, err := r.ts.definition(k.revision)
	if err != nil {
		return routed{err: err}
	}
	opts := maps.Clone(r.base)
	if r.ts.Type == "PROTOCOL_BUFFER" {
		// Protobuf decodes by field number: the reader revision's
		// descriptor reads what older and newer revisions wrote.
		opts[protodec.OptEncoding] = enc
	} else {
		opts["avro_writer_schema"] = def
		opts["avro_encoding"] = enc
	}
	dec, _, err := r.newDec(sdk.Config{Schema: r.schema, Options: opts})
	if err != nil {
		return routed{err: fmt.Errorf("cannot be read as revision %s: %v", r.ts.RevisionID, err)}
	}
	return routed{dec: dec}
}
