// Package e2e runs hubspoke against a real API server: the in-process
// sandbox (package sandbox), one per test package, started in TestMain with
// the test CRDs installed once; and, for the tests that need
// kube-controller-manager's controllers, a second one that runs it, started
// on first use (kcmSandbox).
package e2e

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/hubspoke/hubspoke/internal/cli"
	_ "github.com/hubspoke/hubspoke/internal/cli/apivalidation" // cli.Main as cmd/hubspoke runs it
	"github.com/hubspoke/hubspoke/internal/goroutines"
	"github.com/hubspoke/hubspoke/sandbox"
)

// The package's sandbox and what TestMain installed on it.
var (
	sb  *sandbox.Sandbox
	dyn dynamic.Interface

	// widgets is examples/widget/crd.yaml as is: conversion by webhook,
	// through the service hubspoke-system/hubspoke-webhook, answered by
	// handWebhook.
	widgets = crdVersions{group: "example.com", resource: "widgets"}
	// plainWidgets is the same CRD in group plain.example.com with
	// conversion strategy None.
	plainWidgets = crdVersions{group: "plain.example.com", resource: "widgets"}

	hook *handWebhook
)

type crdVersions struct{ group, resource string }

func (c crdVersions) gvr(version string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: c.group, Version: version, Resource: c.resource}
}

// TestMain runs the package's tests on one sandbox; run as "hubspoke" (a
// testscript's exec of this binary, see runbook_test.go), it is the
// hubspoke command line, as cmd/hubspoke runs it.
func TestMain(m *testing.M) {
	testscript.Main(sandboxTests{m}, map[string]func(){"hubspoke": hubspokeMain})
}

type sandboxTests struct{ m *testing.M }

func (t sandboxTests) Run() int {
	flag.Parse()
	return run(t.m)
}

func hubspokeMain() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(m *testing.M) (code int) {
	before := goroutines.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "e2e: "+format+"\n", args...)
		return 1
	}

	start := time.Now()
	var err error
	sb, err = sandbox.New(ctx, sandbox.Options{})
	if err != nil {
		return fail("%v", err)
	}
	started := time.Since(start)
	dataDir := sb.DataDir()
	defer func() {
		if hook != nil {
			hook.Close()
		}
		stopStart := time.Now()
		if err := stopKCMSandbox(); err != nil {
			code = fail("stop the sandbox with kube-controller-manager: %v", err)
		}
		if err := sb.Stop(); err != nil {
			code = fail("stop sandbox: %v", err)
		}
		if testing.Verbose() {
			fmt.Printf("e2e: sandbox stopped in %v\n", time.Since(stopStart).Round(time.Millisecond))
		}
		if _, err := os.Stat(dataDir); !errors.Is(err, os.ErrNotExist) {
			code = fail("data directory %s after Stop: %v, want it removed", dataDir, err)
		}
		if leaked := goroutines.LeftSince(before, 10*time.Second); len(leaked) > 0 {
			code = fail("%d goroutines left after Stop:\n%s", len(leaked), strings.Join(leaked, "\n\n"))
		}
	}()
	if dyn, err = dynamic.NewForConfig(sb.RESTConfig()); err != nil {
		return fail("dynamic client: %v", err)
	}

	// A cluster has only default, kube-system, kube-public and
	// kube-node-lease: the tests' namespaces are created once here.
	for _, name := range []string{ns, "verbs", migNamespace} {
		if err := sb.EnsureNamespace(ctx, name); err != nil {
			return fail("%v", err)
		}
	}
	if hook, err = startHandWebhook(sb, "hubspoke-system", "hubspoke-webhook"); err != nil {
		return fail("%v", err)
	}
	crd, err := sandbox.ReadCRDFile("../../examples/widget/crd.yaml")
	if err != nil {
		return fail("%v", err)
	}
	plain := crd.DeepCopy()
	plain.Name = plainWidgets.resource + "." + plainWidgets.group
	plain.Spec.Group = plainWidgets.group
	plain.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
	installStart := time.Now()
	for _, crd := range []*apiextensionsv1.CustomResourceDefinition{crd, plain} {
		if _, err := sb.InstallCRD(ctx, crd); err != nil {
			return fail("%v", err)
		}
	}
	if testing.Verbose() {
		fmt.Printf("e2e: sandbox started in %v, 2 CRDs installed in %v\n",
			started.Round(time.Millisecond), time.Since(installStart).Round(time.Millisecond))
	}
	return m.Run()
}
