package main

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/pubsub-go/pubsub-go/go/internal/subscriber"
)

// pg_subscriber_stats copies subscriber.Stats into struct PgSubscriberStats:
// the header must list the same int64 fields in the same order.
func TestStatsStructMatchesGo(t *testing.T) {
	h, err := os.ReadFile("../include/pubsubgo.h")
	if err != nil {
		t.Fatal(err)
	}
	body := regexp.MustCompile(`(?s)struct PgSubscriberStats \{(.*?)\};`).FindSubmatch(h)
	if body == nil {
		t.Fatal("struct PgSubscriberStats not found in pubsubgo.h")
	}
	var inC []string
	for _, m := range regexp.MustCompile(`int64_t (\w+);`).FindAllSubmatch(body[1], -1) {
		inC = append(inC, string(m[1]))
	}
	var inGo []string
	st := reflect.TypeFor[subscriber.Stats]()
	for i := range st.NumField() {
		f := st.Field(i)
		if f.Type.Kind() != reflect.Int64 {
			t.Errorf("Stats.%s is %s; the C struct has only int64_t fields", f.Name, f.Type)
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		inGo = append(inGo, name)
	}
	if !reflect.DeepEqual(inC, inGo) {
		t.Fatalf("struct PgSubscriberStats fields %v, subscriber.Stats JSON names %v: keep them field for field", inC, inGo)
	}
}
