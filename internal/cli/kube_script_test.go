package cli_test

import (
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestKubeScripts runs testdata/kube/*.txtar, where hubspoke's cluster
// commands talk over TLS to fakeAPI, a few canned answers of an API server:
// what the command line does around those answers (the API server's
// warnings, a certificate not trusted, standard output), in a real process
// whose standard error is the script's. The commands' behaviour against a
// real API server is test/e2e's.
//
// Each script gets $WORK/kubeconfig.yaml (trusting the server) and
// $WORK/untrusted.yaml (the same server, no CA); the command "conns N"
// asserts the server accepted N connections so far.
func TestKubeScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "testdata/kube",
		Setup: func(env *testscript.Env) error {
			conns := &atomic.Int64{}
			srv := httptest.NewUnstartedServer(fakeAPI())
			srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
				if s == http.StateNew {
					conns.Add(1)
				}
			}
			srv.Config.ErrorLog = log.New(io.Discard, "", 0)
			srv.StartTLS()
			env.Defer(srv.Close)
			ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
			for name, caLine := range map[string]string{
				"kubeconfig.yaml": "    certificate-authority-data: " + base64.StdEncoding.EncodeToString(ca) + "\n",
				"untrusted.yaml":  "",
			} {
				cfg := "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: " + srv.URL + "\n" + caLine +
					"users:\n- name: u\n  user: {token: t}\ncontexts:\n- name: c\n  context: {cluster: c, user: u}\ncurrent-context: c\n"
				if err := os.WriteFile(filepath.Join(env.WorkDir, name), []byte(cfg), 0o644); err != nil {
					return err
				}
			}
			env.Values["conns"] = conns
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"conns": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) != 1 {
					ts.Fatalf("usage: conns N")
				}
				n := ts.Value("conns").(*atomic.Int64).Load()
				if (fmt.Sprint(n) == args[0]) == neg {
					ts.Fatalf("%d connections, want %s", n, args[0])
				}
			},
		},
	})
}

// fakeAPI answers as an API server holding widgets.example.com (v1, the
// storage version, deprecated) with two objects in namespace shop: every
// answer about widgets carries the deprecation warning the API server
// sends, and a write is answered as a write that changed nothing.
func fakeAPI() http.Handler {
	const warning = `299 - "example.com/v1 Widget is deprecated; use example.com/v2 Widget"`
	crd := map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "widgets.example.com", "uid": "u1", "resourceVersion": "7"},
		"spec": map[string]any{"group": "example.com", "scope": "Namespaced",
			"names":    map[string]any{"plural": "widgets", "kind": "Widget", "listKind": "WidgetList"},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true, "deprecated": true}}},
		"status": map[string]any{"storedVersions": []any{"v1"}},
	}
	widget := func(name string) map[string]any {
		return map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
			"metadata": map[string]any{"name": name, "namespace": "shop", "resourceVersion": "9"}, "spec": map[string]any{"size": 3}}
	}
	write := func(w http.ResponseWriter, code int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		json.NewEncoder(w).Encode(v)
	}
	notFound := func(w http.ResponseWriter, what string) {
		write(w, http.StatusNotFound, map[string]any{"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404, "message": what + " not found"})
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		switch {
		case p == "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com":
			write(w, http.StatusOK, crd)
		case strings.HasPrefix(p, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"):
			notFound(w, `customresourcedefinitions.apiextensions.k8s.io "`+filepath.Base(p)+`"`)
		case p == "/api/v1/namespaces/shop":
			write(w, http.StatusOK, map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "shop"}})
		case strings.HasPrefix(p, "/api/v1/namespaces/"):
			notFound(w, `namespaces "`+filepath.Base(p)+`"`)
		case strings.HasPrefix(p, "/apis/example.com/v1/") && r.Method == http.MethodGet && strings.HasSuffix(p, "/widgets"):
			w.Header().Add("Warning", warning)
			write(w, http.StatusOK, map[string]any{"apiVersion": "example.com/v1", "kind": "WidgetList", "metadata": map[string]any{"resourceVersion": "10"},
				"items": []any{widget("w-1"), widget("w-2")}})
		case strings.HasPrefix(p, "/apis/example.com/v1/namespaces/shop/widgets/"):
			w.Header().Add("Warning", warning)
			obj := widget(filepath.Base(p))
			if r.Method == http.MethodPut {
				if err := json.NewDecoder(r.Body).Decode(&obj); err != nil {
					write(w, http.StatusBadRequest, map[string]any{"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 400, "message": err.Error()})
					return
				}
			}
			write(w, http.StatusOK, obj)
		default:
			notFound(w, r.Method+" "+p)
		}
	})
}
