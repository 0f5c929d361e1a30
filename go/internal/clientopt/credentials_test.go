package clientopt

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

const fakeKey = `{"type": "service_account", "private_key": "-----BEGIN PRIVATE KEY-----\nSECRETMATERIAL\n-----END PRIVATE KEY-----\n", "client_email": "a@p.iam.gserviceaccount.com"}`

func TestSecretNeverPrints(t *testing.T) {
	o := Options{Endpoint: "e:443", CredentialsJSON: Secret(fakeKey)}
	for _, out := range []string{
		fmt.Sprint(o), fmt.Sprintf("%v %+v %#v %s %q %x", o, o, o, o.CredentialsJSON, o.CredentialsJSON, o.CredentialsJSON),
		fmt.Errorf("config %v", o).Error(),
	} {
		if strings.Contains(out, "SECRETMATERIAL") {
			t.Fatalf("secret printed: %s", out)
		}
	}
	b, _ := json.Marshal(o)
	if strings.Contains(string(b), "SECRETMATERIAL") {
		t.Fatalf("secret in JSON: %s", b)
	}
	var back Options
	if err := json.Unmarshal([]byte(`{"credentials_json": `+strconvQuote(fakeKey)+`}`), &back); err != nil || string(back.CredentialsJSON) != fakeKey {
		t.Fatalf("unmarshal: %v", err)
	}
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }

func TestCredentialsJSONErrorsDoNotQuoteIt(t *testing.T) {
	cases := map[string]string{
		fakeKey[:60]:                        "syntax error at byte",
		`["SECRETMATERIAL"]`:                "not a JSON object",
		`{"private_key": "SECRETMATERIAL"}`: `has no "type"`,
		`{"type": "SECRETMATERIAL"}`:        "expected service_account",
	}
	for raw, want := range cases {
		err := Options{CredentialsJSON: Secret(raw)}.Validate()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%.20q: err = %v, want %q", raw, err, want)
			continue
		}
		if strings.Contains(err.Error(), "SECRETMATERIAL") && want != "expected service_account" {
			t.Errorf("error quotes the credentials: %v", err)
		}
	}
	if err := (Options{CredentialsJSON: fakeKey}).Validate(); err != nil {
		t.Errorf("a service-account key: %v", err)
	}
}

func TestImpersonationOptionsAreChecked(t *testing.T) {
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", "")
	cases := []struct {
		o    Options
		want string
	}{
		{Options{ImpersonateServiceAccount: "writer"}, "service account email"},
		{Options{IAMCredentialsEndpoint: "https://x"}, "only used with impersonate_service_account"},
		{Options{ImpersonateServiceAccount: "w@p.iam.gserviceaccount.com", IAMCredentialsEndpoint: "x"}, "base URL"},
		{Options{ImpersonateServiceAccount: "w@p.iam.gserviceaccount.com", IAMCredentialsEndpoint: "https://x"}, "needs the source credentials"},
		{Options{CredentialsFile: "/k.json", CredentialsJSON: fakeKey}, "exclusive"},
	}
	for _, c := range cases {
		if err := c.o.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err = %v, want %q", c.o, err, c.want)
		}
	}
	ok := Options{ImpersonateServiceAccount: "w@p.iam.gserviceaccount.com", IAMCredentialsEndpoint: "https://x", CredentialsJSON: fakeKey}
	if err := ok.Validate(); err != nil {
		t.Errorf("valid impersonation: %v", err)
	}
	if n := len(ok.credentialOptions()); n != 1 {
		t.Errorf("impersonation gives %d credential options, want 1", n)
	}
}

func TestEmulatorVariableIsAppliedOnlyByResolve(t *testing.T) {
	saved := emulatorEnv
	t.Cleanup(func() { emulatorEnv = saved })
	t.Setenv("PUBSUB_EMULATOR_HOST", "")
	emulatorEnv = "127.0.0.1:7" // as taken from the environment at load
	if got := (Options{}).Resolve().EmulatorHost; got != "127.0.0.1:7" {
		t.Fatalf("Resolve().EmulatorHost = %q, want the variable taken at load", got)
	}
	if got := (Options{Endpoint: "e:443"}).Resolve().EmulatorHost; got != "" {
		t.Fatalf("an explicit endpoint must win, got emulator %q", got)
	}
}
