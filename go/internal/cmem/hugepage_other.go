//go:build unix && !linux

package cmem

func adviseHuge([]byte) {}
