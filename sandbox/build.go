package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/term"

	"github.com/hubspoke/hubspoke/internal/embedmod"
)

// BuildAheadCommand builds the sandbox's binaries ahead of their first use
// (in CI, before go test), from any module that requires hubspoke.
const BuildAheadCommand = "go run github.com/hubspoke/hubspoke/cmd/hubspoke sandbox assets"

// buildAssets builds those of the binaries names that dir lacks,
// reporting to progress (nil: silently). When hint is set, it says once,
// before the build, how to build ahead of time. Only ctx's cancellation
// stops it; its caller chooses whether ctx has a deadline.
func buildAssets(ctx context.Context, dir string, progress io.Writer, hint bool, names []string) (err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("sandbox: assets: %w", err)
	}
	r := newBuildReporter(progress)
	defer func() { r.finish(err) }()
	lock := filepath.Join(dir, ".build.lock")
	unlock, err := lockFile(ctx, lock, func() {
		r.setPhase("waiting for another process's build of the same binaries (it holds " + lock + ")")
	})
	if err != nil {
		return buildError(ctx, fmt.Errorf("lock %s: %w", lock, err), "", names)
	}
	defer unlock()
	names = missingAssets(dir, names)
	if len(names) == 0 { // built by whoever held the lock before us
		r.mu.Lock()
		r.done = "built by another process"
		r.mu.Unlock()
		return nil
	}
	r.mu.Lock()
	r.what = describe(names)
	r.mu.Unlock()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("sandbox: %s %s not in %s and building them needs the go command, which is not on PATH: install Go, or set %s to a directory holding kube-apiserver and etcd (such as envtest's KUBEBUILDER_ASSETS) and kube-controller-manager if you start it",
			describe(names), isAre(names), dir, AssetsEnv)
	}
	r.printf("hubspoke sandbox: building %s into %s (once per version; minutes from an empty Go build cache)", r.what, dir)
	if hint {
		r.printf("hubspoke sandbox: to build ahead of time (in CI: before go test), run `hubspoke sandbox assets`, or from your module: %s", BuildAheadCommand)
		if testing.Testing() {
			r.printf("hubspoke sandbox: in a test the build can outlast go test's timeout (10 minutes by default)")
		}
	}
	r.start()

	tmp, err := os.MkdirTemp(dir, ".build-")
	if err != nil {
		return fmt.Errorf("sandbox: assets: %w", err)
	}
	defer os.RemoveAll(tmp)
	src := filepath.Join(tmp, "src")
	if err := writeAssetSource(src); err != nil {
		return err
	}
	var pkgs []string
	for _, name := range names {
		pkgs = append(pkgs, "./"+name)
	}
	r.mu.Lock()
	r.mainCount = len(pkgs)
	r.mu.Unlock()

	// The packages go build will compile: those whose compiled form is not
	// in the build cache. Listing them also downloads the modules.
	r.setPhase("downloading modules and listing packages")
	var list bytes.Buffer
	out, err := runGo(ctx, goCmd, src, &list, r.goLine,
		append([]string{"list", "-deps", "-f", `{{if and .Stale (ne .Name "main")}}{{.ImportPath}}{{end}}`}, pkgs...)...)
	if err != nil {
		return buildError(ctx, err, out, names)
	}
	total := 0
	for _, line := range strings.Split(list.String(), "\n") {
		if strings.TrimSpace(line) != "" {
			total++
		}
	}
	r.compiling(total)

	bin := filepath.Join(tmp, "bin")
	out, err = runGo(ctx, goCmd, src, io.Discard, r.goLine,
		append([]string{"build", "-v", "-ldflags", buildLDFlags, "-o", bin + string(filepath.Separator)}, pkgs...)...)
	if err != nil {
		return buildError(ctx, err, out, names)
	}
	// Each binary appears whole or not at all: a rename.
	for _, name := range names {
		if err := os.Rename(filepath.Join(bin, name), filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("sandbox: assets: %w", err)
		}
	}
	return nil
}

// describe names the binaries built, with the Kubernetes release:
// "kube-apiserver and etcd (v1.37.2)".
func describe(names []string) string {
	var s string
	switch len(names) {
	case 0:
	case 1:
		s = names[0]
	default:
		s = strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
	}
	return s + " (" + KubernetesVersion + ")"
}

func isAre(names []string) string {
	if len(names) == 1 {
		return "is"
	}
	return "are"
}

// buildError says why the build failed: interrupted (ctx cancelled), or
// the go command's error and output.
func buildError(ctx context.Context, err error, out string, names []string) error {
	if ctx.Err() != nil {
		how := "interrupted"
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			how = "cut short by its deadline"
		}
		return fmt.Errorf("sandbox: build of %s %s (%w); run again to resume: the Go build cache keeps what was compiled", describe(names), how, context.Cause(ctx))
	}
	if out = strings.TrimSpace(out); out != "" {
		return fmt.Errorf("sandbox: build %s: %w\n%s", describe(names), err, out)
	}
	return fmt.Errorf("sandbox: build %s: %w", describe(names), err)
}

// runGo runs the go command in dir, stdout to stdout, and hands each line
// of its standard error to onLine; the lines onLine does not take (it
// returns false) are returned as the command's output, for errors.
func runGo(ctx context.Context, goCmd, dir string, stdout io.Writer, onLine func(string) bool, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, goCmd, args...)
	cmd.Dir = dir
	cmd.Env = embedmod.Env()
	cmd.Stdout = stdout
	// The compiler and linker the go command starts share its standard
	// error: do not wait for them for ever once it is killed.
	cmd.WaitDelay = 5 * time.Second
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return "", err
	}
	if err := cmd.Start(); err != nil {
		return "", err
	}
	var out strings.Builder
	sc := bufio.NewScanner(stderr)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if line := sc.Text(); !onLine(line) {
			out.WriteString(line)
			out.WriteByte('\n')
		}
	}
	return out.String(), cmd.Wait()
}

// buildReporter shows a build's progress: on a terminal one line,
// rewritten every second; elsewhere a line at each change of phase and
// every 30 seconds.
type buildReporter struct {
	w        io.Writer // nil: report nothing
	terminal bool
	width    int // of the terminal; 0 when unknown
	every    time.Duration
	now      func() time.Time

	mu        sync.Mutex
	began     time.Time // zero until start
	phase     string
	total     int    // packages to compile; -1 until known
	compiled  int    // packages compiled but the main ones
	mains     int    // main packages compiled
	mainCount int    // main packages to compile
	what      string // the binaries built, for the messages
	downloads int
	last      string // the last module downloaded or package compiled
	inPlace   bool   // a line is shown in place, without its newline
	done      string // said at the end instead of "built"
	stop      chan struct{}
	stopped   chan struct{}
}

func newBuildReporter(w io.Writer) *buildReporter {
	r := &buildReporter{w: w, every: 30 * time.Second, now: time.Now, total: -1}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		r.terminal, r.every = true, time.Second
		if width, _, err := term.GetSize(int(f.Fd())); err == nil {
			r.width = width
		}
	}
	return r
}

// printf writes a line of its own.
func (r *buildReporter) printf(format string, args ...any) {
	if r.w == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.clear()
	fmt.Fprintf(r.w, format+"\n", args...)
}

// start starts the clock and the periodic report.
func (r *buildReporter) start() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.began.IsZero() {
		return
	}
	r.began = r.now()
	if r.w == nil {
		return
	}
	stop, stopped := make(chan struct{}), make(chan struct{})
	r.stop, r.stopped = stop, stopped
	go func() {
		defer close(stopped)
		t := time.NewTicker(r.every)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				r.mu.Lock()
				r.report()
				r.mu.Unlock()
			}
		}
	}()
}

// setPhase says what the build does now.
func (r *buildReporter) setPhase(phase string) {
	r.start() // waiting for a lock counts as build time
	r.mu.Lock()
	defer r.mu.Unlock()
	r.phase, r.last = phase, ""
	r.report()
}

// compiling starts the compile phase, total packages to compile.
func (r *buildReporter) compiling(total int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.total, r.compiled = total, 0
	r.phase, r.last = "compiling", ""
	if total == 0 {
		r.phase = "linking"
	}
	r.report()
}

// assetModule is the module path of sandbox/_assets, whose main packages
// go build compiles last before linking them.
const assetModule = "hubspoke-sandbox-assets"

// importPath matches a line go build -v writes for a package it compiles.
var importPath = regexp.MustCompile(`^[\pL\pN._~+/-]+$`)

// goLine takes a line of the go command's standard error that reports
// progress: a module downloaded, a package compiled (-v).
func (r *buildReporter) goLine(line string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if mod, ok := strings.CutPrefix(line, "go: downloading "); ok {
		r.downloads++
		r.last = mod
		return true
	}
	if r.total < 0 || !importPath.MatchString(line) {
		return false
	}
	if strings.HasPrefix(line, assetModule+"/") {
		r.mains++
	} else {
		r.compiled++
		r.last = line
	}
	if (r.compiled >= r.total || r.mainCount > 0 && r.mains >= r.mainCount) && r.phase == "compiling" {
		// The main packages come last, then the linker: the long
		// step of a build whose packages were all in the cache.
		r.phase, r.last = "linking", ""
		r.report()
	}
	return true
}

// line is the progress line, without a newline.
func (r *buildReporter) line() string {
	var b strings.Builder
	fmt.Fprintf(&b, "hubspoke sandbox: %s ", r.now().Sub(r.began).Round(time.Second))
	switch {
	case r.phase == "compiling" && r.total > 0:
		fmt.Fprintf(&b, "compiling packages: %d of %d", r.compiled, r.total)
	case r.phase == "linking":
		b.WriteString("linking " + strings.TrimSuffix(r.what, " ("+KubernetesVersion+")"))
	default:
		b.WriteString(r.phase)
		if r.downloads > 0 {
			fmt.Fprintf(&b, ": %d downloaded", r.downloads)
		}
	}
	if r.last != "" {
		fmt.Fprintf(&b, " (%s)", r.last)
	}
	return b.String()
}

// report writes the progress line: in place on a terminal, else as a line
// of its own. r.mu is held.
func (r *buildReporter) report() {
	if r.w == nil || r.began.IsZero() {
		return
	}
	line := r.line()
	if !r.terminal {
		fmt.Fprintln(r.w, line)
		return
	}
	if r.width > 1 && len(line) >= r.width {
		line = line[:r.width-1] // a wrapped line cannot be rewritten
	}
	fmt.Fprintf(r.w, "\r%s\x1b[K", line)
	r.inPlace = true
}

// clear ends the line shown in place, if any. r.mu is held.
func (r *buildReporter) clear() {
	if r.inPlace {
		fmt.Fprint(r.w, "\r\x1b[K")
		r.inPlace = false
	}
}

// finish stops the periodic report and says how the build ended.
func (r *buildReporter) finish(err error) {
	r.mu.Lock()
	stop := r.stop
	r.stop = nil
	r.mu.Unlock()
	if stop != nil {
		close(stop)
		<-r.stopped
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.w == nil || r.began.IsZero() {
		return
	}
	r.clear()
	took := r.now().Sub(r.began).Round(time.Second)
	switch {
	case err != nil:
		fmt.Fprintf(r.w, "hubspoke sandbox: the build failed after %s\n", took)
	case r.done != "":
		fmt.Fprintf(r.w, "hubspoke sandbox: %s (waited %s)\n", r.done, took)
	default:
		fmt.Fprintf(r.w, "hubspoke sandbox: built %s in %s\n", r.what, took)
	}
}
