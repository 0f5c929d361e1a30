package protodec

import (
	"errors"
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"

	// The well-known types a descriptor set may import without including
	// them (protoc without --include_imports): registered in GlobalFiles.
	_ "google.golang.org/protobuf/types/known/anypb"
	_ "google.golang.org/protobuf/types/known/durationpb"
	_ "google.golang.org/protobuf/types/known/emptypb"
	_ "google.golang.org/protobuf/types/known/fieldmaskpb"
	_ "google.golang.org/protobuf/types/known/structpb"
	_ "google.golang.org/protobuf/types/known/timestamppb"
	_ "google.golang.org/protobuf/types/known/wrapperspb"
)

// LoadDescriptorSet builds the files of a serialized FileDescriptorSet, in
// whatever order the set lists them; an import the set lacks is looked up
// among the well-known types.
func LoadDescriptorSet(raw []byte) (*protoregistry.Files, error) {
	var set descriptorpb.FileDescriptorSet
	if err := proto.Unmarshal(raw, &set); err != nil {
		return nil, fmt.Errorf("the descriptor set is not a serialized google.protobuf.FileDescriptorSet: %v", err)
	}
	if len(set.File) == 0 {
		return nil, errors.New("the descriptor set holds no files")
	}
	files := new(protoregistry.Files)
	res := resolver{files}
	pending := set.File
	for len(pending) > 0 {
		var next []*descriptorpb.FileDescriptorProto
		var lastErr error
		for _, fdp := range pending {
			if !res.depsReady(fdp) {
				next = append(next, fdp)
				continue
			}
			fd, err := protodesc.NewFile(fdp, res)
			if err == nil {
				err = files.RegisterFile(fd)
			}
			if err != nil {
				return nil, fmt.Errorf("descriptor set file %q: %v", fdp.GetName(), err)
			}
		}
		if len(next) == len(pending) {
			fdp := next[0]
			for _, dep := range fdp.GetDependency() {
				if _, err := res.FindFileByPath(dep); err != nil {
					lastErr = fmt.Errorf("descriptor set file %q imports %q, which the set does not hold "+
						"(build it with protoc --include_imports, or buf build)", fdp.GetName(), dep)
					break
				}
			}
			if lastErr == nil {
				lastErr = fmt.Errorf("descriptor set file %q: its imports form a cycle", fdp.GetName())
			}
			return nil, lastErr
		}
		pending = next
	}
	return files, nil
}

// resolver finds the set's own files first, then the well-known types.
type resolver struct{ local *protoregistry.Files }

func (r resolver) FindFileByPath(path string) (protoreflect.FileDescriptor, error) {
	if fd, err := r.local.FindFileByPath(path); err == nil {
		return fd, nil
	}
	return protoregistry.GlobalFiles.FindFileByPath(path)
}

func (r resolver) FindDescriptorByName(name protoreflect.FullName) (protoreflect.Descriptor, error) {
	if d, err := r.local.FindDescriptorByName(name); err == nil {
		return d, nil
	}
	return protoregistry.GlobalFiles.FindDescriptorByName(name)
}

func (r resolver) depsReady(fdp *descriptorpb.FileDescriptorProto) bool {
	for _, dep := range fdp.GetDependency() {
		if _, err := r.FindFileByPath(dep); err != nil {
			return false
		}
	}
	return true
}

// FindMessage finds a message by full name; a name without a dot may also
// be a message's short name when exactly one message in files has it.
func FindMessage(files *protoregistry.Files, name string) (protoreflect.MessageDescriptor, error) {
	name = strings.TrimPrefix(name, ".")
	if d, err := files.FindDescriptorByName(protoreflect.FullName(name)); err == nil {
		if md, ok := d.(protoreflect.MessageDescriptor); ok {
			return md, nil
		}
		return nil, fmt.Errorf("%q is not a message type", name)
	}
	var all []protoreflect.MessageDescriptor
	files.RangeFiles(func(fd protoreflect.FileDescriptor) bool {
		collect(fd.Messages(), &all)
		return true
	})
	var found []protoreflect.MessageDescriptor
	var names []string
	for _, md := range all {
		names = append(names, string(md.FullName()))
		if string(md.Name()) == name {
			found = append(found, md)
		}
	}
	if len(found) == 1 {
		return found[0], nil
	}
	if len(found) > 1 {
		return nil, fmt.Errorf("message name %q is ambiguous: give the full name (%s or %s)", name, found[0].FullName(), found[1].FullName())
	}
	if len(names) > 8 {
		names = append(names[:8], "...")
	}
	return nil, fmt.Errorf("no message type %q in the descriptor set (it has %s)", name, strings.Join(names, ", "))
}

func collect(ms protoreflect.MessageDescriptors, out *[]protoreflect.MessageDescriptor) {
	for i := 0; i < ms.Len(); i++ {
		md := ms.Get(i)
		if md.IsMapEntry() {
			continue
		}
		*out = append(*out, md)
		collect(md.Messages(), out)
	}
}

// MessageNames are the full names of every message type files define
// (nested ones included, map entries left out).
func MessageNames(files *protoregistry.Files) []string {
	var all []protoreflect.MessageDescriptor
	files.RangeFiles(func(fd protoreflect.FileDescriptor) bool {
		collect(fd.Messages(), &all)
		return true
	})
	out := make([]string, len(all))
	for i, md := range all {
		out[i] = string(md.FullName())
	}
	return out
}
