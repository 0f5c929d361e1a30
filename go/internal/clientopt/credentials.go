package clientopt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"

	"cloud.google.com/go/auth"
	"cloud.google.com/go/auth/credentials"
	"cloud.google.com/go/auth/credentials/impersonate"
	"google.golang.org/api/option"
)

// Secret is a string that never prints: fmt verbs, %#v and errors that
// format a config show a placeholder instead of the value.
type Secret string

const redacted = "[redacted]"

func (Secret) String() string   { return redacted }
func (Secret) GoString() string { return redacted }

// Format covers every verb (%v, %s, %q, %x, ...).
func (Secret) Format(f fmt.State, _ rune) { fmt.Fprint(f, redacted) }

// MarshalJSON keeps a Secret out of JSON written back (logs, debug dumps).
func (Secret) MarshalJSON() ([]byte, error) { return json.Marshal(redacted) }

// UnmarshalJSON reads the value (configs arrive as JSON from the C API).
func (s *Secret) UnmarshalJSON(b []byte) error {
	var v string
	if err := json.Unmarshal(b, &v); err != nil {
		return errors.New("must be a JSON string holding the credentials JSON")
	}
	*s = Secret(v)
	return nil
}

// scopes of the tokens the impersonated service account gets.
var scopes = []string{"https://www.googleapis.com/auth/cloud-platform", "https://www.googleapis.com/auth/pubsub"}

const defaultIAMCredentialsEndpoint = "https://iamcredentials.googleapis.com"

// credentialsType returns the "type" of credentials JSON, checked, with
// errors that never quote the (secret) content.
func credentialsType(raw []byte) (option.CredentialsType, error) {
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			return "", fmt.Errorf("not valid JSON (syntax error at byte %d); expected a credentials JSON object such as a service-account key", syn.Offset)
		}
		return "", errors.New("not a JSON object; expected a credentials JSON object such as a service-account key")
	}
	switch t := option.CredentialsType(head.Type); t {
	case option.ServiceAccount, option.AuthorizedUser, option.ImpersonatedServiceAccount, option.ExternalAccount:
		return t, nil
	case "":
		return "", errors.New(`has no "type"; expected a credentials JSON such as a service-account key ("type": "service_account")`)
	default:
		return "", fmt.Errorf("has type %q; expected service_account, authorized_user, impersonated_service_account or external_account", head.Type)
	}
}

func (o Options) validateImpersonation() error {
	if o.ImpersonateServiceAccount == "" {
		if o.IAMCredentialsEndpoint != "" {
			return errors.New("iam_credentials_endpoint is only used with impersonate_service_account")
		}
		return nil
	}
	if !strings.Contains(o.ImpersonateServiceAccount, "@") {
		return fmt.Errorf("impersonate_service_account %q must be a service account email, e.g. reader@my-project.iam.gserviceaccount.com", o.ImpersonateServiceAccount)
	}
	if e := o.IAMCredentialsEndpoint; e != "" {
		if u, err := url.Parse(e); err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
			return fmt.Errorf("iam_credentials_endpoint %q must be a base URL, e.g. https://iamcredentials.googleapis.com", e)
		}
		if o.CredentialsJSON == "" && o.CredentialsFile == "" && os.Getenv("GOOGLE_APPLICATION_CREDENTIALS") == "" {
			return errors.New("iam_credentials_endpoint needs the source credentials as a file or JSON (or GOOGLE_APPLICATION_CREDENTIALS)")
		}
	}
	return nil
}

// sourceJSON is the credentials JSON given (inline, by file, or by
// GOOGLE_APPLICATION_CREDENTIALS when impersonating), or nil for ADC
// without a file (the metadata server, gcloud's user credentials).
func (o Options) sourceJSON(impersonating bool) ([]byte, error) {
	switch {
	case o.CredentialsJSON != "":
		return []byte(o.CredentialsJSON), nil
	case o.CredentialsFile != "":
		return os.ReadFile(o.CredentialsFile)
	case impersonating && os.Getenv("GOOGLE_APPLICATION_CREDENTIALS") != "":
		return os.ReadFile(os.Getenv("GOOGLE_APPLICATION_CREDENTIALS"))
	}
	return nil, nil
}

// credentialOptions authenticate the clients (not used with an emulator).
func (o Options) credentialOptions() []option.ClientOption {
	imp := o.ImpersonateServiceAccount != ""
	src, err := o.sourceJSON(imp)
	if err != nil {
		// Validate checked the file exists; let the client report why it
		// cannot read it when it is created.
		return []option.ClientOption{option.WithAuthCredentialsFile(option.ServiceAccount, o.CredentialsFile)}
	}
	if !imp {
		if src == nil {
			return nil // ADC
		}
		t, err := credentialsType(src)
		if err != nil {
			t = option.ServiceAccount // the client reports the mismatch
		}
		return []option.ClientOption{option.WithAuthCredentialsJSON(t, src)}
	}
	if src != nil {
		// The auth library's impersonated_service_account credentials: the
		// source credentials get a token for the target from the IAM
		// Credentials API, refreshed as it expires.
		endpoint := strings.TrimRight(o.IAMCredentialsEndpoint, "/")
		if endpoint == "" {
			endpoint = defaultIAMCredentialsEndpoint
		}
		doc, _ := json.Marshal(map[string]any{
			"type": "impersonated_service_account",
			"service_account_impersonation_url": fmt.Sprintf("%s/v1/projects/-/serviceAccounts/%s:generateAccessToken",
				endpoint, url.PathEscape(o.ImpersonateServiceAccount)),
			"source_credentials": json.RawMessage(src),
			"scopes":             scopes,
		})
		return []option.ClientOption{option.WithAuthCredentialsJSON(option.ImpersonatedServiceAccount, doc)}
	}
	// ADC from the metadata server: the auth library's impersonate package,
	// made on first use (it detects ADC, which may fail: the RPC reports it).
	lazy := &lazyImpersonation{target: o.ImpersonateServiceAccount}
	return []option.ClientOption{option.WithAuthCredentials(auth.NewCredentials(&auth.CredentialsOptions{TokenProvider: lazy}))}
}

type lazyImpersonation struct {
	target string
	once   sync.Once
	creds  *auth.Credentials
	err    error
}

func (l *lazyImpersonation) Token(ctx context.Context) (*auth.Token, error) {
	l.once.Do(func() {
		l.creds, l.err = impersonate.NewCredentials(&impersonate.CredentialsOptions{TargetPrincipal: l.target, Scopes: scopes})
	})
	if l.err != nil {
		return nil, fmt.Errorf("impersonating %s: %w", l.target, l.err)
	}
	return l.creds.Token(ctx)
}

// DefaultProject is the project of the given credentials, else of
// Application Default Credentials (key file, gcloud config, metadata
// server), for callers that got no project id.
func DefaultProject(ctx context.Context, o Options) (string, error) {
	src, err := o.sourceJSON(false)
	if err != nil {
		return "", err
	}
	creds, err := credentials.DetectDefault(&credentials.DetectOptions{Scopes: scopes, CredentialsJSON: src})
	if err != nil {
		return "", fmt.Errorf("no credentials to take a project from: %w", err)
	}
	p, err := creds.ProjectID(ctx)
	if err != nil {
		return "", err
	}
	if p == "" {
		return "", errors.New("the credentials name no project")
	}
	return p, nil
}
