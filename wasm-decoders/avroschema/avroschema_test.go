package avroschema

import (
	"strings"
	"testing"
)

const userAvro = `{"type":"record","name":"User","namespace":"t","fields":[
 {"name":"id","type":"long"},{"name":"name","type":["null","string"]},
 {"name":"tags","type":{"type":"array","items":"string"},"default":[]},
 {"name":"kind","type":{"type":"enum","name":"Kind","symbols":["A","B"]}}]}`

func TestAvroJSONAndBinaryValidation(t *testing.T) {
	s, err := Parse(userAvro)
	if err != nil {
		t.Fatal(err)
	}
	for _, ok := range []string{`{"id":1,"name":null,"kind":"A"}`, `{"id":2,"name":{"string":"x"},"tags":["a"],"kind":"B"}`,
		`{"id":3,"name":"bare","kind":"A"}`} {
		if err := s.ValidateJSON([]byte(ok)); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for bad, why := range map[string]string{`{"id":"1","name":null,"kind":"A"}`: "long expected", `{"id":1,"name":5,"kind":"A"}`: "union",
		`{"id":1,"name":null,"kind":"C"}`: "symbol", `{"name":null,"kind":"A"}`: "missing", `[1]`: "record"} {
		if err := s.ValidateJSON([]byte(bad)); err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("%s: err %v, want %q", bad, err, why)
		}
	}
	// id=3 (zigzag 6), name branch 1 "hi", tags: one block of 1 "a", end, kind 1.
	good := []byte{6, 2, 4, 'h', 'i', 2, 2, 'a', 0, 2}
	if err := s.ValidateBinary(good); err != nil {
		t.Errorf("binary: %v", err)
	}
	if err := s.ValidateBinary(good[:5]); err == nil {
		t.Error("truncated binary passed")
	}
	if err := s.ValidateBinary(append(good, 0)); err == nil {
		t.Error("binary with trailing bytes passed")
	}
}

func TestParseNamesAndRecursion(t *testing.T) {
	n, err := Parse(`{"type":"record","name":"R","namespace":"a.b","fields":[
	 {"name":"e","type":{"type":"enum","name":"E","symbols":["X"]}},
	 {"name":"f","type":"E"},{"name":"g","type":"a.b.E"},
	 {"name":"d","type":{"type":"bytes","logicalType":"decimal","precision":5,"scale":2}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	if n.Kind != Record || n.Name != "a.b.R" || n.Fields[1].Type != n.Fields[0].Type || n.Fields[2].Type != n.Fields[0].Type {
		t.Fatalf("named types not shared: %+v", n)
	}
	if d := n.Fields[3].Type; d.Logical != "decimal" || d.Precision != 5 || d.Scale != 2 {
		t.Fatalf("decimal: %+v", d)
	}
	rec := `{"type":"record","name":"L","fields":[{"name":"next","type":["null","L"]}]}`
	if _, err := Parse(rec); err == nil || !strings.Contains(err.Error(), "recursive reference") {
		t.Fatalf("recursive: %v", err)
	}
	l, err := ParseRecursive(rec)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.ValidateJSON([]byte(`{"next":{"L":{"next":null}}}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := Parse(`{`); err == nil || !strings.Contains(err.Error(), "the Avro schema is not JSON") {
		t.Fatalf("not JSON: %v", err)
	}
}
