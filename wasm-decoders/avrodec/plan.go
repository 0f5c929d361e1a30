package avrodec

import (
	"fmt"

	"github.com/pubsub-go/pubsub-go/wasm-decoders/arrowlite"
)

// step is the compiled decoding of one Avro schema node into one Arrow
// type: checked once at init so that decoding is a plain walk.
type step struct {
	n *node
	t *arrowlite.DataType

	// Record: for each Avro field, the target child index or -1 to skip;
	// targets not fed by any Avro field become null.
	Fields  []*step
	target  []int
	missing []int

	elem *step // array items, map values

	// Union: one step per branch (nil for null). With members set, the
	// target is Spark's struct of member0..N and branch i writes member
	// members[i].
	Branches []*step
	members  []int

	// Long to timestamp: value * mul / div.
	mul, div int64

	// Enum: the symbol written for each index ("" when the reader's enum
	// has no such symbol and no default).
	syms []string

	// Schema resolution (resolve.go). Record: reader fields the writer
	// lacks, filled from their defaults. Union: why a writer branch cannot
	// be read (nil where it can). wrap: a writer's non-union value that is
	// one member of the reader union's member struct.
	defaults []fieldDefault
	bad      []error
	wrap     *step
	member   int
}

// fieldDefault is a reader field's default, binary-encoded once, and how
// it decodes into its target column.
type fieldDefault struct {
	col   int
	datum []byte
	st    *step
}

// plan compiles n against target type t.
func plan(n *node, t *arrowlite.DataType) (*step, error) {
	s := &step{n: n, t: t}
	mismatch := func() error {
		return fmt.Errorf("avro %s cannot be decoded into %s", describe(n), t)
	}
	switch n.Kind {
	case aNull:
		return s, nil
	case aBool:
		if t.ID != arrowlite.Bool {
			return nil, mismatch()
		}
	case aInt:
		switch {
		case t.ID == arrowlite.Int && t.Signed && t.BitWidth >= 32,
			t.ID == arrowlite.FloatingPoint, t.ID == arrowlite.Date:
		default:
			return nil, mismatch()
		}
	case aLong:
		switch {
		case t.ID == arrowlite.Int && t.Signed && t.BitWidth == 64, t.ID == arrowlite.FloatingPoint:
		case t.ID == arrowlite.Timestamp:
			from, ok := map[string]int{
				"timestamp-millis": 3, "timestamp-micros": 6, "timestamp-nanos": 9,
				"local-timestamp-millis": 3, "local-timestamp-micros": 6, "local-timestamp-nanos": 9,
			}[n.Logical]
			if !ok {
				return nil, mismatch()
			}
			to := [...]int{0, 3, 6, 9}[t.Unit&3]
			s.mul, s.div = 1, 1
			for ; from < to; from += 3 {
				s.mul *= 1000
			}
			for ; from > to; from -= 3 {
				s.div *= 1000
			}
		default:
			return nil, mismatch()
		}
	case aFloat, aDouble:
		if t.ID != arrowlite.FloatingPoint {
			return nil, mismatch()
		}
	case aBytes, aFixed, aString:
		switch t.ID {
		case arrowlite.Binary, arrowlite.Utf8:
		case arrowlite.Decimal:
			if n.Logical != "decimal" || int32(n.Scale) != t.Scale {
				return nil, mismatch()
			}
		default:
			return nil, mismatch()
		}
	case aEnum:
		if t.ID != arrowlite.Utf8 {
			return nil, mismatch()
		}
		s.syms = n.Symbols
	case aRecord:
		if t.ID != arrowlite.Struct {
			return nil, mismatch()
		}
		return s, s.record(t.Children)
	case aArray:
		if t.ID != arrowlite.List {
			return nil, mismatch()
		}
		e, err := plan(n.Items, t.Children[0].Type)
		if err != nil {
			return nil, fmt.Errorf("array items: %w", err)
		}
		s.elem = e
	case aMap:
		if t.ID != arrowlite.Map || t.Children[0].Type.Children[0].Type.ID != arrowlite.Utf8 {
			return nil, mismatch()
		}
		e, err := plan(n.Items, t.Children[0].Type.Children[1].Type)
		if err != nil {
			return nil, fmt.Errorf("map values: %w", err)
		}
		s.elem = e
	case aUnion:
		return s, s.union()
	}
	return s, nil
}

// record maps Avro fields to target fields by name.
func (s *step) record(targets []arrowlite.Field) error {
	fed := make([]bool, len(targets))
	for _, f := range s.n.Fields {
		idx := -1
		for j, tf := range targets {
			if tf.Name == f.Name && !fed[j] {
				idx = j
				break
			}
		}
		var fs *step
		if idx >= 0 {
			var err error
			if fs, err = plan(f.Type, targets[idx].Type); err != nil {
				return fmt.Errorf("%s: %w", f.Name, err)
			}
			fed[idx] = true
		}
		s.Fields = append(s.Fields, fs)
		s.target = append(s.target, idx)
	}
	for j, ok := range fed {
		if !ok {
			s.missing = append(s.missing, j)
		}
	}
	return nil
}

// union decodes either into the target directly (null plus one type, or
// int/long, float/double) or into Spark's member struct.
func (s *step) union() error {
	rest, _ := nonNull(s.n)
	direct := len(rest) <= 1 || (len(rest) == 2 && (kinds(rest, aInt, aLong) || kinds(rest, aFloat, aDouble)))
	if !direct && s.t.ID != arrowlite.Struct {
		direct = true // e.g. [string, bytes] into binary: try each branch as is
	}
	if direct {
		for _, b := range s.n.Branches {
			if b.Kind == aNull {
				s.Branches = append(s.Branches, nil)
				continue
			}
			bs, err := plan(b, s.t)
			if err != nil {
				return err
			}
			s.Branches = append(s.Branches, bs)
		}
		return nil
	}
	if len(s.t.Children) != len(rest) {
		return fmt.Errorf("avro union of %d non-null types needs a struct of %d members, got %s", len(rest), len(rest), s.t)
	}
	i := 0
	for _, b := range s.n.Branches {
		if b.Kind == aNull {
			s.Branches = append(s.Branches, nil)
			s.members = append(s.members, -1)
			continue
		}
		bs, err := plan(b, s.t.Children[i].Type)
		if err != nil {
			return fmt.Errorf("%s: %w", s.t.Children[i].Name, err)
		}
		s.Branches = append(s.Branches, bs)
		s.members = append(s.members, i)
		i++
	}
	return nil
}

func describe(n *node) string {
	names := [...]string{"null", "boolean", "int", "long", "float", "double", "bytes", "string",
		"record", "enum", "array", "map", "union", "fixed"}
	d := names[n.Kind]
	if n.Logical != "" {
		d += " (" + n.Logical + ")"
	}
	if n.Name != "" {
		d += " " + n.Name
	}
	return d
}
