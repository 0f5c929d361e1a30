package clientopt

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

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
