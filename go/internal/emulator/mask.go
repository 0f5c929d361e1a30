package emulator

import (
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// applyMask copies the field at one update_mask path ("labels",
// "schema_settings.first_revision_id", "retry_policy.minimum_backoff") from
// src to dst, clearing it in dst when src leaves it unset, as the service
// applies update masks. roots are the top-level fields the RPC may update;
// below them any field of the nested messages may be named. The error is
// the service's for a path it does not know. src must not be used after.
func applyMask(dst, src proto.Message, path, rpc string, roots map[string]bool) error {
	d, s := dst.ProtoReflect(), src.ProtoReflect()
	parts := strings.Split(path, ".")
	if !roots[parts[0]] {
		return badMask(rpc, d, path)
	}
	for i, name := range parts {
		fd := d.Descriptor().Fields().ByName(protoreflect.Name(name))
		if fd == nil {
			return badMask(rpc, dst.ProtoReflect(), path)
		}
		if i == len(parts)-1 {
			if s.Has(fd) {
				d.Set(fd, s.Get(fd))
			} else {
				d.Clear(fd)
			}
			return nil
		}
		if fd.Kind() != protoreflect.MessageKind || fd.IsList() || fd.IsMap() {
			return badMask(rpc, dst.ProtoReflect(), path)
		}
		d, s = d.Mutable(fd).Message(), s.Get(fd).Message()
	}
	return nil
}

func badMask(rpc string, m protoreflect.Message, path string) error {
	return status.Errorf(codes.InvalidArgument, "Invalid update_mask provided in the %s: '%s' is not a known %s field. "+
		"Note that field paths must be of the form 'push_config' rather than 'pushConfig'.", rpc, path, m.Descriptor().Name())
}
