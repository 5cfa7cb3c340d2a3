package deploy

// The webhook's memory model, measured with the slim binary
// (cmd/hubspoke-webhook) serving the Widget example: its peak resident set
// (VmHWM) after three reviews of S bytes (BenchmarkResidentMemory;
// docs/production.md has the table):
//
//	idle:                                   12 MiB
//	peak, no memory limit:                  idle + 4.7 to 5.7 S
//	peak, GOMEMLIMIT binding (idle + 3 S):  idle + 3.1 to 3.7 S
//
// The heap itself grows by 2.45 S (bench: BenchmarkReviewPeakMemory); the
// rest is garbage the collector has not yet returned. Under GOMEMLIMIT the
// collector works harder as the limit nears, so a pod is sized with the
// GOMEMLIMIT factor, with a margin.
const (
	idleBytes = 16 << 20 // 12 MiB measured, rounded up
	// perRequestFactor is the resident bytes per byte of one review in
	// flight under a binding GOMEMLIMIT (3.1 to 3.7 measured, with a margin).
	perRequestFactor = 4
	// largeInFlight is how many maximal reviews the limit allows at once.
	largeInFlight = 2
	memRound      = 32 << 20
)

// Sizing is the memory a webhook pod requests and is limited to.
type Sizing struct {
	MemoryRequest int64 // room for one review of the largest size
	MemoryLimit   int64 // room for two at once
	// GoMemLimit is the GOMEMLIMIT the pod runs with: 90% of the limit,
	// so the collector reclaims garbage before the kernel kills the pod.
	GoMemLimit int64
}

// Resources sizes a pod for reviews up to maxRequestBytes.
func Resources(maxRequestBytes int64) Sizing {
	one := perRequestFactor * maxRequestBytes
	req := roundUp(idleBytes+one, memRound)
	lim := roundUp(idleBytes+largeInFlight*one, memRound)
	return Sizing{MemoryRequest: req, MemoryLimit: lim, GoMemLimit: lim / 10 * 9}
}

func roundUp(n, to int64) int64 { return (n + to - 1) / to * to }
