package bench_test

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// pinThreads restricts every thread of this process to cpus; threads
// started later inherit it from the thread that starts them. restore gives
// the threads back the CPU set the calling thread had.
func pinThreads(cpus []int) (restore func() error, err error) {
	var old, set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		return nil, fmt.Errorf("read cpu affinity: %w", err)
	}
	for _, c := range cpus {
		set.Set(c)
	}
	if err := setAllThreads(&set); err != nil {
		return nil, err
	}
	return func() error { return setAllThreads(&old) }, nil
}

// setAllThreads sets the affinity of each thread in /proc/self/task,
// again until no thread appears that was not set.
func setAllThreads(set *unix.CPUSet) error {
	done := map[int]bool{}
	for {
		entries, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return err
		}
		fresh := false
		for _, e := range entries {
			tid, err := strconv.Atoi(e.Name())
			if err != nil || done[tid] {
				continue
			}
			// A thread may end between ReadDir and here.
			if err := unix.SchedSetaffinity(tid, set); err != nil && !errors.Is(err, unix.ESRCH) {
				return fmt.Errorf("set cpu affinity of thread %d: %w", tid, err)
			}
			done[tid], fresh = true, true
		}
		if !fresh {
			return nil
		}
	}
}
