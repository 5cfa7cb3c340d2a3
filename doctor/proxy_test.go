package doctor_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hubspoke/hubspoke/doctor"
)

// connectProxy serves HTTP CONNECT on ln: the pod address pod leads to
// the loopback address to; any other target is refused with a 502, as
// the sandbox's pod network and the API server's konnectivity do.
func connectProxy(t *testing.T, ln net.Listener, pod, to string) {
	t.Helper()
	serveConns(t, ln, func(c net.Conn) {
		req, err := http.ReadRequest(bufio.NewReader(c))
		if err != nil {
			return
		}
		if req.Method != http.MethodConnect || req.Host != pod {
			fmt.Fprintf(c, "HTTP/1.1 502 dial tcp %s: connect: connection refused\r\n\r\n", req.Host)
			return
		}
		up, err := net.Dial("tcp", to)
		if err != nil {
			fmt.Fprintf(c, "HTTP/1.1 502 %v\r\n\r\n", err)
			return
		}
		defer up.Close()
		io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n")
		go io.Copy(up, c)
		io.Copy(c, up)
	})
}

// serveConns handles each connection ln accepts with handle, which the
// connection is closed after, until the test ends.
func serveConns(t *testing.T, ln net.Listener, handle func(net.Conn)) {
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				handle(c)
			}()
		}
	}()
}

// echoServer answers each line with the same line upper-cased.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serveConns(t, ln, func(c net.Conn) {
		s := bufio.NewScanner(c)
		for s.Scan() {
			fmt.Fprintln(c, strings.ToUpper(s.Text()))
		}
	})
	return ln.Addr().String()
}

func TestConnectDialer(t *testing.T) {
	const pod = "10.244.0.7:8443"
	backend := echoServer(t)

	sock := filepath.Join(t.TempDir(), "pods.sock")
	unixLn, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	connectProxy(t, unixLn, pod, backend)
	tcpLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	connectProxy(t, tcpLn, pod, backend)

	for _, proxy := range []string{"unix://" + sock, "http://" + tcpLn.Addr().String()} {
		t.Run(proxy, func(t *testing.T) {
			dial, err := doctor.ConnectDialer(proxy)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()

			c, err := dial(ctx, "tcp", pod)
			if err != nil {
				t.Fatalf("dial %s: %v", pod, err)
			}
			defer c.Close()
			fmt.Fprintln(c, "through the tunnel")
			line, err := bufio.NewReader(c).ReadString('\n')
			if err != nil || line != "THROUGH THE TUNNEL\n" {
				t.Fatalf("read %q, %v; want the backend's answer", line, err)
			}

			_, err = dial(ctx, "tcp", "10.244.0.8:8443")
			if err == nil {
				t.Fatal("dial of an address nothing listens at succeeded")
			}
			if !errors.Is(err, syscall.ECONNREFUSED) {
				t.Errorf("refusal through the proxy is not ECONNREFUSED: %v", err)
			}
			if !strings.Contains(err.Error(), "10.244.0.8:8443") || !strings.Contains(err.Error(), "code 502") {
				t.Errorf("error %q does not name the address and the proxy's answer", err)
			}
		})
	}
}

func TestConnectDialerRefusesBadProxies(t *testing.T) {
	for _, proxy := range []string{"", "socks5://127.0.0.1:1080", "unix://", "http://", "://x"} {
		if _, err := doctor.ConnectDialer(proxy); err == nil {
			t.Errorf("ConnectDialer(%q): no error", proxy)
		}
	}
	dial, err := doctor.ConnectDialer("unix://" + filepath.Join(t.TempDir(), "absent.sock"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = dial(context.Background(), "tcp", "10.244.0.7:8443")
	if err == nil || !strings.Contains(err.Error(), "10.244.0.7:8443") || !strings.Contains(err.Error(), "absent.sock") {
		t.Errorf("dial through a missing proxy: %v; want an error naming the address and the proxy", err)
	}
}
