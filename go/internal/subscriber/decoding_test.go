package subscriber

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/pubsub-go/pubsub-go/go/internal/decode"
	"github.com/pubsub-go/pubsub-go/go/internal/rawbatch"
	"github.com/pubsub-go/pubsub-go/go/internal/rpc"
)

// Schema mode: Next decodes payloads with a real decoder module (built
// from wasm-decoders with the local Go toolchain) against pstest.

var (
	guestDir string
	guests   sync.Map // package path -> *guest
)

type guest struct {
	once sync.Once
	path string
	err  error
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "pubsub-go-subscriber-wasm-")
	if err != nil {
		panic(err)
	}
	guestDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// guestModule builds ./<pkg> of wasm-decoders (e.g. "cmd/json") once per
// test binary (the Go build cache makes later runs quick).
func guestModule(t *testing.T, pkg string) string {
	t.Helper()
	v, _ := guests.LoadOrStore(pkg, &guest{})
	g := v.(*guest)
	g.once.Do(func() {
		src, err := filepath.Abs("../../../wasm-decoders")
		if err != nil {
			g.err = err
			return
		}
		g.path = filepath.Join(guestDir, filepath.Base(pkg)+".wasm")
		cmd := exec.Command("go", "build", "-buildmode=c-shared", "-trimpath", "-ldflags=-s -w", "-o", g.path, "./"+pkg)
		cmd.Dir = src
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
		if out, err := cmd.CombinedOutput(); err != nil {
			g.err = err
			t.Logf("go build %s: %s", pkg, out)
		}
	})
	if g.err != nil {
		t.Fatalf("building %s: %v", pkg, g.err)
	}
	return g.path
}

var eventSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "tags", Type: arrow.ListOfField(arrow.Field{Name: "element", Type: arrow.BinaryTypes.String, Nullable: true}), Nullable: true},
}, nil)

func schemaB64(t testing.TB, s *arrow.Schema) string {
	t.Helper()
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(s))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes())
}

func TestDecodedBatchHasDecodedRawAndErrorColumns(t *testing.T) {
	// The built-in decoder natively (format only), and its .wasm build.
	t.Run("native", func(t *testing.T) {
		testDecodedBatch(t, &decode.DecoderConfig{Format: "json", Schema: schemaB64(t, eventSchema)})
	})
	t.Run("wasm", func(t *testing.T) {
		testDecodedBatch(t, &decode.DecoderConfig{Wasm: guestModule(t, "cmd/json"), Format: "json", Schema: schemaB64(t, eventSchema)})
	})
}

func testDecodedBatch(t *testing.T, dc *decode.DecoderConfig) {
	srv := newServer(t)
	good := srv.Publish(testTopic, []byte(`{"id": 7, "tags": ["a", "b"]}`), map[string]string{"k": "v"})
	bad := srv.Publish(testTopic, []byte(`{"id": "seven"`), nil)
	cfg := testConfig(srv)
	cfg.Decoder = dc
	s := openTest(t, cfg, fast)

	var got []string
	waitFor(t, 10*time.Second, "2 decoded rows", func() bool {
		b, err := s.Next(context.Background(), 2, 100*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Release()
		rec := b.Record
		if want := 2 + len(rawbatch.Schema().Fields()) + 1; int(rec.NumCols()) != want {
			t.Fatalf("schema %v: want %d columns", rec.Schema(), want)
		}
		sc := rec.Schema()
		if !sc.Field(0).Equal(eventSchema.Field(0)) || !sc.Field(1).Equal(eventSchema.Field(1)) ||
			sc.Field(2).Name != "message_id" || sc.Field(int(rec.NumCols())-1).Name != decode.DecodeErrorColumn {
			t.Fatalf("schema %v", sc)
		}
		ids := rec.Column(2).(*array.String)
		id := rec.Column(0).(*array.Int64)
		tags := rec.Column(1).(*array.List)
		payload := rec.Column(2 + rawbatch.ColPayload).(*array.Binary)
		errs := rec.Column(int(rec.NumCols()) - 1).(*array.String)
		for i := 0; i < int(rec.NumRows()); i++ {
			switch ids.Value(i) {
			case good:
				start, end := tags.ValueOffsets(i)
				if id.Value(i) != 7 || errs.IsValid(i) || end-start != 2 || !strings.Contains(string(payload.Value(i)), `"id": 7`) {
					t.Errorf("good row: id=%v tags=%d..%d err=%q", id.Value(i), start, end, errs.Value(i))
				}
			case bad:
				if id.IsValid(i) || !errs.IsValid(i) || errs.Value(i) == "" || string(payload.Value(i)) != `{"id": "seven"` {
					t.Errorf("bad row: id valid=%v err=%q payload=%q", id.IsValid(i), errs.Value(i), payload.Value(i))
				}
			default:
				t.Errorf("unexpected message %s", ids.Value(i))
			}
			got = append(got, strings.Clone(ids.Value(i)))
		}
		return len(got) >= 2
	})
	if st := s.Stats(); st.DecodeErrors != 1 {
		t.Errorf("stats %+v, want decode_errors=1", st)
	}

	// An empty batch has the same schema, without calling the module.
	b, err := s.Next(context.Background(), 1, 10*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release()
	if b.Record.NumRows() != 0 || b.Record.NumCols() != 2+int64(len(rawbatch.Schema().Fields()))+1 {
		t.Errorf("empty batch: %d rows, schema %v", b.Record.NumRows(), b.Record.Schema())
	}
}

func TestRunawayDecoderFailsTheBatchAndNacksIt(t *testing.T) {
	srv := newServer(t)
	id := srv.Publish(testTopic, []byte("loop"), nil)
	cfg := testConfig(srv)
	cfg.Decoder = &decode.DecoderConfig{Wasm: guestModule(t, "internal/testguests/hostile"), Format: "hostile", TimeoutMs: 300}
	s := openTest(t, cfg, fast)

	var err error
	waitFor(t, 10*time.Second, "the batch to fail", func() bool {
		var b *Batch
		b, err = s.Next(context.Background(), 1, 100*time.Millisecond)
		if err == nil {
			b.Release()
		}
		return err != nil
	})
	if rpc.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("Next = %v (code %v), want DEADLINE_EXCEEDED", err, rpc.Code(err))
	}
	for _, want := range []string{"time limit", "decoder.timeout_ms=300", id, "nacked"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	// Nothing handed out is left held (a redelivered copy may already be
	// buffered again).
	if st := s.Stats(); st.Nacked != 1 || st.Held != st.Buffered {
		t.Errorf("stats %+v, want the message nacked", st)
	}
	// The nack reached the server: the message comes back and fails again.
	waitFor(t, 10*time.Second, "the runaway message to fail again", func() bool {
		b, err := s.Next(context.Background(), 1, 100*time.Millisecond)
		if err == nil {
			b.Release()
		}
		return rpc.Code(err) == codes.DeadlineExceeded && strings.Contains(err.Error(), id)
	})

	// The subscriber and the decoder go on, on a fresh instance. The
	// runaway message is dropped first (a seek to now acks what was
	// published before): a lot fails as a whole, so a message that came in
	// the same lot as it would be nacked with it on every redelivery.
	if _, err := srv.GServer.Seek(context.Background(), &pb.SeekRequest{Subscription: testSub,
		Target: &pb.SeekRequest_Time{Time: timestamppb.Now()}}); err != nil {
		t.Fatal(err)
	}
	srv.Publish(testTopic, []byte("ok"), nil)
	var seen []string // what Next gave, for the failure message
	start := time.Now()
	ok := eventually(10*time.Second, func() bool {
		b, err := s.Next(context.Background(), 1, 100*time.Millisecond)
		at := time.Since(start).Round(time.Millisecond)
		if err != nil {
			// A copy of the runaway message delivered before the seek
			// may still fail once.
			seen = append(seen, fmt.Sprintf("%v: %v", at, err))
			return false
		}
		defer b.Release()
		if b.Record.NumRows() == 0 {
			return false
		}
		got := b.Record.Column(0).(*array.String).Value(0)
		seen = append(seen, fmt.Sprintf("%v: %q", at, got))
		return got == "ok"
	})
	if !ok {
		t.Fatalf(`timed out after 10s waiting for the "ok" message; Next gave:%s`, "\n"+strings.Join(seen, "\n"))
	}
}

func TestDecoderConfigErrorsNameTheKey(t *testing.T) {
	srv := newServer(t)
	wasm := guestModule(t, "cmd/json")
	clash := arrow.NewSchema([]arrow.Field{{Name: "payload", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	cases := []struct {
		name string
		dc   decode.DecoderConfig
		code codes.Code
		want []string
	}{
		{"no wasm", decode.DecoderConfig{}, codes.InvalidArgument, []string{"decoder.wasm", "decoder.format", "built-in"}},
		{"not a built-in", decode.DecoderConfig{Format: "csv"}, codes.InvalidArgument, []string{"decoder.format", `"csv"`, "avro, json"}},
		{"built-in rejects", decode.DecoderConfig{Format: "json"}, codes.InvalidArgument, []string{"starting the decoder", "built-in json", "schema"}},
		{"missing wasm", decode.DecoderConfig{Wasm: "/nonexistent/x.wasm"}, codes.InvalidArgument, []string{"decoder.wasm", "/nonexistent/x.wasm"}},
		{"not base64", decode.DecoderConfig{Wasm: wasm, Schema: "%%"}, codes.InvalidArgument, []string{"decoder.schema", "base64"}},
		{"not a schema", decode.DecoderConfig{Wasm: wasm, Schema: "AAAA"}, codes.InvalidArgument, []string{"decoder.schema", "Arrow IPC"}},
		{"clash", decode.DecoderConfig{Wasm: wasm, Schema: schemaB64(t, clash)}, codes.InvalidArgument, []string{"decoder.schema", `"payload"`}},
		{"memory", decode.DecoderConfig{Wasm: wasm, MemoryLimitMB: 5000}, codes.InvalidArgument, []string{"decoder.memory_limit_mb"}},
		{"timeout", decode.DecoderConfig{Wasm: wasm, TimeoutMs: -1}, codes.InvalidArgument, []string{"decoder.timeout_ms"}},
		{"module rejects", decode.DecoderConfig{Wasm: wasm, Format: "json"}, codes.InvalidArgument, []string{"starting the decoder", "json decoder"}},
		{"unknown option", decode.DecoderConfig{Wasm: wasm, Schema: schemaB64(t, eventSchema), Options: map[string]string{"nope": "1"}}, codes.InvalidArgument, []string{"nope"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(srv)
			dc := tc.dc
			cfg.Decoder = &dc
			s, err := Open(context.Background(), cfg)
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			if rpc.Code(err) != tc.code {
				t.Errorf("Open = %v (code %v), want %v", err, rpc.Code(err), tc.code)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestDecoderConfigJSON(t *testing.T) {
	in := `{"subscription": "projects/p/subscriptions/s", "decoder": {"wasm": "/x.wasm", "format": "avro",
		"schema": "", "options": {"avro_schema": "{}"}, "memory_limit_mb": 64, "timeout_ms": 500}}`
	var c Config
	dec := json.NewDecoder(strings.NewReader(in))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		t.Fatal(err)
	}
	d := c.Decoder
	if d == nil || d.Wasm != "/x.wasm" || d.Format != "avro" || d.Options["avro_schema"] != "{}" || d.MemoryLimitMB != 64 || d.TimeoutMs != 500 {
		t.Errorf("decoded %+v", d)
	}
}
