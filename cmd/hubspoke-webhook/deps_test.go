package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestSlimDependencies keeps the webhook binary free of the API server,
// client-go, controller-runtime and etcd.
func TestSlimDependencies(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	forbidden := []string{"k8s.io/apiserver/", "k8s.io/apiextensions-apiserver/", "k8s.io/client-go/", "sigs.k8s.io/controller-runtime/", "go.etcd.io/"}
	for _, pkg := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			if strings.HasPrefix(pkg+"/", f) {
				t.Errorf("hubspoke-webhook links %s", pkg)
			}
		}
	}
}
