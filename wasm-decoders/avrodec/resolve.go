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
	if w.kind == aUnion {
		s := &step{n: w, t: t}
		for _, b := range w.branches {
			var bs *step
			var err error
			if b.kind != aNull || !acceptsNull(r) {
				bs, err = resolve(b, r, t)
			}
			s.branches = append(s.branches, bs)
			s.bad = append(s.bad, err)
		}
		return s, nil
	}
	if r.kind == aUnion {
		i := readerBranch(w, r)
		if i < 0 {
			return nil, fmt.Errorf("writer's avro %s matches no branch of the reader's union %s", describe(w), branchNames(r))
		}
		if w.kind == aNull {
			return &step{n: w, t: t}, nil
		}
		rest, _ := nonNull(r)
		if t.ID == arrowlite.Struct && memberStruct(r) {
			m := 0
			for _, b := range rest {
				if b == r.branches[i] {
					break
				}
				m++
			}
			inner, err := resolve(w, r.branches[i], t.Children[m].Type)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", t.Children[m].Name, err)
			}
			return &step{n: w, t: t, wrap: inner, member: m}, nil
		}
		return resolve(w, r.branches[i], t)
	}
	if !matches(w, r) {
		return nil, fmt.Errorf("writer's avro %s cannot be read as the reader's %s", describe(w), describe(r))
	}
	switch w.kind {
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
		s.syms = make([]string, len(w.symbols))
		for i, sym := range w.symbols {
			if contains(r.symbols, sym) {
				s.syms[i] = sym
			} else {
				s.syms[i] = r.enumDef
			}
		}
		return s, nil
	case aArray:
		if t.ID != arrowlite.List {
			return nil, fmt.Errorf("avro %s cannot be decoded into %s", describe(r), t)
		}
		e, err := resolve(w.items, r.items, t.Children[0].Type)
		if err != nil {
			return nil, fmt.Errorf("array items: %w", err)
		}
		return &step{n: w, t: t, elem: e}, nil
	case aMap:
		if t.ID != arrowlite.Map || t.Children[0].Type.Children[0].Type.ID != arrowlite.Utf8 {
			return nil, fmt.Errorf("avro %s cannot be decoded into %s", describe(r), t)
		}
		e, err := resolve(w.items, r.items, t.Children[0].Type.Children[1].Type)
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
	read := make([]bool, len(r.fields))
	for _, f := range w.fields {
		k := readerField(r, f.name)
		idx := -1
		var fs *step
		if k >= 0 && !read[k] {
			read[k] = true
			if idx = target(r.fields[k].name); idx >= 0 {
				var err error
				if fs, err = resolve(f.typ, r.fields[k].typ, targets[idx].Type); err != nil {
					return nil, fmt.Errorf("%s: %w", f.name, err)
				}
				fed[idx] = true
			}
		}
		s.fields = append(s.fields, fs)
		s.target = append(s.target, idx)
	}
	for k, rf := range r.fields {
		if read[k] {
			continue
		}
		if !rf.hasDef {
			return nil, fmt.Errorf("the reader's field %s is not in the writer's %s and has no default", rf.name, describe(w))
		}
		idx := target(rf.name)
		if idx < 0 {
			continue
		}
		datum, err := encodeJSON(nil, rf.typ, rf.def, true)
		if err != nil {
			return nil, fmt.Errorf("%s: invalid default: %w", rf.name, err)
		}
		st, err := plan(rf.typ, targets[idx].Type)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", rf.name, err)
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
	for k, rf := range r.fields {
		if rf.name == name {
			return k
		}
	}
	for k, rf := range r.fields {
		if contains(rf.aliases, name) {
			return k
		}
	}
	return -1
}

// readerBranch picks the reader union's branch for a writer's value: the
// first that matches its type exactly, else the first it promotes to.
func readerBranch(w, r *node) int {
	for i, b := range r.branches {
		if b.kind == w.kind && matches(w, b) {
			return i
		}
	}
	for i, b := range r.branches {
		if matches(w, b) {
			return i
		}
	}
	return -1
}

// matches is the specification's "schemas match" for two non-union types.
func matches(w, r *node) bool {
	switch w.kind {
	case aRecord, aEnum, aFixed:
		if r.kind != w.kind || !sameName(w, r) {
			return false
		}
		return w.kind != aFixed || w.size == r.size
	case aInt:
		return r.kind == aInt || r.kind == aLong || r.kind == aFloat || r.kind == aDouble
	case aLong:
		return r.kind == aLong || r.kind == aFloat || r.kind == aDouble
	case aFloat:
		return r.kind == aFloat || r.kind == aDouble
	case aString, aBytes:
		return r.kind == aString || r.kind == aBytes
	}
	return w.kind == r.kind
}

// sameName compares unqualified names, or the reader's aliases.
func sameName(w, r *node) bool {
	if shortName(w.name) == shortName(r.name) {
		return true
	}
	for _, a := range r.aliases {
		if a == w.name || shortName(a) == shortName(w.name) {
			return true
		}
	}
	return false
}

func acceptsNull(r *node) bool {
	if r.kind == aNull {
		return true
	}
	_, hasNull := nonNull(r)
	return r.kind == aUnion && hasNull
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
