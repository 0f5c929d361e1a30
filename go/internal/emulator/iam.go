package emulator

import (
	"context"
	"encoding/binary"
	"strings"
	"sync"

	"cloud.google.com/go/iam/apiv1/iampb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// iamService is google.iam.v1.IAMPolicy for the emulator's topics,
// subscriptions, snapshots and schemas: policies are kept in memory (and
// forgotten with their resource); nothing is enforced, the emulator has
// no authentication, and TestIamPermissions answers as for an owner.
type iamService struct {
	iampb.UnimplementedIAMPolicyServer
	st *state
}

// policies are the IAM policies set, by resource name.
type policies struct {
	mu    sync.Mutex
	m     map[string]*iampb.Policy
	etags uint64
}

// forget drops a deleted resource's policy (a resource created again
// under the name starts with none, as in the service).
func (ps *policies) forget(name string) {
	ps.mu.Lock()
	delete(ps.m, name)
	ps.mu.Unlock()
}

// emptyPolicyEtag is the etag the service gives a resource with no policy.
var emptyPolicyEtag = []byte{0x00, 0x20, 0x01}

// resource checks an IAM resource name and that the resource exists.
func (s *iamService) resource(name string) error {
	parts := strings.Split(name, "/")
	kind := "resources"
	if len(parts) == 4 {
		kind = parts[2]
	}
	switch kind {
	case "topics", "subscriptions", "snapshots", "schemas":
	default:
		return status.Errorf(codes.InvalidArgument, "Invalid resource name: (name=%s): expected projects/P/topics/T, subscriptions/S, snapshots/N or schemas/S", name)
	}
	if err := checkName(name, kind); err != nil {
		return err
	}
	st := s.st
	st.mu.RLock()
	defer st.mu.RUnlock()
	found := false
	switch kind {
	case "topics":
		found = st.topics[name] != nil
	case "subscriptions":
		found = st.subs[name] != nil
	case "snapshots":
		found = st.snapshots[name] != nil
	case "schemas":
		found = st.schemas[name] != nil
	}
	if !found {
		return notFound(strings.ToUpper(kind[:1])+singular(kind[1:]), name)
	}
	return nil
}

func (s *iamService) GetIamPolicy(_ context.Context, req *iampb.GetIamPolicyRequest) (*iampb.Policy, error) {
	if err := s.resource(req.Resource); err != nil {
		return nil, err
	}
	ps := &s.st.policies
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if p := ps.m[req.Resource]; p != nil {
		return proto.Clone(p).(*iampb.Policy), nil
	}
	return &iampb.Policy{Etag: emptyPolicyEtag}, nil
}

func (s *iamService) SetIamPolicy(_ context.Context, req *iampb.SetIamPolicyRequest) (*iampb.Policy, error) {
	if err := s.resource(req.Resource); err != nil {
		return nil, err
	}
	if req.Policy == nil {
		return nil, status.Error(codes.InvalidArgument, "set IAM policy: a policy is required")
	}
	for _, b := range req.Policy.Bindings {
		if err := checkBinding(b); err != nil {
			return nil, err
		}
	}
	ps := &s.st.policies
	ps.mu.Lock()
	defer ps.mu.Unlock()
	cur := ps.m[req.Resource]
	curEtag := emptyPolicyEtag
	if cur != nil {
		curEtag = cur.Etag
	}
	if len(req.Policy.Etag) > 0 && string(req.Policy.Etag) != string(curEtag) {
		return nil, status.Error(codes.Aborted, "There were concurrent policy changes. Please retry the whole read-modify-write with exponential backoff.")
	}
	p := proto.Clone(req.Policy).(*iampb.Policy)
	if cur != nil && req.UpdateMask != nil && len(req.UpdateMask.Paths) > 0 {
		// Only the fields the mask names change (the default mask is
		// "bindings, etag").
		next := proto.Clone(cur).(*iampb.Policy)
		for _, path := range req.UpdateMask.Paths {
			switch path {
			case "bindings":
				next.Bindings = p.Bindings
			case "audit_configs":
				next.AuditConfigs = p.AuditConfigs
			case "version":
				next.Version = p.Version
			case "etag":
			default:
				return nil, status.Errorf(codes.InvalidArgument, "set IAM policy: unknown field %q in update_mask", path)
			}
		}
		p = next
	}
	var bindings []*iampb.Binding
	for _, b := range p.Bindings {
		if len(b.Members) > 0 { // bindings without members are dropped, as in the service
			bindings = append(bindings, b)
		}
	}
	p.Bindings = bindings
	if p.Version == 0 {
		p.Version = 1
	}
	ps.etags++
	p.Etag = binary.BigEndian.AppendUint64([]byte{0x07}, ps.etags)
	if ps.m == nil {
		ps.m = map[string]*iampb.Policy{}
	}
	ps.m[req.Resource] = p
	return proto.Clone(p).(*iampb.Policy), nil
}

// checkBinding checks a role ("roles/...", or a custom role of a project
// or organization) and its members' forms.
func checkBinding(b *iampb.Binding) error {
	r := b.Role
	predefined := strings.HasPrefix(r, "roles/") && len(r) > len("roles/")
	custom := (strings.HasPrefix(r, "projects/") || strings.HasPrefix(r, "organizations/")) && strings.Contains(r, "/roles/")
	if !predefined && !custom {
		return status.Errorf(codes.InvalidArgument, "Role %s is not supported for this resource.", r)
	}
	for _, m := range b.Members {
		if !validMember(m) {
			return status.Errorf(codes.InvalidArgument, "Invalid member type: %s (expected user:, serviceAccount:, group:, domain:, principal://, principalSet://, allUsers or allAuthenticatedUsers)", m)
		}
	}
	return nil
}

func validMember(m string) bool {
	if m == "allUsers" || m == "allAuthenticatedUsers" {
		return true
	}
	for _, p := range []string{"user:", "serviceAccount:", "group:", "domain:", "deleted:", "projectOwner:", "projectEditor:", "projectViewer:",
		"principal://", "principalSet://"} {
		if strings.HasPrefix(m, p) && len(m) > len(p) {
			return true
		}
	}
	return false
}

// TestIamPermissions answers as for an owner: every permission asked for
// is held. Wildcards are refused, as the service refuses them; a resource
// that does not exist holds none.
func (s *iamService) TestIamPermissions(_ context.Context, req *iampb.TestIamPermissionsRequest) (*iampb.TestIamPermissionsResponse, error) {
	for _, p := range req.Permissions {
		if strings.ContainsAny(p, "*") || p == "" {
			return nil, status.Errorf(codes.InvalidArgument, "Permissions ('%s') with wildcards are not allowed.", p)
		}
	}
	if err := s.resource(req.Resource); err != nil {
		if status.Code(err) == codes.NotFound {
			return &iampb.TestIamPermissionsResponse{}, nil
		}
		return nil, err
	}
	return &iampb.TestIamPermissionsResponse{Permissions: req.Permissions}, nil
}
