package doctor

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// ConnectDialer returns a dial function (for Options.PodDial) that reaches
// endpoints through an HTTP CONNECT proxy into the cluster's pod network:
// unix:///path/to.sock (the sandbox's, see sandbox.PodNetworkProxy) or
// http://HOST:PORT (a proxy such as one reached with kubectl port-forward).
func ConnectDialer(proxy string) (func(ctx context.Context, network, addr string) (net.Conn, error), error) {
	u, err := url.Parse(proxy)
	if err != nil {
		return nil, fmt.Errorf("pod network proxy %q: %w", proxy, err)
	}
	var pnet, paddr string
	switch {
	case u.Scheme == "unix" && u.Path != "":
		pnet, paddr = "unix", u.Path
	case u.Scheme == "http" && u.Host != "":
		pnet, paddr = "tcp", u.Host
	default:
		return nil, fmt.Errorf("pod network proxy %q: want unix:///PATH or http://HOST:PORT", proxy)
	}
	return func(ctx context.Context, _, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, pnet, paddr)
		if err != nil {
			return nil, fmt.Errorf("dial %s through %s: %w", addr, proxy, err)
		}
		if d, ok := ctx.Deadline(); ok {
			c.SetDeadline(d)
		}
		if _, err := fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", addr, addr); err != nil {
			c.Close()
			return nil, fmt.Errorf("dial %s through %s: %w", addr, proxy, err)
		}
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("dial %s through %s: %w", addr, proxy, err)
		}
		if resp.StatusCode != http.StatusOK {
			c.Close()
			err := fmt.Errorf("proxy error from %s while dialing %s, code %d: %s", proxy, addr, resp.StatusCode, resp.Status)
			if resp.StatusCode == http.StatusBadGateway && strings.Contains(resp.Status, "connection refused") {
				// The pod refused: say so as a direct dial would.
				err = refusedError{err}
			}
			return nil, err
		}
		if br.Buffered() > 0 {
			c.Close()
			return nil, fmt.Errorf("dial %s through %s: proxy sent data before the tunnel opened", addr, proxy)
		}
		c.SetDeadline(time.Time{})
		return c, nil
	}, nil
}

// refusedError is a proxy's report that the pod refused the connection;
// errors.Is(err, syscall.ECONNREFUSED) holds for it.
type refusedError struct{ err error }

func (e refusedError) Error() string { return e.err.Error() }

func (e refusedError) Is(target error) bool { return target == syscall.ECONNREFUSED }
