package sandbox

import (
	"bufio"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
)

// connect dials the proxy's socket and sends a CONNECT as kube-apiserver's
// egress dialer does, returning the response's status and the connection.
func connect(t *testing.T, socket, target string) (string, net.Conn) {
	t.Helper()
	c, err := net.Dial("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	io.WriteString(c, "CONNECT "+target+" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("CONNECT %s: %v", target, err)
	}
	if br.Buffered() > 0 {
		t.Fatalf("CONNECT %s: %d bytes after the response", target, br.Buffered())
	}
	return resp.Status, c
}

// TestPodNetwork checks the egress proxy: a registered pod address reaches
// its loopback listener, end to end; any other address, or one whose
// listener is gone, is refused as a dial would be.
func TestPodNetwork(t *testing.T) {
	n, err := newNetwork(filepath.Join(t.TempDir(), "egress.sock"), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer n.close()
	socket := n.ln.Addr().String()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }() // echo
		}
	}()
	ip, err := n.allocate()
	if err != nil {
		t.Fatal(err)
	}
	if !netip.MustParsePrefix(PodCIDR).Contains(ip) {
		t.Fatalf("pod IP %s outside %s", ip, PodCIDR)
	}
	pod := netip.AddrPortFrom(ip, DefaultTargetPort)
	n.route(pod, podTarget{addr: ln.Addr().String()})

	t.Run("registered", func(t *testing.T) {
		status, c := connect(t, socket, pod.String())
		if status != "200 Connection established" {
			t.Fatalf("status %q, want 200", status)
		}
		io.WriteString(c, "ping")
		buf := make([]byte, 4)
		if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "ping" {
			t.Errorf("echo through the tunnel = %q, %v; want ping", buf, err)
		}
	})
	for _, tc := range []struct{ name, target string }{
		{"other port", netip.AddrPortFrom(ip, 443).String()},
		{"unallocated address", "10.244.9.9:9443"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, _ := connect(t, socket, tc.target)
			want := "502 dial tcp " + tc.target + ": connect: connection refused"
			if status != want {
				t.Errorf("status %q, want %q", status, want)
			}
		})
	}
	t.Run("listener gone", func(t *testing.T) {
		ln.Close()
		status, _ := connect(t, socket, pod.String())
		if want := "502 dial tcp " + pod.String() + ": connect: connection refused"; status != want {
			t.Errorf("status %q, want %q", status, want)
		}
		if strings.Contains(status, "127.0.0.1") {
			t.Errorf("status %q names the loopback listener; want the pod's address only", status)
		}
	})
	t.Run("in-process server", func(t *testing.T) {
		ip, err := n.allocate()
		if err != nil {
			t.Fatal(err)
		}
		pod := netip.AddrPortFrom(ip, DefaultTargetPort)
		cl := newConnListener(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
		n.route(pod, podTarget{addr: "127.0.0.1:1", ln: cl})
		go func() {
			c, err := cl.Accept()
			if err != nil {
				return
			}
			io.Copy(c, c)
			c.Close()
		}()
		status, c := connect(t, socket, pod.String())
		if status != "200 Connection established" {
			t.Fatalf("status %q, want 200", status)
		}
		io.WriteString(c, "pong")
		buf := make([]byte, 4)
		if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "pong" {
			t.Errorf("echo through the handed-over connection = %q, %v; want pong", buf, err)
		}
		cl.Close()
		if status, _ := connect(t, socket, pod.String()); status != "502 dial tcp "+pod.String()+": connect: connection refused" {
			t.Errorf("after the server closed: status %q, want connection refused", status)
		}
	})
	t.Run("not CONNECT", func(t *testing.T) {
		c, err := net.Dial("unix", socket)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("GET through the proxy: %v, %v; want 405", resp, err)
		}
	})
}
