package goroutines

import (
	"strings"
	"testing"
	"time"
)

func parked(stop <-chan struct{}) { <-stop }

func TestLeftSince(t *testing.T) {
	before := Now()
	stop := make(chan struct{})
	go parked(stop)

	left := LeftSince(before, 100*time.Millisecond)
	if len(left) != 1 || !strings.Contains(left[0], "goroutines.parked") {
		t.Fatalf("left = %q, want the parked goroutine", left)
	}
	if ignored := LeftSince(before, 0, "goroutines.parked"); len(ignored) != 0 {
		t.Errorf("with the goroutine ignored, left = %q", ignored)
	}
	close(stop)
	if left := LeftSince(before, 5*time.Second); len(left) != 0 {
		t.Errorf("after it stopped, left = %q", left)
	}
}
