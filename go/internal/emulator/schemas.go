package emulator

import (
	"context"
	"strconv"
	"time"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// schemaRevisions is a schema's revisions, newest last.
type schemaRevisions struct {
	revs []*pubsubpb.Schema
}

func (r *schemaRevisions) latest() *pubsubpb.Schema { return r.revs[len(r.revs)-1] }

// schemaService is the Schema API: schemas and their revisions. Messages
// are checked against a topic's schema in validateSchema.
type schemaService struct {
	pubsubpb.UnimplementedSchemaServiceServer
	st *state
}

func (st *state) newRevision(in *pubsubpb.Schema, name string) *pubsubpb.Schema {
	pb := proto.Clone(in).(*pubsubpb.Schema)
	pb.Name = name
	pb.RevisionId = strconv.FormatUint(st.msgIDs.Add(1), 16)
	pb.RevisionCreateTime = timestamppb.New(time.Now())
	return pb
}

func checkSchemaDefinition(s *pubsubpb.Schema) error {
	if s == nil || s.Type == pubsubpb.Schema_TYPE_UNSPECIFIED || s.Definition == "" {
		return status.Error(codes.InvalidArgument, "schema: a type (AVRO or PROTOCOL_BUFFER) and a definition are required")
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
	pb := s.st.newRevision(req.Schema, name)
	s.st.schemas[name] = &schemaRevisions{revs: []*pubsubpb.Schema{pb}}
	return proto.Clone(pb).(*pubsubpb.Schema), nil
}

// revision finds "name" (latest) or "name@revision".
func (st *state) revision(name string) (*pubsubpb.Schema, error) {
	base, rev := name, ""
	if i := indexByte(name, '@'); i >= 0 {
		base, rev = name[:i], name[i+1:]
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
	pb := s.st.newRevision(req.Schema, req.Name)
	r.revs = append(r.revs, pb)
	return proto.Clone(pb).(*pubsubpb.Schema), nil
}

func (s *schemaService) RollbackSchema(_ context.Context, req *pubsubpb.RollbackSchemaRequest) (*pubsubpb.Schema, error) {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	old, err := s.st.revision(req.Name + "@" + req.RevisionId)
	if err != nil {
		return nil, err
	}
	pb := s.st.newRevision(old, req.Name)
	r := s.st.schemas[req.Name]
	r.revs = append(r.revs, pb)
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
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	if s.st.schemas[req.Name] == nil {
		return nil, notFound("Schema", req.Name)
	}
	delete(s.st.schemas, req.Name)
	return &emptypb.Empty{}, nil
}

func (s *schemaService) ValidateSchema(_ context.Context, req *pubsubpb.ValidateSchemaRequest) (*pubsubpb.ValidateSchemaResponse, error) {
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
	if st.schemas[ss.Schema] == nil {
		return status.Errorf(codes.NotFound, "schema_settings: schema not found: %s", ss.Schema)
	}
	if ss.Encoding == pubsubpb.Encoding_ENCODING_UNSPECIFIED {
		return status.Error(codes.InvalidArgument, "schema_settings: encoding must be JSON or BINARY")
	}
	return nil
}

// validateSchema returns the googclient_* attributes the service adds to
// messages of a topic with a schema (caller holds st.mu for reading). The
// schema's revision is the newest one within the topic's revision range.
func (st *state) validateSchema(t *pubsubpb.Topic, msgs []*pubsubpb.PubsubMessage) (map[string]string, error) {
	ss := t.SchemaSettings
	if ss == nil || ss.Schema == "" {
		return nil, nil
	}
	r := st.schemas[ss.Schema]
	if r == nil {
		return nil, status.Errorf(codes.FailedPrecondition, "topic %s: its schema %s was deleted", t.Name, ss.Schema)
	}
	rev := r.latest()
	if ss.LastRevisionId != "" {
		for _, pb := range r.revs {
			if pb.RevisionId == ss.LastRevisionId {
				rev = pb
			}
		}
	}
	enc := "JSON"
	if ss.Encoding == pubsubpb.Encoding_BINARY {
		enc = "BINARY"
	}
	return map[string]string{
		"googclient_schemaname":       ss.Schema,
		"googclient_schemarevisionid": rev.RevisionId,
		"googclient_schemaencoding":   enc,
	}, nil
}
