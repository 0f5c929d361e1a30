package conn

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestCodeSeesThroughWrapping(t *testing.T) {
	cases := []struct {
		err  error
		want codes.Code
	}{
		{nil, codes.OK},
		{status.Error(codes.NotFound, "x"), codes.NotFound},
		{fmt.Errorf("open: %w", status.Error(codes.PermissionDenied, "x")), codes.PermissionDenied},
		{context.DeadlineExceeded, codes.DeadlineExceeded},
		{fmt.Errorf("wait: %w", context.Canceled), codes.Canceled},
		{errors.New("plain"), codes.Unknown},
	}
	for _, c := range cases {
		if got := Code(c.err); got != c.want {
			t.Errorf("Code(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

func TestRetryableSplitsTransientFromDefinitive(t *testing.T) {
	for _, c := range []codes.Code{codes.Unavailable, codes.DeadlineExceeded, codes.ResourceExhausted, codes.Aborted, codes.Internal} {
		if !Retryable(status.Error(c, "x")) {
			t.Errorf("%v should be retryable", c)
		}
	}
	for _, c := range []codes.Code{codes.PermissionDenied, codes.NotFound, codes.InvalidArgument, codes.FailedPrecondition, codes.Unauthenticated} {
		if Retryable(status.Error(c, "x")) {
			t.Errorf("%v must not be retried", c)
		}
	}
}

func TestValidateNamesTheProblem(t *testing.T) {
	t.Setenv("PUBSUB_EMULATOR_HOST", "")
	if err := (Options{EmulatorHost: "localhost"}).Validate(); err == nil || !strings.Contains(err.Error(), "host:port") {
		t.Errorf("emulator without port: %v", err)
	}
	if err := (Options{EmulatorHost: "a:1", Endpoint: "b:2"}).Validate(); err == nil || !strings.Contains(err.Error(), "exclusive") {
		t.Errorf("both endpoints: %v", err)
	}
	if err := (Options{CredentialsFile: "/nonexistent/key.json"}).Validate(); err == nil || !strings.Contains(err.Error(), "service-account") {
		t.Errorf("missing key file: %v", err)
	}
	key := filepath.Join(t.TempDir(), "key.json")
	if err := os.WriteFile(key, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := (Options{CredentialsFile: key}).Validate(); err != nil {
		t.Errorf("existing key file: %v", err)
	}
}

func TestResolveReadsTheEmulatorVariable(t *testing.T) {
	t.Setenv("PUBSUB_EMULATOR_HOST", "127.0.0.1:9")
	if got := (Options{}).Resolve().EmulatorHost; got != "127.0.0.1:9" {
		t.Fatalf("Resolve().EmulatorHost = %q", got)
	}
	if got := (Options{Endpoint: "pubsub.example:443"}).Resolve().EmulatorHost; got != "" {
		t.Fatalf("an explicit endpoint must win over the variable, got %q", got)
	}
}
