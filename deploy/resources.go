package deploy

// The webhook's memory model, measured with the slim binary
// (cmd/hubspoke-webhook) serving the Widget example, reading the process's
// peak resident set (VmHWM) after three reviews of one size
// (docs/production.md has the table):
//
//	idle:                        12 MiB
//	one review of S bytes:       idle + about 5 S    (default GOGC, no limit)
//	                             idle + about 3.3 S  (with GOMEMLIMIT)
//
// The heap itself grows by 2.45 S (bench: BenchmarkReviewPeakMemory); the
// rest is garbage the collector has not yet returned. Under GOMEMLIMIT the
// collector works harder as the limit nears, so the container is sized for
// the GOMEMLIMIT figure with a margin.
const (
	idleBytes = 16 << 20 // 12 MiB measured, rounded up
	// perRequestFactor is the resident bytes per byte of one review in
	// flight under GOMEMLIMIT (3.3 measured, with a margin).
	perRequestFactor = 3.5
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
	one := int64(perRequestFactor * float64(maxRequestBytes))
	req := roundUp(idleBytes+one, memRound)
	lim := roundUp(idleBytes+largeInFlight*one, memRound)
	return Sizing{MemoryRequest: req, MemoryLimit: lim, GoMemLimit: lim / 10 * 9}
}

func roundUp(n, to int64) int64 { return (n + to - 1) / to * to }
