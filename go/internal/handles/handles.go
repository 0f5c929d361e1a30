// Package handles maps opaque integer handles, which C callers hold, to Go
// values, which C must never hold (cgo pointer rules).
package handles

import (
	"sync"
	"sync/atomic"
)

// Registry holds live values of one kind under non-zero handles.
type Registry[T any] struct {
	next atomic.Uint64
	m    sync.Map // uint64 -> T
}

// Put stores v and returns its new handle (never 0).
func (r *Registry[T]) Put(v T) uint64 {
	h := r.next.Add(1)
	r.m.Store(h, v)
	return h
}

// Get returns the value of h, if live.
func (r *Registry[T]) Get(h uint64) (T, bool) { return typed[T](r.m.Load(h)) }

// Take removes h and returns its value, if it was live. Exactly one of
// several concurrent Take calls on one handle wins.
func (r *Registry[T]) Take(h uint64) (T, bool) { return typed[T](r.m.LoadAndDelete(h)) }

// typed is a sync.Map lookup's result as a T.
func typed[T any](v any, ok bool) (T, bool) {
	if !ok {
		var zero T
		return zero, false
	}
	return v.(T), true
}

// Len counts live handles.
func (r *Registry[T]) Len() int {
	n := 0
	r.m.Range(func(any, any) bool { n++; return true })
	return n
}
