package emulator

import (
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// checkName validates a resource name "projects/P/<kind>/ID" as the service
// does: the ID is at most 255 characters, starts with a letter, holds
// letters, digits and - _ . ~ + %, and does not start with "goog". The
// service's minimum of 3 characters is not enforced: Google's emulator
// accepts shorter IDs and tests everywhere use them (docs/emulator.md).
func checkName(name, kind string) error {
	parts := strings.Split(name, "/")
	if len(parts) != 4 || parts[0] != "projects" || parts[1] == "" || parts[2] != kind {
		return status.Errorf(codes.InvalidArgument, "invalid %s name %q: expected projects/PROJECT/%s/ID", singular(kind), name, kind)
	}
	id := parts[3]
	ok := len(id) >= 1 && len(id) <= 255 && isLetter(id[0]) && !strings.HasPrefix(id, "goog")
	for i := 0; ok && i < len(id); i++ {
		c := id[i]
		ok = isLetter(c) || (c >= '0' && c <= '9') || strings.IndexByte("-_.~+%", c) >= 0
	}
	if !ok {
		return status.Errorf(codes.InvalidArgument, "invalid %s name %q: the ID must be 1-255 characters, start with a letter, "+
			"hold only letters, digits and - _ . ~ + %%, and not start with \"goog\"", singular(kind), name)
	}
	return nil
}

func singular(kind string) string { return strings.TrimSuffix(kind, "s") }

func isLetter(c byte) bool { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }

// project is the "projects/P" prefix of a resource name.
func project(name string) string {
	parts := strings.SplitN(name, "/", 3)
	if len(parts) < 2 {
		return name
	}
	return parts[0] + "/" + parts[1]
}

func notFound(kind, name string) error {
	return status.Errorf(codes.NotFound, "%s not found: %s", kind, name)
}
