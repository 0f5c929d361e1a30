package cmem

import "golang.org/x/sys/unix"

// adviseHuge asks for transparent huge pages for m. A kernel without them
// (or with them off) refuses, and m keeps small pages: nothing else changes.
func adviseHuge(m []byte) { _ = unix.Madvise(m, unix.MADV_HUGEPAGE) }
