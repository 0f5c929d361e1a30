package main

import (
	"runtime"
	"strings"
	"testing"
)

// The versions come from the build information the linker embeds: every
// reported module is one this binary was really built with.
func TestVersionInfoReportsTheModulesBuiltIn(t *testing.T) {
	info := versionInfo()
	if info["go"] != runtime.Version() || info["abi"] != ABIVersion {
		t.Fatalf("go/abi = %v/%v, want %s/%d", info["go"], info["abi"], runtime.Version(), ABIVersion)
	}
	mods, _ := info["modules"].(map[string]string)
	for path, name := range versionDeps {
		if v := mods[name]; !strings.HasPrefix(v, "v") {
			t.Errorf("module %s (%s): version %q, want a module version", name, path, v)
		}
	}
}
