// Package clientopt turns the connection part of a user config (endpoint,
// emulator, credentials) into client options shared by the subscriber,
// the publisher and the admin helper. Status codes, retry and backoff are
// in package rpc.
package clientopt

import (
	"fmt"
	"os"
	"strings"

	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// Options says where Pub/Sub is and how to authenticate.
type Options struct {
	// EmulatorHost is host:port of an emulator: plaintext, no auth.
	// Empty means the PUBSUB_EMULATOR_HOST variable, else production.
	EmulatorHost string `json:"emulator_host"`
	// Endpoint overrides the production endpoint (TLS, authenticated).
	Endpoint string `json:"endpoint"`
	// CredentialsFile is a credentials JSON file (a service-account key,
	// or any type ADC accepts); empty means ADC.
	CredentialsFile string `json:"credentials_file"`
	// CredentialsJSON is the same JSON inline (exclusive with
	// CredentialsFile). It never appears in errors or formatted output.
	CredentialsJSON Secret `json:"credentials_json"`
	// ImpersonateServiceAccount is the email of a service account to act
	// as: the credentials above (or ADC) get short-lived tokens for it from
	// the IAM Credentials API (they need roles/iam.serviceAccountTokenCreator).
	ImpersonateServiceAccount string `json:"impersonate_service_account"`
	// IAMCredentialsEndpoint is the base URL of the IAM Credentials API
	// used for impersonation (private service connect); empty means
	// https://iamcredentials.googleapis.com.
	IAMCredentialsEndpoint string `json:"iam_credentials_endpoint"`
}

// emulatorEnv is PUBSUB_EMULATOR_HOST as the process started. The variable
// is then removed from the process environment: Google's generated clients
// read it themselves (apiv1's emulator hook) and would dial it in plaintext
// without credentials even when a config names an Endpoint. Resolve is the
// one place that applies it.
var emulatorEnv = takeEmulatorEnv()

func takeEmulatorEnv() string {
	v := os.Getenv("PUBSUB_EMULATOR_HOST")
	if v != "" {
		os.Unsetenv("PUBSUB_EMULATOR_HOST")
	}
	return v
}

// Resolve fills EmulatorHost from the environment when neither it nor an
// Endpoint is set.
func (o Options) Resolve() Options {
	if o.EmulatorHost == "" && o.Endpoint == "" {
		o.EmulatorHost = os.Getenv("PUBSUB_EMULATOR_HOST")
		if o.EmulatorHost == "" {
			o.EmulatorHost = emulatorEnv
		}
	}
	return o
}

// Validate checks the options without touching the network.
func (o Options) Validate() error {
	o = o.Resolve()
	if o.EmulatorHost != "" && o.Endpoint != "" {
		return fmt.Errorf("emulator_host and endpoint are exclusive: set one")
	}
	if o.EmulatorHost != "" && !strings.Contains(o.EmulatorHost, ":") {
		return fmt.Errorf("emulator_host %q must be host:port, e.g. 127.0.0.1:8085", o.EmulatorHost)
	}
	if o.CredentialsFile != "" && o.CredentialsJSON != "" {
		return fmt.Errorf("credentials_file and credentials_json are exclusive: set one")
	}
	if o.CredentialsFile != "" {
		if _, err := os.Stat(o.CredentialsFile); err != nil {
			return fmt.Errorf("credentials_file %q: %v (expected a service-account key JSON file)", o.CredentialsFile, err)
		}
	}
	if o.CredentialsJSON != "" {
		if _, err := credentialsType([]byte(o.CredentialsJSON)); err != nil {
			return fmt.Errorf("credentials_json: %v", err)
		}
	}
	return o.validateImpersonation()
}

// ClientOptions are the options for the generated apiv1 clients.
func (o Options) ClientOptions() []option.ClientOption {
	o = o.Resolve()
	opts := []option.ClientOption{option.WithTelemetryDisabled()}
	if o.EmulatorHost != "" {
		return append(opts,
			option.WithEndpoint(o.EmulatorHost),
			option.WithoutAuthentication(),
			option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())),
		)
	}
	if o.Endpoint != "" {
		opts = append(opts, option.WithEndpoint(o.Endpoint))
	}
	return append(opts, o.credentialOptions()...)
}

// Limit is the default and the range of one numeric config field (0 means
// the default). Max 0: no upper bound. The subscriber and the publisher
// keep a table of them by JSON key, the one place they are written;
// cmd/contract hands them to Python.
type Limit struct {
	Default, Min, Max int64
}

// ApplyLimit replaces a 0 in *v with the default of key in limits and
// checks the range; the error names the key. A key missing from limits is
// a bug.
func ApplyLimit[T int | int64](limits map[string]Limit, key string, v *T) error {
	l, ok := limits[key]
	if !ok {
		panic("no limit for config key " + key)
	}
	if *v == 0 {
		*v = T(l.Default)
	}
	switch {
	case l.Max == 0 && int64(*v) < l.Min:
		return fmt.Errorf("%s = %d is out of range: must be at least %d (0 or absent means the default %d)", key, *v, l.Min, l.Default)
	case l.Max != 0 && (int64(*v) < l.Min || int64(*v) > l.Max):
		return fmt.Errorf("%s = %d is out of range: must be between %d and %d (0 or absent means the default %d)", key, *v, l.Min, l.Max, l.Default)
	}
	return nil
}
