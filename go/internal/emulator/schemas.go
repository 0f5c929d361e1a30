package emulator

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/pubsub-go/pubsub-go/go/internal/protoschema"
	"github.com/pubsub-go/pubsub-go/wasm-decoders/avroschema"
)

// schemaRevisions is a schema's revisions, newest last, with each Avro
// revision parsed once.
type schemaRevisions struct {
	revs   []*pubsubpb.Schema
	parsed map[string]*avroschema.Node               // by revision id
	protos map[string]protoreflect.MessageDescriptor // by revision id
}

func (r *schemaRevisions) add(pb *pubsubpb.Schema) {
	r.revs = append(r.revs, pb)
	switch pb.Type { // definitions were checked by checkSchemaDefinition
	case pubsubpb.Schema_AVRO:
		if r.parsed == nil {
			r.parsed = map[string]*avroschema.Node{}
		}
		r.parsed[pb.RevisionId], _ = avroschema.ParseRecursive(pb.Definition)
	case pubsubpb.Schema_PROTOCOL_BUFFER:
		if r.protos == nil {
			r.protos = map[string]protoreflect.MessageDescriptor{}
		}
		r.protos[pb.RevisionId], _ = compileProto(pb.Definition)
	}
}

func (r *schemaRevisions) latest() *pubsubpb.Schema { return r.revs[len(r.revs)-1] }

// schemaService is the Schema API: schemas and their revisions. Messages
// are checked against a topic's schema in validateSchema.
type schemaService struct {
	pubsubpb.UnimplementedSchemaServiceServer
	st *state
}

// newRevision makes a revision of schema name (r: its revisions so far, nil
// for a new schema) with a revision id in the service's form: 8 lower-case
// hex digits, random, unique within the schema.
func (st *state) newRevision(in *pubsubpb.Schema, name string, r *schemaRevisions) *pubsubpb.Schema {
	pb := proto.Clone(in).(*pubsubpb.Schema)
	pb.Name = name
	for {
		pb.RevisionId = fmt.Sprintf("%08x", rand.Uint32())
		if r == nil || !slices.ContainsFunc(r.revs, func(o *pubsubpb.Schema) bool { return o.RevisionId == pb.RevisionId }) {
			break
		}
	}
	pb.RevisionCreateTime = timestamppb.New(time.Now())
	return pb
}

// compileProto compiles a protocol buffer schema definition and returns its
// message type: the service takes exactly one top-level message (others
// may be nested in it).
func compileProto(def string) (protoreflect.MessageDescriptor, error) {
	s, err := protoschema.Compile(def)
	if err != nil {
		return nil, err
	}
	if n := s.File.Messages().Len(); n != 1 {
		return nil, fmt.Errorf("a protocol buffer schema defines exactly one top-level message, this one %d", n)
	}
	return s.Message()
}

// checkSchemaDefinition checks a schema: Avro definitions parse, protocol
// buffer ones compile.
func checkSchemaDefinition(s *pubsubpb.Schema) error {
	if s == nil || s.Type == pubsubpb.Schema_TYPE_UNSPECIFIED || s.Definition == "" {
		return status.Error(codes.InvalidArgument, "schema: a type (AVRO or PROTOCOL_BUFFER) and a definition are required")
	}
	if s.Type == pubsubpb.Schema_AVRO {
		if _, err := avroschema.ParseRecursive(s.Definition); err != nil {
			return status.Errorf(codes.InvalidArgument, "invalid Avro schema: %v", err)
		}
	}
	if s.Type == pubsubpb.Schema_PROTOCOL_BUFFER {
		if _, err := compileProto(s.Definition); err != nil {
			return status.Errorf(codes.InvalidArgument, "invalid protocol buffer schema: %v", err)
		}
	}
	return nil
}

func (s *schemaService) CreateSchema(_ context.Context, req *pubsubpb.CreateSchemaRequest) (*pubsubpb.Schema, error) {
	name := req.Parent + "/schemas/" + req.SchemaId
	if err := checkName(name, "schemas"); err != nil {
		return nil, err
	}
	if err := checkSchemaDefinition(req.Schema); err != nil {
		return nil, err
	}
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	if s.st.schemas[name] != nil {
		return nil, status.Errorf(codes.AlreadyExists, "Schema already exists: %s", name)
	}
	pb := s.st.newRevision(req.Schema, name, nil)
	r := &schemaRevisions{}
	r.add(pb)
	s.st.schemas[name] = r
	return proto.Clone(pb).(*pubsubpb.Schema), nil
}

// revision finds "name" (latest) or "name@revision".
func (st *state) revision(name string) (*pubsubpb.Schema, error) {
	base, rev := name, ""
	if i := indexByte(name, '@'); i >= 0 {
		base, rev = name[:i], name[i+1:]
	}
	if err := checkName(base, "schemas"); err != nil {
		return nil, err
	}
	r := st.schemas[base]
	if r == nil {
		return nil, notFound("Schema", base)
	}
	if rev == "" {
		return r.latest(), nil
	}
	for _, pb := range r.revs {
		if pb.RevisionId == rev {
			return pb, nil
		}
	}
	return nil, notFound("Schema revision", name)
}

func view(pb *pubsubpb.Schema, v pubsubpb.SchemaView) *pubsubpb.Schema {
	out := proto.Clone(pb).(*pubsubpb.Schema)
	if v == pubsubpb.SchemaView_BASIC {
		out.Definition = ""
	}
	return out
}

func (s *schemaService) GetSchema(_ context.Context, req *pubsubpb.GetSchemaRequest) (*pubsubpb.Schema, error) {
	s.st.mu.RLock()
	defer s.st.mu.RUnlock()
	pb, err := s.st.revision(req.Name)
	if err != nil {
		return nil, err
	}
	v := req.View
	if v == pubsubpb.SchemaView_SCHEMA_VIEW_UNSPECIFIED {
		v = pubsubpb.SchemaView_FULL
	}
	return view(pb, v), nil
}

func (s *schemaService) ListSchemas(_ context.Context, req *pubsubpb.ListSchemasRequest) (*pubsubpb.ListSchemasResponse, error) {
	if err := checkProject(req.Parent); err != nil {
		return nil, err
	}
	s.st.mu.RLock()
	defer s.st.mu.RUnlock()
	var names []string
	for name := range s.st.schemas {
		if project(name) == req.Parent {
			names = append(names, name)
		}
	}
	page, next, err := paginate(names, req.PageSize, req.PageToken)
	if err != nil {
		return nil, err
	}
	resp := &pubsubpb.ListSchemasResponse{NextPageToken: next}
	for _, name := range page {
		resp.Schemas = append(resp.Schemas, view(s.st.schemas[name].latest(), req.View))
	}
	return resp, nil
}

func (s *schemaService) ListSchemaRevisions(_ context.Context, req *pubsubpb.ListSchemaRevisionsRequest) (*pubsubpb.ListSchemaRevisionsResponse, error) {
	if err := checkName(req.Name, "schemas"); err != nil {
		return nil, err
	}
	s.st.mu.RLock()
	defer s.st.mu.RUnlock()
	r := s.st.schemas[req.Name]
	if r == nil {
		return nil, notFound("Schema", req.Name)
	}
	resp := &pubsubpb.ListSchemaRevisionsResponse{}
	for i := len(r.revs) - 1; i >= 0; i-- { // newest first, as the service lists them
		resp.Schemas = append(resp.Schemas, view(r.revs[i], req.View))
	}
	return resp, nil
}

func (s *schemaService) CommitSchema(_ context.Context, req *pubsubpb.CommitSchemaRequest) (*pubsubpb.Schema, error) {
	if err := checkName(req.Name, "schemas"); err != nil {
		return nil, err
	}
	if err := checkSchemaDefinition(req.Schema); err != nil {
		return nil, err
	}
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	r := s.st.schemas[req.Name]
	if r == nil {
		return nil, notFound("Schema", req.Name)
	}
	if req.Schema.Type != r.latest().Type {
		return nil, status.Errorf(codes.InvalidArgument, "commit schema: type %s differs from the schema's %s", req.Schema.Type, r.latest().Type)
	}
	pb := s.st.newRevision(req.Schema, req.Name, r)
	r.add(pb)
	return proto.Clone(pb).(*pubsubpb.Schema), nil
}

func (s *schemaService) RollbackSchema(_ context.Context, req *pubsubpb.RollbackSchemaRequest) (*pubsubpb.Schema, error) {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	old, err := s.st.revision(req.Name + "@" + req.RevisionId)
	if err != nil {
		return nil, err
	}
	pb := s.st.newRevision(old, req.Name, s.st.schemas[req.Name])
	s.st.schemas[req.Name].add(pb)
	return proto.Clone(pb).(*pubsubpb.Schema), nil
}

func (s *schemaService) DeleteSchemaRevision(_ context.Context, req *pubsubpb.DeleteSchemaRevisionRequest) (*pubsubpb.Schema, error) {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	base := req.Name
	rev := req.RevisionId
	if i := indexByte(base, '@'); i >= 0 {
		base, rev = base[:i], base[i+1:]
	}
	if err := checkName(base, "schemas"); err != nil {
		return nil, err
	}
	r := s.st.schemas[base]
	if r == nil {
		return nil, notFound("Schema", base)
	}
	if len(r.revs) == 1 {
		return nil, status.Errorf(codes.FailedPrecondition, "schema %s has one revision: delete the schema instead", base)
	}
	for i, pb := range r.revs {
		if pb.RevisionId == rev {
			r.revs = append(r.revs[:i], r.revs[i+1:]...)
			return proto.Clone(pb).(*pubsubpb.Schema), nil
		}
	}
	return nil, notFound("Schema revision", base+"@"+rev)
}

func (s *schemaService) DeleteSchema(_ context.Context, req *pubsubpb.DeleteSchemaRequest) (*emptypb.Empty, error) {
	if err := checkName(req.Name, "schemas"); err != nil {
		return nil, err
	}
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	if s.st.schemas[req.Name] == nil {
		return nil, notFound("Schema", req.Name)
	}
	delete(s.st.schemas, req.Name)
	s.st.policies.forget(req.Name)
	return &emptypb.Empty{}, nil
}

func (s *schemaService) ValidateSchema(_ context.Context, req *pubsubpb.ValidateSchemaRequest) (*pubsubpb.ValidateSchemaResponse, error) {
	if err := checkProject(req.Parent); err != nil {
		return nil, err
	}
	if err := checkSchemaDefinition(req.Schema); err != nil {
		return nil, err
	}
	return &pubsubpb.ValidateSchemaResponse{}, nil
}

// checkSchemaSettings checks that a topic's schema exists (caller holds st.mu).
func (st *state) checkSchemaSettings(ss *pubsubpb.SchemaSettings) error {
	if ss == nil || ss.Schema == "" {
		return nil
	}
	if err := checkName(ss.Schema, "schemas"); err != nil {
		return err
	}
	if st.schemas[ss.Schema] == nil {
		return status.Errorf(codes.NotFound, "schema_settings: schema not found: %s", ss.Schema)
	}
	if ss.Encoding == pubsubpb.Encoding_ENCODING_UNSPECIFIED {
		return status.Error(codes.InvalidArgument, "schema_settings: encoding must be JSON or BINARY")
	}
	return nil
}

// validateSchema checks messages published to a topic with a schema
// against the revisions its settings allow (newest first, as the service
// does) and returns the googclient_* attributes the service adds; the
// revision named is the newest one the messages match. Caller holds st.mu
// for reading.
func (st *state) validateSchema(t *pubsubpb.Topic, msgs []*pubsubpb.PubsubMessage) (map[string]string, error) {
	ss := t.SchemaSettings
	if ss == nil || ss.Schema == "" {
		return nil, nil
	}
	r := st.schemas[ss.Schema]
	if r == nil {
		return nil, status.Errorf(codes.FailedPrecondition, "topic %s: its schema %s was deleted", t.Name, ss.Schema)
	}
	lo, hi := 0, len(r.revs)-1
	for i, pb := range r.revs {
		if pb.RevisionId == ss.FirstRevisionId {
			lo = i
		}
		if pb.RevisionId == ss.LastRevisionId {
			hi = i
		}
	}
	var firstErr error
	for i := hi; i >= lo; i-- {
		rev := r.revs[i]
		if err := checkMessages(rev, r.parsed[rev.RevisionId], r.protos[rev.RevisionId], ss.Encoding, msgs); err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		return map[string]string{
			"googclient_schemaname":       ss.Schema,
			"googclient_schemarevisionid": rev.RevisionId,
			"googclient_schemaencoding":   ss.Encoding.String(),
		}, nil
	}
	return nil, status.Errorf(codes.InvalidArgument, "Invalid data in message: message failed schema validation against %s: %v", ss.Schema, firstErr)
}

// checkMessages checks each message against one revision (its parsed
// Avro schema or compiled protocol buffer message).
func checkMessages(rev *pubsubpb.Schema, avro *avroschema.Node, md protoreflect.MessageDescriptor, enc pubsubpb.Encoding,
	msgs []*pubsubpb.PubsubMessage) error {
	binary := enc == pubsubpb.Encoding_BINARY
	for i, m := range msgs {
		var err error
		kind := "Avro"
		switch {
		case avro != nil && binary:
			err = avro.ValidateBinary(m.Data)
		case avro != nil:
			err = avro.ValidateJSON(m.Data)
		case md != nil:
			kind = "protocol buffer"
			err = protoschema.Validate(md, m.Data, binary)
		}
		if err != nil {
			return fmt.Errorf("message %d is not %s-encoded %s of revision %s: %v", i, enc, kind, rev.RevisionId, err)
		}
	}
	return nil
}

func (s *schemaService) ValidateMessage(_ context.Context, req *pubsubpb.ValidateMessageRequest) (*pubsubpb.ValidateMessageResponse, error) {
	if err := checkProject(req.Parent); err != nil {
		return nil, err
	}
	s.st.mu.RLock()
	defer s.st.mu.RUnlock()
	var rev *pubsubpb.Schema
	switch x := req.SchemaSpec.(type) {
	case *pubsubpb.ValidateMessageRequest_Name:
		var err error
		if rev, err = s.st.revision(x.Name); err != nil {
			return nil, err
		}
	case *pubsubpb.ValidateMessageRequest_Schema:
		if err := checkSchemaDefinition(x.Schema); err != nil {
			return nil, err
		}
		rev = x.Schema
	default:
		return nil, status.Error(codes.InvalidArgument, "validate message: give a schema name or a schema")
	}
	var avro *avroschema.Node
	var md protoreflect.MessageDescriptor
	switch rev.Type {
	case pubsubpb.Schema_AVRO:
		avro, _ = avroschema.ParseRecursive(rev.Definition)
	case pubsubpb.Schema_PROTOCOL_BUFFER:
		md, _ = compileProto(rev.Definition)
	}
	if err := checkMessages(rev, avro, md, req.Encoding, []*pubsubpb.PubsubMessage{{Data: req.Message}}); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "Invalid data in message: %v", err)
	}
	return &pubsubpb.ValidateMessageResponse{}, nil
}
