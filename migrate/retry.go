package migrate

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// Backoff bounds the retries of transient failures (429, 5xx timeouts,
// network errors). Conflicts have their own limit, Options.MaxConflicts.
type Backoff struct {
	// Initial is the first delay (default 100ms); each retry doubles it, up
	// to Max (default 10s), with ±20% jitter.
	Initial, Max time.Duration
	// Retries is how many times one request is retried before the run
	// fails (default 8).
	Retries int
}

func (b Backoff) withDefaults() Backoff {
	if b.Initial <= 0 {
		b.Initial = 100 * time.Millisecond
	}
	if b.Max <= 0 {
		b.Max = 10 * time.Second
	}
	if b.Retries <= 0 {
		b.Retries = 8
	}
	return b
}

// delay returns the wait before retry number attempt (0-based).
func (b Backoff) delay(attempt int) time.Duration {
	d := b.Initial
	for i := 0; i < attempt && d < b.Max; i++ {
		d *= 2
	}
	d = min(d, b.Max)
	jitter := 0.8 + 0.4*rand.Float64()
	return time.Duration(float64(d) * jitter)
}

// errClass is what to do about an error.
type errClass int

const (
	classFatal     errClass = iota
	classConflict           // GET afresh and retry
	classNotFound           // skip the object
	classThrottled          // wait Retry-After (or back off) and retry
	classTransient          // back off and retry
)

func (c errClass) String() string {
	return [...]string{"fatal", "conflict", "notfound", "throttled", "transient"}[c]
}

// classify sorts err; for classThrottled it also returns the delay the
// server asked for (zero when it named none).
func classify(err error) (errClass, time.Duration) {
	switch {
	case err == nil:
		return classFatal, 0
	case apierrors.IsConflict(err):
		return classConflict, 0
	case apierrors.IsNotFound(err):
		return classNotFound, 0
	case apierrors.IsTooManyRequests(err):
		s, _ := apierrors.SuggestsClientDelay(err)
		return classThrottled, time.Duration(s) * time.Second
	case apierrors.IsServerTimeout(err), apierrors.IsTimeout(err), apierrors.IsServiceUnavailable(err):
		s, _ := apierrors.SuggestsClientDelay(err)
		return classThrottled, time.Duration(s) * time.Second
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		// Any other answer of the API server is final: it names a real
		// problem (validation, admission, a conversion webhook failing).
		return classFatal, 0
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return classFatal, 0
	}
	if isCertificateError(err) {
		// A certificate the client does not trust stays untrusted: a
		// retry only delays the message that says so.
		return classFatal, 0
	}
	var netErr net.Error
	if errors.As(err, &netErr) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		utilnet.IsConnectionReset(err) || utilnet.IsConnectionRefused(err) || utilnet.IsProbableEOF(err) ||
		utilnet.IsHTTP2ConnectionLost(err) {
		return classTransient, 0
	}
	return classFatal, 0
}

// isCertificateError tells whether err is a TLS certificate verification
// failure (unknown authority, wrong host name, expired or invalid), which
// reaches the client wrapped in a *url.Error, itself a net.Error.
func isCertificateError(err error) bool {
	var (
		verr    *tls.CertificateVerificationError
		unknown x509.UnknownAuthorityError
		host    x509.HostnameError
		invalid x509.CertificateInvalidError
		system  x509.SystemRootsError
	)
	return errors.As(err, &verr) || errors.As(err, &unknown) || errors.As(err, &host) ||
		errors.As(err, &invalid) || errors.As(err, &system)
}

// sleepFunc waits d or until ctx is done.
type sleepFunc func(ctx context.Context, d time.Duration) error

func realSleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func isNotFound(err error) bool { return apierrors.IsNotFound(err) }
