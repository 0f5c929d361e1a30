package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/grpc/codes"
)

func getJSON(t *testing.T, method, url, body string, v any) int {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK && v != nil {
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			t.Fatal(err)
		}
	}
	return resp.StatusCode
}

func TestHTTPStatsResetConfig(t *testing.T) {
	in := startServer(t, func(o *options) { o.httpAddr = "127.0.0.1:0" })
	base := "http://" + in.httpAddr
	if _, err := rawSubscriber(t, in.addr).Pull(context.Background(), &pubsubpb.PullRequest{Subscription: testSub, MaxMessages: 7}); err != nil {
		t.Fatal(err)
	}

	var s Snapshot
	if code := getJSON(t, "GET", base+"/stats", "", &s); code != 200 || s.Delivered != 7 || s.Outstanding != 7 {
		t.Fatalf("/stats: %d %+v", code, s)
	}
	if code := getJSON(t, "POST", base+"/reset", "", &s); code != 200 || s.Delivered != 7 {
		t.Fatalf("/reset: %d %+v", code, s)
	}
	if code := getJSON(t, "GET", base+"/stats", "", &s); code != 200 || s.Delivered != 0 || s.Outstanding != 7 {
		t.Fatalf("/stats after reset: %d %+v", code, s)
	}

	// A partial update keeps the other fields.
	var f Faults
	code := getJSON(t, "POST", base+"/config", `{"publish_error_rate": 0.5, "publish_error_code": "RESOURCE_EXHAUSTED", "latency": "20ms"}`, &f)
	if code != 200 || f.PublishErrorRate != 0.5 || codes.Code(f.PublishErrorCode) != codes.ResourceExhausted ||
		f.Latency.String() != "20ms" || codes.Code(f.AckErrorCode) != codes.Unavailable {
		t.Fatalf("/config: %d %+v", code, f)
	}
	if got := in.faults.Load(); *got != f {
		t.Fatalf("server faults %+v, want %+v", *got, f)
	}
	for _, bad := range []string{`{"publish_error_rate": 2}`, `{"ack_error_code": "NOPE"}`, `{"latnecy": "1s"}`, `{"latency": "-1s"}`} {
		if code := getJSON(t, "POST", base+"/config", bad, nil); code != http.StatusBadRequest {
			t.Errorf("POST /config %s: status %d, want 400", bad, code)
		}
	}
	if got := in.faults.Load(); *got != f {
		t.Fatalf("rejected updates changed faults to %+v", *got)
	}
}
