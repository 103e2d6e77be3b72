//go:build !linux

package pgtest

// tmpfsDir returns "": outside Linux the cluster stays in os.TempDir().
func tmpfsDir() string { return "" }
