package protoschema

import (
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"
)

const reading = `syntax = "proto3";
package t;
import "google/protobuf/timestamp.proto";
message Reading {
  message Place { string name = 1; }
  int64 id = 1;
  map<string, int64> counts = 2;
  Place place = 3;
  google.protobuf.Timestamp at = 4;
}`

func TestCompileListsMessagesAndBuildsASet(t *testing.T) {
	s, err := Compile(reading)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.MessageNames(); !slices.Equal(got, []string{"t.Reading", "t.Reading.Place"}) {
		t.Fatalf("messages %v (map entries are left out)", got)
	}
	md, err := s.Message()
	if err != nil || md.FullName() != "t.Reading" {
		t.Fatalf("message %v, %v", md, err)
	}
	raw, err := s.DescriptorSet()
	if err != nil {
		t.Fatal(err)
	}
	var set descriptorpb.FileDescriptorSet
	if err := proto.Unmarshal(raw, &set); err != nil {
		t.Fatal(err)
	}
	if n := len(set.File); n != 2 || set.File[0].GetName() != "google/protobuf/timestamp.proto" || set.File[1].GetName() != FileName {
		t.Fatalf("the set holds %d files, imports first: %v", n, set.File)
	}
	if err := Validate(md, []byte(`{"id": "3", "place": {"name": "x"}}`), false); err != nil {
		t.Fatal(err)
	}
	if err := Validate(md, []byte{0x08}, true); err == nil {
		t.Fatal("truncated binary passed")
	}
}

func TestCompileReportsEveryError(t *testing.T) {
	_, err := Compile(`syntax = "proto3"; message A { nope x = 1; alsonope y = 2; }`)
	if err == nil || !strings.Contains(err.Error(), "does not compile") ||
		!strings.Contains(err.Error(), "nope") || !strings.Contains(err.Error(), "alsonope") {
		t.Fatalf("err %v", err)
	}
	if _, err := Compile(`syntax = "proto3"; import "other.proto"; message A {}`); err == nil {
		t.Fatal("an import other than the well-known types compiled")
	}
}
