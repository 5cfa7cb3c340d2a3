package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"
)

// network is the sandbox's pod network. Pod IPs are allocated from
// PodCIDR but never routed: kube-apiserver reaches them only through its
// egress selector's "cluster" context, an HTTP CONNECT proxy on a Unix
// socket that this type serves, which connects each pod address to the
// loopback listener registered for it. No packet leaves loopback.
type network struct {
	log *slog.Logger
	ln  net.Listener

	mu    sync.Mutex
	next  netip.Addr                   // next pod IP to hand out
	pods  map[netip.AddrPort]podTarget // pod address → where it leads
	conns map[net.Conn]struct{}        // open proxy connections
	wg    sync.WaitGroup               // accept loop and connections
	cas   map[[2]string][]byte         // namespace/service → CA bundle to inject
	svcMu map[[2]string]*sync.Mutex    // serialises EndpointSlice writes per service
	eps   map[[2]string][]*Endpoint    // namespace/service → endpoints
}

func newNetwork(socket string, log *slog.Logger) (*network, error) {
	ln, err := net.Listen("unix", socket)
	if err != nil {
		return nil, fmt.Errorf("sandbox: egress proxy: %w", err)
	}
	n := &network{
		log:   log,
		ln:    ln,
		next:  netip.MustParsePrefix(PodCIDR).Addr().Next().Next(), // 10.244.0.2, as a node's first pod
		pods:  map[netip.AddrPort]podTarget{},
		conns: map[net.Conn]struct{}{},
		cas:   map[[2]string][]byte{},
		svcMu: map[[2]string]*sync.Mutex{},
		eps:   map[[2]string][]*Endpoint{},
	}
	n.wg.Add(1)
	go n.serve()
	return n, nil
}

// allocate returns a pod IP not handed out before.
func (n *network) allocate() (netip.Addr, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	ip := n.next
	if !netip.MustParsePrefix(PodCIDR).Contains(ip) {
		return netip.Addr{}, fmt.Errorf("sandbox: pod network %s exhausted", PodCIDR)
	}
	n.next = ip.Next()
	return ip, nil
}

// podTarget is where a pod address leads: a loopback address to dial or,
// for a server in this process, a listener that takes the proxied
// connection as it is (no second socket, no copying).
type podTarget struct {
	addr string
	ln   *connListener // nil: dial addr
}

func (n *network) route(pod netip.AddrPort, target podTarget) {
	n.mu.Lock()
	n.pods[pod] = target
	n.mu.Unlock()
}

func (n *network) serve() {
	defer n.wg.Done()
	for {
		c, err := n.ln.Accept()
		if err != nil {
			return // closed
		}
		n.mu.Lock()
		n.conns[c] = struct{}{}
		n.wg.Add(1)
		n.mu.Unlock()
		go func() {
			defer n.wg.Done()
			n.handle(c)
			n.mu.Lock()
			delete(n.conns, c)
			n.mu.Unlock()
		}()
	}
}

// handle answers one CONNECT as the pod network would answer a dial: a
// pod address with no listener registered, or whose listener is gone,
// is refused.
func (n *network) handle(c net.Conn) {
	handedOff := false
	defer func() {
		if !handedOff {
			c.Close()
		}
	}()
	br := bufio.NewReader(c)
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	if req.Method != http.MethodConnect {
		fmt.Fprintf(c, "HTTP/1.1 405 Method Not Allowed\r\nConnection: close\r\n\r\n")
		return
	}
	target := req.Host
	to, err := n.lookup(target)
	if err == nil && to.ln != nil {
		if to.ln.isClosed() {
			err = fmt.Errorf("dial tcp %s: connect: connection refused", target)
		} else {
			if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
				return
			}
			var conn net.Conn = c
			if br.Buffered() > 0 {
				conn = &bufferedConn{Conn: c, r: br}
			}
			if to.ln.deliver(conn) {
				handedOff = true
			}
			return
		}
	}
	var up net.Conn
	if err == nil {
		up, err = net.DialTimeout("tcp", to.addr, 5*time.Second)
		if err != nil {
			// "dial tcp 127.0.0.1:PORT: connect: connection refused"
			// names the loopback address; say it of the pod's.
			var op *net.OpError
			if errors.As(err, &op) && op.Err != nil {
				err = fmt.Errorf("dial tcp %s: %w", target, op.Err)
			}
		}
	}
	if err != nil {
		n.log.Debug("sandbox: pod network: refused", "target", target, "err", err)
		// kube-apiserver reports "proxy error from SOCKET while dialing
		// TARGET, code 502: 502 " followed by this status text.
		fmt.Fprintf(c, "HTTP/1.1 502 %s\r\nConnection: close\r\n\r\n", err)
		return
	}
	defer up.Close()
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	if br.Buffered() > 0 {
		data, _ := br.Peek(br.Buffered())
		if _, err := up.Write(data); err != nil {
			return
		}
	}
	done := make(chan struct{})
	go func() {
		io.Copy(c, up)
		if cw, ok := c.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		}
		close(done)
	}()
	io.Copy(up, c)
	if cw, ok := up.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	<-done
}

func (n *network) lookup(target string) (podTarget, error) {
	ap, err := netip.ParseAddrPort(target)
	if err != nil {
		return podTarget{}, fmt.Errorf("dial tcp %s: %w", target, err)
	}
	n.mu.Lock()
	to, ok := n.pods[ap]
	n.mu.Unlock()
	if !ok {
		return podTarget{}, fmt.Errorf("dial tcp %s: connect: connection refused", target)
	}
	return to, nil
}

// connListener is a net.Listener whose connections the pod network hands
// over: an in-process server's side of the pod network.
type connListener struct {
	addr  net.Addr
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newConnListener(addr net.Addr) *connListener {
	return &connListener{addr: addr, conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *connListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *connListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *connListener) Addr() net.Addr { return l.addr }

func (l *connListener) isClosed() bool {
	select {
	case <-l.done:
		return true
	default:
		return false
	}
}

// deliver hands c to the server; false if the listener closed first.
func (l *connListener) deliver(c net.Conn) bool {
	select {
	case l.conns <- c:
		return true
	case <-l.done:
		return false
	}
}

// bufferedConn reads what the proxy's reader buffered before the socket.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// close stops the proxy and cuts its connections.
func (n *network) close() {
	n.ln.Close()
	n.mu.Lock()
	for c := range n.conns {
		c.Close()
	}
	n.mu.Unlock()
	n.wg.Wait()
}

// caBundle returns the CA bundle registered for a service.
func (n *network) caBundle(namespace, name string) ([]byte, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	ca, ok := n.cas[[2]string{namespace, name}]
	return ca, ok && len(ca) > 0
}

// PodNetworkProxy returns the URL of the sandbox's pod network, an HTTP
// CONNECT proxy (unix://PATH), for clients outside the API server that
// need to reach a pod address as from inside a cluster — for example
// `hubspoke doctor --pod-network-proxy`. Only registered pod addresses
// answer; nothing it is asked for is dialled beyond loopback.
func (s *Sandbox) PodNetworkProxy() string {
	return "unix://" + s.net.ln.Addr().String()
}
