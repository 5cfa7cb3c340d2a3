package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/hubspoke/hubspoke/check"
	"github.com/hubspoke/hubspoke/schema"
)

// liveFlags are check's --live flags: which cluster, which objects.
type liveFlags struct {
	on       bool
	kube     kubeFlags
	scope    scopeFlags
	selector string
	pageSize int64
	progress string
	cmd      *cobra.Command
}

func (l *liveFlags) add(cmd *cobra.Command) {
	l.cmd = cmd
	f := cmd.Flags()
	f.BoolVar(&l.on, "live", false, "also check every existing object of the CRD in the cluster (read at its storage version; needs get on the CRD and list on its resource)")
	f.StringVar(&l.kube.kubeconfig, "kubeconfig", "", "kubeconfig file for --live (default: $KUBECONFIG, then ~/.kube/config)")
	f.StringVar(&l.kube.context, "context", "", "kubeconfig context for --live (default: the current one)")
	f.StringVarP(&l.scope.namespace, "namespace", "n", "", "--live: only the objects of this namespace (default: every namespace)")
	f.BoolVarP(&l.scope.all, "all-namespaces", "A", false, "--live: the objects of every namespace (the default)")
	f.StringVarP(&l.selector, "selector", "l", "", "--live: only the objects matching this label selector (as kubectl: app=web,tier!=db)")
	f.Int64Var(&l.pageSize, "page-size", 500, "--live: objects per LIST page (memory holds one page)")
	f.StringVar(&l.progress, "progress", "auto", "--live: progress on stderr: auto (a line redrawn on a terminal, nothing otherwise), lines, or none")
}

// validate checks the --live flags without reaching the cluster.
func (l *liveFlags) validate() error {
	if !l.on {
		for _, name := range []string{"namespace", "all-namespaces", "selector", "kubeconfig", "context"} {
			if l.set(name) {
				return usagef("--%s is a flag of --live: give --live too", name)
			}
		}
		return nil
	}
	if _, err := l.scope.get(); err != nil {
		return err
	}
	if _, err := labels.Parse(l.selector); err != nil {
		return usagef("--selector %q: %v", l.selector, err)
	}
	if l.pageSize < 1 {
		return usagef("--page-size must be at least 1")
	}
	switch l.progress {
	case "auto", "lines", "none":
	default:
		return usagef("--progress %q: want auto, lines or none", l.progress)
	}
	return nil
}

func (l *liveFlags) set(name string) bool {
	return l.cmd != nil && l.cmd.Flags().Changed(name)
}

// liveSource is a cluster's CRD and the client that lists its objects.
type liveSource struct {
	rc      rest.Interface
	crd     *schema.CRD // as the cluster has it
	group   string
	version string // its storage version: the objects are read at it
	plural  string
	cluster bool // cluster-scoped
}

// open reads the CRD name from the cluster. A cluster that cannot be
// reached, or that has no such CRD, is a usage error: nothing was checked.
func (l *liveFlags) open(ctx context.Context, name string) (*liveSource, error) {
	crd, rc, err := readClusterCRD(ctx, &l.kube, name)
	if err != nil {
		return nil, fmt.Errorf("--live: %w", err)
	}
	s := &liveSource{rc: rc, crd: crd, group: crd.Group(), plural: crd.Object.Spec.Names.Plural, cluster: crd.Object.Spec.Scope == "Cluster"}
	for _, v := range crd.Versions() {
		if v.Storage {
			s.version = v.Name
		}
	}
	if s.version == "" {
		return nil, usagef("--live: CustomResourceDefinition %s has no storage version", name)
	}
	return s, nil
}

// readClusterCRD reads the CustomResourceDefinition name from the cluster
// (--kubeconfig, --context), and returns a client for more reads. Every
// error is a usage error: nothing could be done.
func readClusterCRD(ctx context.Context, k *kubeFlags, name string) (*schema.CRD, rest.Interface, error) {
	cfg, err := k.config()
	if err != nil {
		return nil, nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, usageError{fmt.Errorf("client: %w", err)}
	}
	rc := cs.CoreV1().RESTClient() // AbsPath below: its codec decodes the API server's Status errors
	raw, err := rawResult(rc.Get().AbsPath("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", name).Do(ctx))
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil, usagef("the cluster has no CustomResourceDefinition %s", name)
		}
		return nil, nil, usageError{fmt.Errorf("read CustomResourceDefinition %s: %w", name, err)}
	}
	crd, err := loadClusterCRD(name, raw)
	if err != nil {
		return nil, nil, usageError{err}
	}
	return crd, rc, nil
}

// rawResult is the body of a response, or its error as the API server's
// Status says it (Result.Raw alone gives "unknown" for a 403).
func rawResult(res rest.Result) ([]byte, error) {
	if err := res.Error(); err != nil {
		return nil, err
	}
	return res.Raw()
}

// loadClusterCRD loads the CRD the cluster returned, as kubectl get crd
// NAME -o yaml prints it (keys sorted, managedFields left out), so that
// the positions of findings are lines of that output.
func loadClusterCRD(name string, raw []byte) (*schema.CRD, error) {
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, fmt.Errorf("customresourcedefinition %s: %w", name, err)
	}
	if md, ok := obj["metadata"].(map[string]any); ok {
		delete(md, "managedFields")
	}
	y, err := yaml.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("customresourcedefinition %s: %w", name, err)
	}
	return schema.Load("kubectl get crd "+name+" -o yaml", y)
}

// listPage is the part of a LIST response live reads.
type listPage struct {
	Metadata struct {
		Continue           string `json:"continue"`
		RemainingItemCount *int64 `json:"remainingItemCount"`
	} `json:"metadata"`
	Items []json.RawMessage `json:"items"`
}

// check lists the objects page by page at the storage version and feeds
// each to a check.Live: memory holds one page and the report.
func (s *liveSource) check(ctx context.Context, l *liveFlags, crd *schema.CRD, conv check.Converter, stderr io.Writer) (*check.Report, error) {
	live, err := check.NewLive(crd, conv, s.version)
	if err != nil {
		return nil, usageError{fmt.Errorf("--live: %w", err)}
	}
	ns, _ := l.scope.get()
	path := []string{"/apis", s.group, s.version}
	if ns != "" && !s.cluster {
		path = append(path, "namespaces", ns)
	}
	path = append(path, s.plural)
	prog := newLiveProgress(stderr, l.progress, s.plural+"."+s.group)
	cont, done, failing := "", 0, 0
	for page := 1; ; page++ {
		req := s.rc.Get().AbsPath(path...).Param("limit", strconv.FormatInt(l.pageSize, 10))
		if cont != "" {
			req = req.Param("continue", cont)
		}
		if l.selector != "" {
			req = req.Param("labelSelector", l.selector)
		}
		raw, err := rawResult(req.Do(ctx))
		if err != nil {
			prog.finish()
			if page == 1 {
				// Nothing was read: the run could not start.
				return nil, usageError{fmt.Errorf("--live: list %s.%s at %s: %w", s.plural, s.group, s.version, err)}
			}
			if apierrors.IsResourceExpired(err) {
				return nil, fmt.Errorf("--live: list %s.%s at %s, page %d (after %d objects): the list expired before it was read to the end (410 Gone); run again, with a larger --page-size: %w", s.plural, s.group, s.version, page, done, err)
			}
			return nil, fmt.Errorf("--live: list %s.%s at %s, page %d (after %d objects): %w", s.plural, s.group, s.version, page, done, err)
		}
		var p listPage
		if err := json.Unmarshal(raw, &p); err != nil {
			prog.finish()
			return nil, fmt.Errorf("--live: list %s.%s at %s, page %d: not a list: %w", s.plural, s.group, s.version, page, err)
		}
		for _, item := range p.Items {
			if ctx.Err() != nil {
				prog.finish()
				return nil, fmt.Errorf("--live: stopped after %d objects: %w", done, ctx.Err())
			}
			for _, f := range live.Check(item) {
				if f.Severity == check.SeverityError {
					failing++
					break
				}
			}
			done++
			total := int64(-1)
			if p.Metadata.RemainingItemCount != nil {
				total = int64(done) + *p.Metadata.RemainingItemCount
			}
			prog.update(done, total, failing)
		}
		if cont = p.Metadata.Continue; cont == "" {
			break
		}
	}
	prog.finish()
	return live.Report(), nil
}

// liveProgress shows how many objects were checked: one line redrawn on a
// terminal (auto), a line per second (lines), or nothing.
type liveProgress struct {
	w     io.Writer
	on    bool
	lines bool
	label string
	last  time.Time
	text  string
}

func newLiveProgress(w io.Writer, mode, label string) *liveProgress {
	p := &liveProgress{w: w, label: label}
	switch mode {
	case "lines":
		p.on, p.lines = true, true
	case "auto":
		f, ok := w.(*os.File)
		p.on = ok && term.IsTerminal(int(f.Fd()))
	}
	return p
}

func (p *liveProgress) update(done int, total int64, failing int) {
	if !p.on {
		return
	}
	p.text = fmt.Sprintf("check --live %s: %d objects", p.label, done)
	if total >= 0 {
		p.text = fmt.Sprintf("check --live %s: %d/%d objects", p.label, done, total)
	}
	p.text += fmt.Sprintf(", %d with errors", failing)
	every := 100 * time.Millisecond
	if p.lines {
		every = time.Second
	}
	if now := time.Now(); now.Sub(p.last) >= every {
		p.last = now
		p.render()
	}
}

func (p *liveProgress) render() {
	if p.lines {
		fmt.Fprintln(p.w, p.text)
		return
	}
	fmt.Fprintf(p.w, "\r%s\x1b[K", p.text)
}

func (p *liveProgress) finish() {
	if !p.on || p.text == "" {
		return
	}
	p.render()
	if !p.lines {
		fmt.Fprintln(p.w)
	}
	p.text = ""
}
