package avrodec

import (
	"fmt"

	"github.com/pubsub-go/pubsub-go/wasm-decoders/arrowlite"
)

// resolve compiles the decoding of data written with writer schema w into
// target t, the Spark form of reader schema r, by the Avro specification's
// schema resolution rules: record fields are matched by name (or a reader
// field's alias), writer fields the reader lacks are skipped, reader
// fields the writer lacks take their default, int→long→float→double and
// string↔bytes are promoted, enum symbols are mapped by name (else the
// reader enum's default), and unions pick their branch by type. A
// mismatch that only some data can hit (a union branch, an enum symbol)
// fails that datum, not the plan.
func resolve(w, r *node, t *arrowlite.DataType) (*step, error) {
	if w.Kind == aUnion {
		s := &step{n: w, t: t}
		for _, b := range w.Branches {
			var bs *step
			var err error
			if b.Kind != aNull || !acceptsNull(r) {
				bs, err = resolve(b, r, t)
			}
			s.Branches = append(s.Branches, bs)
			s.bad = append(s.bad, err)
		}
		return s, nil
	}
	if r.Kind == aUnion {
		i := readerBranch(w, r)
		if i < 0 {
			return nil, fmt.Errorf("writer's avro %s matches no branch of the reader's union %s", describe(w), branchNames(r))
		}
		if w.Kind == aNull {
			return &step{n: w, t: t}, nil
		}
		rest, _ := nonNull(r)
		if t.ID == arrowlite.Struct && memberStruct(r) {
			m := 0
			for _, b := range rest {
				if b == r.Branches[i] {
					break
				}
				m++
			}
			inner, err := resolve(w, r.Branches[i], t.Children[m].Type)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", t.Children[m].Name, err)
			}
			return &step{n: w, t: t, wrap: inner, member: m}, nil
		}
		return resolve(w, r.Branches[i], t)
	}
	if !matches(w, r) {
		return nil, fmt.Errorf("writer's avro %s cannot be read as the reader's %s", describe(w), describe(r))
	}
	switch w.Kind {
	case aRecord:
		if t.ID != arrowlite.Struct {
			return nil, fmt.Errorf("avro %s cannot be decoded into %s", describe(r), t)
		}
		return resolveRecord(w, r, t)
	case aEnum:
		s, err := plan(w, t)
		if err != nil {
			return nil, err
		}
		s.syms = make([]string, len(w.Symbols))
		for i, sym := range w.Symbols {
			if contains(r.Symbols, sym) {
				s.syms[i] = sym
			} else {
				s.syms[i] = r.EnumDefault
			}
		}
		return s, nil
	case aArray:
		if t.ID != arrowlite.List {
			return nil, fmt.Errorf("avro %s cannot be decoded into %s", describe(r), t)
		}
		e, err := resolve(w.Items, r.Items, t.Children[0].Type)
		if err != nil {
			return nil, fmt.Errorf("array items: %w", err)
		}
		return &step{n: w, t: t, elem: e}, nil
	case aMap:
		if t.ID != arrowlite.Map || t.Children[0].Type.Children[0].Type.ID != arrowlite.Utf8 {
			return nil, fmt.Errorf("avro %s cannot be decoded into %s", describe(r), t)
		}
		e, err := resolve(w.Items, r.Items, t.Children[0].Type.Children[1].Type)
		if err != nil {
			return nil, fmt.Errorf("map values: %w", err)
		}
		return &step{n: w, t: t, elem: e}, nil
	}
	return plan(w, t)
}

func resolveRecord(w, r *node, t *arrowlite.DataType) (*step, error) {
	s := &step{n: w, t: t}
	targets := t.Children
	fed := make([]bool, len(targets))
	target := func(name string) int {
		for j, tf := range targets {
			if tf.Name == name && !fed[j] {
				return j
			}
		}
		return -1
	}
	read := make([]bool, len(r.Fields))
	for _, f := range w.Fields {
		k := readerField(r, f.Name)
		idx := -1
		var fs *step
		if k >= 0 && !read[k] {
			read[k] = true
			if idx = target(r.Fields[k].Name); idx >= 0 {
				var err error
				if fs, err = resolve(f.Type, r.Fields[k].Type, targets[idx].Type); err != nil {
					return nil, fmt.Errorf("%s: %w", f.Name, err)
				}
				fed[idx] = true
			}
		}
		s.Fields = append(s.Fields, fs)
		s.target = append(s.target, idx)
	}
	for k, rf := range r.Fields {
		if read[k] {
			continue
		}
		if !rf.HasDefault {
			return nil, fmt.Errorf("the reader's field %s is not in the writer's %s and has no default", rf.Name, describe(w))
		}
		idx := target(rf.Name)
		if idx < 0 {
			continue
		}
		datum, err := encodeJSON(nil, rf.Type, rf.Default, true)
		if err != nil {
			return nil, fmt.Errorf("%s: invalid default: %w", rf.Name, err)
		}
		st, err := plan(rf.Type, targets[idx].Type)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", rf.Name, err)
		}
		s.defaults = append(s.defaults, fieldDefault{col: idx, datum: datum, st: st})
		fed[idx] = true
	}
	for j, ok := range fed {
		if !ok {
			s.missing = append(s.missing, j)
		}
	}
	return s, nil
}

// readerField finds the reader's field for a writer field name: by name,
// else by one of the reader field's aliases.
func readerField(r *node, name string) int {
	for k, rf := range r.Fields {
		if rf.Name == name {
			return k
		}
	}
	for k, rf := range r.Fields {
		if contains(rf.Aliases, name) {
			return k
		}
	}
	return -1
}

// readerBranch picks the reader union's branch for a writer's value: the
// first that matches its type exactly, else the first it promotes to.
func readerBranch(w, r *node) int {
	for i, b := range r.Branches {
		if b.Kind == w.Kind && matches(w, b) {
			return i
		}
	}
	for i, b := range r.Branches {
		if matches(w, b) {
			return i
		}
	}
	return -1
}

// matches is the specification's "schemas match" for two non-union types.
func matches(w, r *node) bool {
	switch w.Kind {
	case aRecord, aEnum, aFixed:
		if r.Kind != w.Kind || !sameName(w, r) {
			return false
		}
		return w.Kind != aFixed || w.Size == r.Size
	case aInt:
		return r.Kind == aInt || r.Kind == aLong || r.Kind == aFloat || r.Kind == aDouble
	case aLong:
		return r.Kind == aLong || r.Kind == aFloat || r.Kind == aDouble
	case aFloat:
		return r.Kind == aFloat || r.Kind == aDouble
	case aString, aBytes:
		return r.Kind == aString || r.Kind == aBytes
	}
	return w.Kind == r.Kind
}

// sameName compares unqualified names, or the reader's aliases.
func sameName(w, r *node) bool {
	if shortName(w.Name) == shortName(r.Name) {
		return true
	}
	for _, a := range r.Aliases {
		if a == w.Name || shortName(a) == shortName(w.Name) {
			return true
		}
	}
	return false
}

func acceptsNull(r *node) bool {
	if r.Kind == aNull {
		return true
	}
	_, hasNull := nonNull(r)
	return r.Kind == aUnion && hasNull
}

// memberStruct reports whether a union's Spark form is the struct of
// member0..N (derive.go) rather than one nullable value.
func memberStruct(u *node) bool {
	rest, _ := nonNull(u)
	return len(rest) > 1 && !(len(rest) == 2 && (kinds(rest, aInt, aLong) || kinds(rest, aFloat, aDouble)))
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
