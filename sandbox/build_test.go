package sandbox

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fakeGo puts on PATH a go command, a shell script, that answers go list
// with three packages to compile, and go build -v by running beforeBuild
// (a sleep, a failure), naming the packages, the main ones too, and
// writing the binaries it is asked for: scripts that run body. It returns
// the file where it records each command line it is run with.
func fakeGo(t *testing.T, beforeBuild string, body string) (calls string) {
	t.Helper()
	dir := t.TempDir()
	calls = filepath.Join(dir, "calls")
	script := `#!/bin/sh
echo "$@" >> ` + calls + `
case "$1" in
list)
	echo "go: downloading k8s.io/kubernetes v1.37.2" >&2
	echo "go: downloading go.etcd.io/etcd/server/v3 v3.7.0" >&2
	printf 'k8s.io/api/core/v1\n\n\nk8s.io/apiserver/pkg/server\ngo.etcd.io/etcd/server/v3/etcdmain\n'
	;;
build)
	` + beforeBuild + `
	echo k8s.io/api/core/v1 >&2
	echo k8s.io/apiserver/pkg/server >&2
	echo go.etcd.io/etcd/server/v3/etcdmain >&2
	while [ "$1" != -o ]; do shift; done; out="$2"; shift 2; mkdir -p "$out"
	for p in "$@"; do b=${p#./}; echo hubspoke-sandbox-assets/$b >&2; printf '#!/bin/sh\n` + body + `\n' > "$out$b"; chmod +x "$out$b"; done
	;;
*)
	echo "fake go: unexpected $*" >&2; exit 2
	;;
esac
`
	if err := os.WriteFile(filepath.Join(dir, "go"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return calls
}

// TestBuildAssets runs the build with a fake go command: the binaries land
// in the assets directory, and the progress says what is being done, how
// far it got and, once, how to build ahead of time.
func TestBuildAssets(t *testing.T) {
	assets := t.TempDir()
	t.Setenv(AssetsEnv, assets)
	fakeGo(t, "", "exit 3")
	var progress bytes.Buffer
	dir, err := ensureAssets(context.Background(), &progress, true, binaries)
	if err != nil {
		t.Fatalf("ensureAssets: %v\n%s", err, progress.String())
	}
	if missing := missingAssets(dir, binaries); dir != assets || len(missing) > 0 {
		t.Errorf("ensureAssets returned %s, missing %v; want %s holding every binary", dir, missing, assets)
	}
	out := progress.String()
	for _, want := range []string{
		"hubspoke sandbox: building kube-apiserver, etcd and kube-controller-manager (" + KubernetesVersion + ") into " + assets,
		"`hubspoke sandbox assets`",
		BuildAheadCommand,
		"downloading modules and listing packages",
		"compiling packages: 0 of 3",
		"linking kube-apiserver, etcd and kube-controller-manager",
		"hubspoke sandbox: built kube-apiserver, etcd and kube-controller-manager (" + KubernetesVersion + ") in ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("progress lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, BuildAheadCommand); n != 1 {
		t.Errorf("progress says %d times how to build ahead, want once:\n%s", n, out)
	}
	if strings.Contains(out, "\r") {
		t.Errorf("progress to a buffer (not a terminal) rewrites lines:\n%q", out)
	}

	// Built: no second build, nothing said.
	progress.Reset()
	if _, err := ensureAssets(context.Background(), &progress, true, binaries); err != nil || progress.Len() > 0 {
		t.Errorf("second ensureAssets: %v, said %q; want nothing", err, progress.String())
	}
}

// TestBuildAssetsMissingOnly: a directory holding some of the binaries
// (envtest's, with kube-apiserver and etcd) gets only those missing; a
// sandbox without kube-controller-manager does not build it.
func TestBuildAssetsMissingOnly(t *testing.T) {
	assets := t.TempDir()
	t.Setenv(AssetsEnv, assets)
	calls := fakeGo(t, "", "exit 3")
	var progress bytes.Buffer
	if _, err := ensureAssets(context.Background(), &progress, false, []string{KubeAPIServerBinary, EtcdBinary}); err != nil {
		t.Fatalf("ensureAssets: %v\n%s", err, progress.String())
	}
	if missing := missingAssets(assets, binaries); !slices.Equal(missing, []string{KubeControllerManagerBinary}) {
		t.Errorf("after building kube-apiserver and etcd, missing %v; want kube-controller-manager alone", missing)
	}
	if err := os.Remove(calls); err != nil {
		t.Fatal(err)
	}
	progress.Reset()
	if _, err := ensureAssets(context.Background(), &progress, false, binaries); err != nil {
		t.Fatalf("ensureAssets: %v\n%s", err, progress.String())
	}
	data, err := os.ReadFile(calls)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if !strings.HasSuffix(line, " ./kube-controller-manager") || strings.Contains(line, "./etcd") || strings.Contains(line, "./kube-apiserver") {
			t.Errorf("go %s: want kube-controller-manager built alone", line)
		}
	}
	if !strings.Contains(progress.String(), "building kube-controller-manager ("+KubernetesVersion+") into") {
		t.Errorf("progress:\n%s", progress.String())
	}
}

// TestBuildAssetsFails: the go command's error is reported with its
// output, without the lines that only reported progress.
func TestBuildAssetsFails(t *testing.T) {
	t.Setenv(AssetsEnv, t.TempDir())
	fakeGo(t, `echo k8s.io/api/core/v1 >&2; echo "# k8s.io/broken" >&2; echo "broken.go:3:1: syntax error" >&2; exit 1`, "exit 3")
	_, err := ensureAssets(context.Background(), nil, false, binaries)
	if err == nil {
		t.Fatal("ensureAssets succeeded with a failing go build")
	}
	msg := err.Error()
	if !strings.Contains(msg, "broken.go:3:1: syntax error") || !strings.Contains(msg, "# k8s.io/broken") || strings.Contains(msg, "k8s.io/api/core/v1") {
		t.Errorf("error %q: want go build's error lines and no progress lines", msg)
	}
}

// TestNewBuildsWithoutStartDeadline: a deadline on New's context bounds
// the start, not a build that outlasts it. The fake build takes longer
// than the deadline and gives an etcd that exits at once: New must fail
// at etcd's start, not in the build.
func TestNewBuildsWithoutStartDeadline(t *testing.T) {
	t.Setenv(AssetsEnv, t.TempDir())
	fakeGo(t, "sleep 2", "echo fake etcd; exit 3")
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	var progress bytes.Buffer
	_, err := New(ctx, Options{TempDir: t.TempDir(), Progress: &progress})
	if err == nil {
		t.Fatal("New succeeded with a fake etcd")
	}
	if !strings.Contains(err.Error(), "etcd exited") {
		t.Errorf("New: %v\nwant etcd's start to fail, the build being done; progress:\n%s", err, progress.String())
	}
}

// TestNewBuildInterrupted: cancelling New's context (Ctrl-C) stops the
// build, and the error says so.
func TestNewBuildInterrupted(t *testing.T) {
	t.Setenv(AssetsEnv, t.TempDir())
	fakeGo(t, "sleep 30", "exit 3")
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(500*time.Millisecond, cancel)
	_, err := New(ctx, Options{TempDir: t.TempDir(), Progress: &bytes.Buffer{}})
	if err == nil || !strings.Contains(err.Error(), "interrupted") || !strings.Contains(err.Error(), "run again") {
		t.Errorf("New cancelled during the build: %v, want it interrupted", err)
	}
}

func TestWithoutDeadline(t *testing.T) {
	parent, cancelParent := context.WithCancelCause(context.WithValue(context.Background(), ctxKey{}, "v"))
	short, cancelShort := context.WithTimeout(parent, time.Millisecond)
	defer cancelShort()
	ctx, cancel := withoutDeadline(short)
	defer cancel()
	<-short.Done()
	time.Sleep(10 * time.Millisecond) // AfterFunc has run
	if ctx.Err() != nil {
		t.Fatalf("done when the deadline passed: %v", ctx.Err())
	}
	if _, ok := ctx.Deadline(); ok || ctx.Value(ctxKey{}) != "v" {
		t.Errorf("want no deadline and the parent's values")
	}

	parent2, cancelParent2 := context.WithCancelCause(context.Background())
	ctx2, cancel2 := withoutDeadline(parent2)
	defer cancel2()
	cause := errors.New("interrupt")
	cancelParent2(cause)
	<-ctx2.Done()
	if got := context.Cause(ctx2); got != cause {
		t.Errorf("cause %v, want the parent's %v", got, cause)
	}
	cancelParent(nil)
}

type ctxKey struct{}

// fakeClock is a time source a test moves.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// TestBuildReporter: on a terminal the progress is one line rewritten in
// place (and cut to the terminal's width); elsewhere plain lines.
func TestBuildReporter(t *testing.T) {
	run := func(terminal bool, width int) string {
		var b bytes.Buffer
		clock := &fakeClock{now: time.Unix(1000, 0)}
		r := &buildReporter{w: &b, terminal: terminal, width: width, every: time.Hour, now: clock.Now, total: -1, what: describe([]string{KubeAPIServerBinary, EtcdBinary})}
		r.printf("header")
		r.start()
		r.setPhase("downloading modules and listing packages")
		clock.add(12 * time.Second)
		r.goLine("go: downloading k8s.io/api v0.37.2")
		r.mu.Lock()
		r.report() // as the ticker does
		r.mu.Unlock()
		r.compiling(2)
		clock.add(time.Minute)
		if !r.goLine("k8s.io/api/core/v1") || r.goLine("# k8s.io/broken") || r.goLine("x.go:1:2: error") {
			t.Error("goLine took an error line, or not a package")
		}
		r.mu.Lock()
		r.report()
		r.mu.Unlock()
		r.goLine("k8s.io/apiserver")
		clock.add(time.Second)
		r.finish(nil)
		return b.String()
	}
	plain := run(false, 0)
	if diff := cmp.Diff(`header
hubspoke sandbox: 0s downloading modules and listing packages
hubspoke sandbox: 12s downloading modules and listing packages: 1 downloaded (k8s.io/api v0.37.2)
hubspoke sandbox: 12s compiling packages: 0 of 2
hubspoke sandbox: 1m12s compiling packages: 1 of 2 (k8s.io/api/core/v1)
hubspoke sandbox: 1m12s linking kube-apiserver and etcd
hubspoke sandbox: built kube-apiserver and etcd (`+KubernetesVersion+`) in 1m13s
`, plain); diff != "" {
		t.Errorf("plain progress (-want +got):\n%s", diff)
	}
	term := run(true, 40)
	want := "header\n" +
		"\rhubspoke sandbox: 0s downloading module\x1b[K" +
		"\rhubspoke sandbox: 12s downloading modul\x1b[K" +
		"\rhubspoke sandbox: 12s compiling package\x1b[K" +
		"\rhubspoke sandbox: 1m12s compiling packa\x1b[K" +
		"\rhubspoke sandbox: 1m12s linking kube-ap\x1b[K" +
		"\r\x1b[Khubspoke sandbox: built kube-apiserver and etcd (" + KubernetesVersion + ") in 1m13s\n"
	if diff := cmp.Diff(want, term); diff != "" {
		t.Errorf("terminal progress (-want +got):\n%s", diff)
	}
}
