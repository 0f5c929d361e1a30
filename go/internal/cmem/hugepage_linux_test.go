package cmem

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"
)

// A buffer of a huge page or more starts on a huge page boundary and, where
// the kernel grants huge pages on request, is backed by them once written.
func TestLargeMappingsGetHugePages(t *testing.T) {
	a := NewDefault()
	b := a.AllocateUninitialized(5 << 20)
	defer a.Free(b)
	if addr(b)%hugePage != 0 {
		t.Fatalf("mapping at %#x: not aligned to %d", addr(b), hugePage)
	}
	for i := range b {
		b[i] = byte(i)
	}
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || !(strings.Contains(string(mode), "[madvise]") || strings.Contains(string(mode), "[always]")) {
		t.Skipf("transparent huge pages not offered on request here (%q)", mode)
	}
	kb, err := anonHugeKB(addr(b))
	if err != nil {
		t.Fatal(err)
	}
	if kb < 2*hugePage>>10 { // 5 MiB aligned: two whole huge pages
		t.Errorf("AnonHugePages of the mapping = %d kB, want >= %d", kb, 2*hugePage>>10)
	}
}

// anonHugeKB reads the AnonHugePages of the mapping starting at start from
// /proc/self/smaps.
func anonHugeKB(start uintptr) (int, error) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	prefix := fmt.Sprintf("%x-", start)
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if first, _, _ := strings.Cut(line, " "); !strings.HasSuffix(first, ":") {
			in = strings.HasPrefix(line, prefix) // a mapping's header: "start-end perms ..."
			continue
		}
		var kb int
		if in && strings.HasPrefix(line, "AnonHugePages:") {
			if _, err := fmt.Sscanf(line, "AnonHugePages: %d kB", &kb); err != nil {
				return 0, err
			}
			return kb, nil
		}
	}
	return 0, fmt.Errorf("no mapping at %#x in /proc/self/smaps", start)
}
