//go:build !linux

package bench_test

import "errors"

// pinThreads is only implemented on Linux; run the server benchmarks with
// -split-cores=false elsewhere.
func pinThreads(cpus []int) (restore func() error, err error) {
	return nil, errors.New("pinning threads to cpus needs Linux")
}
