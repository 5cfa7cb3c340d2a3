// Package goroutines finds goroutines left running: take a Snapshot before,
// ask LeftSince after. The sandbox's tests and test/e2e use it to prove
// that stopping a sandbox stops everything it started.
package goroutines

import (
	"runtime"
	"strings"
	"time"
)

// Snapshot is the set of goroutines running at one moment, by identity
// (goroutine id and state line head).
type Snapshot map[string]bool

// Now returns the goroutines running now.
func Now() Snapshot {
	set := Snapshot{}
	for _, g := range stacks() {
		set[id(g)] = true
	}
	return set
}

// upstreamForever is in the stack of a goroutine that k8s.io/apiserver
// starts once per process and never stops: healthz's "log" check runs a
// wait.Forever.
const upstreamForever = "k8s.io/apiserver/pkg/server/healthz.(*log).Check"

// LeftSince waits up to wait for the goroutines started since before to
// end, and returns the stacks of those still running. It leaves out the
// caller, the apiserver goroutine that never stops, and goroutines whose
// stack contains any of ignore.
func LeftSince(before Snapshot, wait time.Duration, ignore ...string) []string {
	deadline := time.Now().Add(wait)
	for {
		var left []string
		for _, g := range stacks() {
			if !before[id(g)] && !strings.Contains(g, upstreamForever) && !strings.Contains(g, "runtime.Stack") && !containsAny(g, ignore) {
				left = append(left, g)
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

func stacks() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Split(string(buf[:n]), "\n\n")
		}
		buf = make([]byte, 2*len(buf))
	}
}

func id(stack string) string {
	head, _, _ := strings.Cut(stack, " [")
	return head
}
