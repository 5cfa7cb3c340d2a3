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

// Deadlines of the package's setup, each its own: the sandbox's start
// (sandbox.New adds the time a build of its binaries takes, which runs
// under no deadline: minutes on a fresh machine), then the setup on the
// started sandbox (namespaces, the hand webhook, the CRDs), from the
// moment the start returned.
const (
	startTimeout = 2 * time.Minute
	setupTimeout = 2 * time.Minute
)

// withDeadlines runs start under a deadline of startTimeout, then, if it
// succeeded, setup under a deadline of setupTimeout of its own.
func withDeadlines(startTimeout, setupTimeout time.Duration, start, setup func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	err := start(ctx)
	cancel()
	if err != nil {
		return err
	}
	ctx, cancel = context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	return setup(ctx)
}

func run(m *testing.M) (code int) {
	before := goroutines.Now()
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "e2e: "+format+"\n", args...)
		return 1
	}
	defer func() {
		stopStart := time.Now()
		if err := stopKCMSandbox(); err != nil {
			code = fail("stop the sandbox with kube-controller-manager: %v", err)
		}
		if sb == nil {
			return
		}
		for _, h := range []*handWebhook{hook, latHandHook} {
			if h != nil {
				h.Close()
			}
		}
		dataDir := sb.DataDir()
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

	startKCMEarly()
	var started, installed time.Duration
	start := func(ctx context.Context) error {
		began := time.Now()
		var err error
		sb, err = sandbox.New(ctx, sandbox.Options{})
		started = time.Since(began)
		return err
	}
	err := withDeadlines(startTimeout, setupTimeout, start, func(ctx context.Context) error {
		var err error
		installed, err = setup(ctx)
		return err
	})
	if err != nil {
		return fail("%v", err)
	}
	if testing.Verbose() {
		fmt.Printf("e2e: sandbox started in %v, 2 CRDs installed in %v\n",
			started.Round(time.Millisecond), installed.Round(time.Millisecond))
	}
	return m.Run()
}

// setup prepares the started sandbox for the package's tests and returns
// how long installing the CRDs took.
func setup(ctx context.Context) (time.Duration, error) {
	var err error
	if dyn, err = dynamic.NewForConfig(sb.RESTConfig()); err != nil {
		return 0, fmt.Errorf("dynamic client: %w", err)
	}
	// A cluster has only default, kube-system, kube-public and
	// kube-node-lease: the tests' namespaces are created once here.
	for _, name := range []string{ns, "verbs", migNamespace} {
		if err := sb.EnsureNamespace(ctx, name); err != nil {
			return 0, err
		}
	}
	if hook, err = startHandWebhook(sb, "hubspoke-system", "hubspoke-webhook"); err != nil {
		return 0, err
	}
	crd, err := sandbox.ReadCRDFile("../../examples/widget/crd.yaml")
	if err != nil {
		return 0, err
	}
	plain := crd.DeepCopy()
	plain.Name = plainWidgets.resource + "." + plainWidgets.group
	plain.Spec.Group = plainWidgets.group
	plain.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
	began := time.Now()
	for _, crd := range []*apiextensionsv1.CustomResourceDefinition{crd, plain} {
		if _, err := sb.InstallCRD(ctx, crd); err != nil {
			return 0, err
		}
	}
	return time.Since(began), nil
}

// TestSetupHasItsOwnDeadline: a start that outlasts its deadline without
// failing, as sandbox.New does while it builds its binaries, leaves the
// setup after it a deadline of its own.
func TestSetupHasItsOwnDeadline(t *testing.T) {
	start := func(ctx context.Context) error {
		<-ctx.Done() // the build: it ignores the start's deadline
		return nil
	}
	err := withDeadlines(time.Millisecond, time.Minute, start, func(ctx context.Context) error {
		return ctx.Err()
	})
	if err != nil {
		t.Fatalf("the setup after a long start: %v", err)
	}
}
