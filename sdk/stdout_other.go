//go:build !unix

package sdk

func routeStdout() (restore func()) { return func() {} }
