//go:build !linux

package decode

import "time"

// threadCPU: no per-thread CPU time here, so no cpu-MB/s figure.
func threadCPU() time.Duration { return 0 }
