package main

import (
	"encoding/json"
	"net/http"
)

// httpHandler serves the harness endpoints:
//
//	GET  /stats   counters as JSON
//	POST /reset   zero the counters (returns the counters just before)
//	GET  /config  current fault settings
//	POST /config  change some of them: a JSON object with any Faults fields
func (s *server) httpHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, s.snapshot())
	})
	mux.HandleFunc("POST /reset", func(w http.ResponseWriter, r *http.Request) {
		snap := s.snapshot()
		s.stats.reset()
		writeJSON(w, snap)
	})
	mux.HandleFunc("GET /config", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, s.faults.Load())
	})
	mux.HandleFunc("POST /config", func(w http.ResponseWriter, r *http.Request) {
		f := *s.faults.Load() // fields absent from the body keep their value
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&f); err != nil {
			http.Error(w, "bad config: "+err.Error(), http.StatusBadRequest)
			return
		}
		if err := f.validate(); err != nil {
			http.Error(w, "bad config: "+err.Error(), http.StatusBadRequest)
			return
		}
		s.faults.Store(&f)
		writeJSON(w, &f)
	})
	return mux
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}
