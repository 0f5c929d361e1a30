package main

/*
#include "pubsubgo.h"
*/
import "C"

import (
	"encoding/json"
	"runtime"
	"runtime/debug"
)

// Version is the library version. The build stamps the package version
// into it (-ldflags "-X main.Version=...", setup.py reads
// python/pubsub_go/_version.py), so Python and Go never disagree; a plain
// `go build` says "dev".
var Version = "dev"

// versionDeps are the modules whose versions pg_version_info reports, by
// the short name it reports them under.
var versionDeps = map[string]string{
	"github.com/apache/arrow-go/v18": "arrow_go",
	"github.com/tetratelabs/wazero":  "wazero",
	"cloud.google.com/go/pubsub/v2":  "pubsub",
	"google.golang.org/grpc":         "grpc",
	"google.golang.org/protobuf":     "protobuf",
}

// versionInfo is what the library was built from, read from the build
// information the Go linker embeds (so it cannot drift from go.mod).
func versionInfo() map[string]any {
	info := map[string]any{
		"version": Version,
		"abi":     ABIVersion,
		"go":      runtime.Version(),
		"os":      runtime.GOOS,
		"arch":    runtime.GOARCH,
	}
	deps := map[string]string{}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			name, ok := versionDeps[d.Path]
			if !ok {
				continue
			}
			if d.Replace != nil {
				d = d.Replace
			}
			deps[name] = d.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "CGO_ENABLED" || s.Key == "-trimpath" {
				info["build_"+s.Key] = s.Value
			}
		}
	}
	info["modules"] = deps
	return info
}

//export pg_version_info
func pg_version_info(jsonOut **C.char, errOut *C.struct_PgError) C.int {
	return guard(errOut, func() error {
		b, err := json.Marshal(versionInfo())
		if err != nil {
			return err
		}
		setString(jsonOut, string(b))
		return nil
	})
}
