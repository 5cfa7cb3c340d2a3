package main

import (
	"os/exec"
	"strings"
	"testing"
)

// celEnvironment lists the packages of module k8s.io/apiserver that the
// webhook links on purpose: the API server's CEL environment, which cel
// rules run in (convert/celenv), and what its libraries import. None of
// them is the API server itself.
var celEnvironment = map[string]bool{
	"k8s.io/apiserver/pkg/apis/cel":                      true,
	"k8s.io/apiserver/pkg/cel":                           true,
	"k8s.io/apiserver/pkg/cel/environment":               true,
	"k8s.io/apiserver/pkg/cel/library":                   true,
	"k8s.io/apiserver/pkg/authentication/user":           true,
	"k8s.io/apiserver/pkg/authentication/serviceaccount": true,
	"k8s.io/apiserver/pkg/authorization/authorizer":      true,
	"k8s.io/apiserver/pkg/util/feature":                  true,
	"k8s.io/apiserver/pkg/util/compatibility":            true,
}

// TestSlimDependencies keeps the webhook binary free of the API server,
// apiextensions, controller-runtime and etcd. It links client-go, for
// serve --watch-conversions (a cache of Conversion objects only), and
// nothing of client-go's that needs a scheme of every built-in type.
func TestSlimDependencies(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	forbidden := []string{"k8s.io/apiserver/", "k8s.io/apiextensions-apiserver/", "sigs.k8s.io/controller-runtime/", "go.etcd.io/",
		"k8s.io/client-go/kubernetes/", "k8s.io/client-go/informers/", "k8s.io/client-go/listers/"}
	for _, pkg := range strings.Fields(string(out)) {
		if celEnvironment[pkg] {
			continue
		}
		for _, f := range forbidden {
			if strings.HasPrefix(pkg+"/", f) {
				t.Errorf("hubspoke-webhook links %s", pkg)
			}
		}
	}
}
