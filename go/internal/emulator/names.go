package emulator

import (
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// checkName validates a resource name "projects/P/<kind>/ID" as the service
// does, before any lookup: the ID is at most 255 characters, starts with a
// letter, holds letters, digits and - _ . ~ + %, and does not start with
// "goog"; else INVALID_ARGUMENT in the service's words, "Invalid [topics]
// name: (name=...)". The service's minimum of 3 characters is not
// enforced: Google's emulator accepts shorter IDs and tests everywhere use
// them (docs/emulator.md).
func checkName(name, kind string) error {
	parts := strings.Split(name, "/")
	if len(parts) != 4 || parts[0] != "projects" || !validProject(parts[1]) || parts[2] != kind || !validID(parts[3]) {
		return invalidName(kind, name)
	}
	return nil
}

// checkProject validates "projects/P" (a list's project or a schema's parent).
func checkProject(name string) error {
	parts := strings.Split(name, "/")
	if len(parts) != 2 || parts[0] != "projects" || !validProject(parts[1]) {
		return invalidName("projects", name)
	}
	return nil
}

func invalidName(kind, name string) error {
	return status.Errorf(codes.InvalidArgument, "Invalid [%s] name: (name=%s)", kind, name)
}

// validProject: a project ID or number (letters, digits, - . : _ for
// domain-scoped IDs).
func validProject(p string) bool {
	if p == "" || len(p) > 255 {
		return false
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		if !isLetter(c) && !(c >= '0' && c <= '9') && strings.IndexByte("-.:_", c) < 0 {
			return false
		}
	}
	return true
}

func validID(id string) bool {
	ok := len(id) >= 1 && len(id) <= 255 && isLetter(id[0]) && !strings.HasPrefix(id, "goog")
	for i := 0; ok && i < len(id); i++ {
		c := id[i]
		ok = isLetter(c) || (c >= '0' && c <= '9') || strings.IndexByte("-_.~+%", c) >= 0
	}
	return ok
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
