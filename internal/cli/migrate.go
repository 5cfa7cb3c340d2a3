package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/hubspoke/hubspoke/migrate"
)

// scopeFlags are kubectl's -n/--namespace and -A/--all-namespaces. Without
// either, a command covers every namespace: a storage migration or a
// backup of a part of a CRD's objects is the exception, asked for with -n.
type scopeFlags struct {
	namespace string
	all       bool
}

func (s *scopeFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&s.namespace, "namespace", "n", "", "only the objects of this namespace (default: every namespace)")
	cmd.Flags().BoolVarP(&s.all, "all-namespaces", "A", false, "the objects of every namespace (the default)")
}

func (s *scopeFlags) get() (string, error) {
	if s.all && s.namespace != "" {
		return "", usagef("-n %s and -A (--all-namespaces) exclude each other", s.namespace)
	}
	return s.namespace, nil
}

// dryRunFlag is kubectl's --dry-run=none|client|server; a bare --dry-run
// means server, as the flag meant before it took a value.
func dryRunFlag(cmd *cobra.Command, p *string, usage string) {
	cmd.Flags().StringVar(p, "dry-run", "none", usage)
	cmd.Flags().Lookup("dry-run").NoOptDefVal = "server"
}

// selectorFlag is kubectl's -l/--selector.
func selectorFlag(cmd *cobra.Command, p *string, what string) {
	cmd.Flags().StringVarP(p, "selector", "l", "", what+" the objects this label selector selects (e.g. -l tier=gold,env!=dev)")
}

func checkSelector(s string) error {
	if _, err := labels.Parse(s); err != nil {
		return usagef("-l %q: %w", s, err)
	}
	return nil
}

// interrupted tells whether err ends a run that its context cut short:
// Ctrl-C or SIGTERM (cmd/hubspoke's signal context).
func interrupted(ctx context.Context, err error) bool {
	return err != nil && ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded))
}

// errInterrupted ends a run that was interrupted and that the same command
// resumes or repeats safely.
var errInterrupted = errors.New("interrupted; run again to resume")

func checkDryRun(v string) error {
	switch v {
	case "none", "client", "server":
		return nil
	}
	return usagef("--dry-run %q: want none, client or server", v)
}

// kubeFlags are the flags that reach a cluster.
type kubeFlags struct {
	kubeconfig string
	context    string
	qps        float32
	cmd        *cobra.Command // for its standard error, at run time
}

func (k *kubeFlags) add(cmd *cobra.Command) {
	k.cmd = cmd
	cmd.Flags().StringVar(&k.kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)")
	cmd.Flags().StringVar(&k.context, "context", "", "kubeconfig context (default: the current one)")
	cmd.Flags().Float32Var(&k.qps, "qps", 0, "client-side limit on requests per second (0: none; the API server's priority and fairness answers 429, which is honoured)")
}

func (k *kubeFlags) config() (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if k.kubeconfig != "" {
		rules.ExplicitPath = k.kubeconfig
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: k.context}).ClientConfig()
	if clientcmd.IsEmptyConfig(err) {
		// client-go's own message points at KUBERNETES_MASTER, which
		// nothing reads any more.
		where := "$KUBECONFIG and ~/.kube/config"
		if k.kubeconfig != "" {
			where = k.kubeconfig
		}
		return nil, usagef("no cluster configured: %s hold(s) no cluster to use; give --kubeconfig FILE (and --context NAME), set KUBECONFIG, or run inside a pod", where)
	}
	if err != nil {
		return nil, usagef("kubeconfig: %w", err)
	}
	cfg.QPS, cfg.Burst = -1, 0
	if k.qps > 0 {
		cfg.QPS, cfg.Burst = k.qps, int(k.qps)+1
	}
	cfg.UserAgent = "hubspoke"
	// The API server's warnings (a deprecated version, an unknown field
	// dropped) reach the user once each, as kubectl shows them; anything
	// else client-go would log through klog is not for the user.
	silenceKlog()
	stderr := io.Writer(os.Stderr)
	if k.cmd != nil {
		stderr = k.cmd.ErrOrStderr()
	}
	cfg.WarningHandler = rest.NewWarningWriter(stderr, rest.WarningWriterOptions{Deduplicate: true})
	return cfg, nil
}

var klogOnce sync.Once

// silenceKlog sends client-go's klog output nowhere: its lines ("W1202
// 13:00:00.000000 1 warnings.go:70] ...") are no part of hubspoke's
// output. What a user needs from them reaches the user another way: the
// API server's warnings through the config's WarningHandler, errors as the
// errors the calls return.
func silenceKlog() {
	klogOnce.Do(func() {
		klog.LogToStderr(false)
		klog.SetOutput(io.Discard)
	})
}

func (k *kubeFlags) dynamic() (dynamic.Interface, error) {
	cfg, err := k.config()
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	return dyn, nil
}

type migrateOptions struct {
	kube        kubeFlags
	scope       scopeFlags
	selector    string
	concurrency int
	pageSize    int64
	dryRun      string
	checkpoint  string
	noPrune     bool
	dropMF      []string
	output      string
	progress    string
	engine      string
	backup      string
	stuckAfter  time.Duration
	startWait   time.Duration
}

func newMigrateCmd() *cobra.Command {
	o := &migrateOptions{}
	cmd := &cobra.Command{
		Use:   "migrate CRD-NAME [--kubeconfig PATH] [--engine auto|cluster|client] [--backup FILE] [-n NAMESPACE | -A] [-l SELECTOR] [--concurrency N] [--dry-run=none|client|server] [-o text|json|yaml]",
		Short: "Re-encode every object of a CRD at its storage version, then prune storedVersions",
		Long: `Migrate rewrites every object of the CRD (plural.group) at its current
storage version, then prunes status.storedVersions.

Before anything is written it refuses while another storage migration of
the resource is under way (a StorageVersionMigration not finished, or the
CRD's StorageMigrating condition), reads a sample object at every served
version so that the conversion webhook answers, and writes --backup FILE.

--engine chooses who rewrites the objects. cluster: the cluster's own
storage version migrator (kube-controller-manager, Kubernetes 1.37), through
a StorageVersionMigration that migrate creates and follows to its end,
counting the objects written; one that makes no progress for --stuck-after
while the migrator retries an error (a failing conversion webhook) is
stopped, and the error names the object that fails and why. client:
hubspoke writes each object itself (below). auto (the default): cluster
when the migrator takes the migration up within --cluster-start and the run
needs nothing only the client engine does (--dry-run, -n, -l, --no-prune,
a checkpoint to resume), else client. Either way, managedFields entries of
versions no longer served are removed.

The client engine: a paged LIST, then a PUT of each object as read, with its
resourceVersion. The API server re-encodes the object at the storage version
and writes it only when that encoding differs from what etcd holds, so
objects already stored at that version cost one request and no write.

Conflicts are retried after a fresh GET, deleted objects are skipped, 429
and server timeouts honour Retry-After, network errors back off; any other
error stops the run and names the object. Progress is saved to the
checkpoint file after every page (the file must be writable before
anything is written); run the same command again to resume, also after
Ctrl-C. If nothing listens at the API server's address, or its
certificate is not trusted, the run fails at once.

--dry-run=server sends every write with dryRun=All: each object is
converted, validated and admitted, nothing is stored. A dry run cannot see
which objects are stored at another version, so it counts them as
"accepted", or as "already current" when status.storedVersions says every
object is; --dry-run=client only lists and counts.

-n NAMESPACE limits the run to one namespace, which must exist, and
-l SELECTOR to the objects selected (and then nothing is pruned); by
default, or with -A, every object of every namespace is migrated.

Once every object was rewritten, status.storedVersions is set to the storage
version alone (the cluster engine's migrator does it itself), if the CRD's
spec (its generation) and storage version are still those of the start of
the run: if they changed, nothing is pruned and the report says why.
managedFields entries of versions the CRD no longer serves (and of
--drop-managed-fields versions) are removed as objects are rewritten.

Exit status: 0 done (and pruned unless --no-prune), 1 failure or not pruned,
2 usage error. See docs/migrate.md.`,
		Example: `  hubspoke migrate widgets.example.com
  hubspoke migrate widgets.example.com --engine cluster --backup widgets-before.jsonl
  hubspoke migrate widgets.example.com --dry-run=server
  hubspoke migrate widgets.example.com -n team-a --no-prune
  hubspoke migrate widgets.example.com -l tier=gold --dry-run=server
  hubspoke migrate widgets.example.com --concurrency 32 --checkpoint /tmp/widgets.ckpt -o json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd, args[0]) },
	}
	o.kube.add(cmd)
	o.scope.add(cmd)
	selectorFlag(cmd, &o.selector, "only")
	f := cmd.Flags()
	f.IntVar(&o.concurrency, "concurrency", migrate.DefaultConcurrency, "objects written at once")
	f.Int64Var(&o.pageSize, "page-size", migrate.DefaultPageSize, "objects per LIST page")
	dryRunFlag(cmd, &o.dryRun, "none; server: send every write with dryRun=All (converted, validated, admitted, not stored); client: list and count only. Nothing is pruned")
	f.StringVar(&o.checkpoint, "checkpoint", "", `checkpoint file (default "hubspoke-migrate-CRD-NAME.json" in the working directory; "-" for none)`)
	f.BoolVar(&o.noPrune, "no-prune", false, "leave status.storedVersions alone")
	f.StringSliceVar(&o.dropMF, "drop-managed-fields", nil, "also remove the managedFields entries of these versions")
	f.StringVarP(&o.output, "output", "o", "text", "report format: text, json or yaml")
	f.StringVar(&o.engine, "engine", "auto", "who rewrites the objects: auto, cluster (the cluster's storage version migrator) or client (hubspoke)")
	f.StringVar(&o.backup, "backup", "", "back every object up to FILE before the first write (refused if FILE exists)")
	f.DurationVar(&o.stuckAfter, "stuck-after", migrate.DefaultClusterStuck, "cluster engine: stop a migration without progress for this long while its migrator retries an error")
	f.DurationVar(&o.startWait, "cluster-start", migrate.DefaultClusterStart, "cluster engine: how long the cluster's migrator has to take the migration up")
	progressFlag(cmd, &o.progress)
	return cmd
}

func (o *migrateOptions) run(cmd *cobra.Command, name string) error {
	engine, err := migrate.ParseEngine(o.engine)
	if err != nil {
		return usagef("--engine: %w", err)
	}
	if engine == migrate.EngineCluster {
		for _, c := range []struct {
			set  bool
			flag string
		}{{o.dryRun != "none", "--dry-run"}, {o.scope.namespace != "", "-n"}, {o.selector != "", "-l"}, {o.noPrune, "--no-prune"}} {
			if c.set {
				return usagef("--engine cluster and %s exclude each other: the cluster's migrator covers every object and prunes, with no dry run (use --engine client)", c.flag)
			}
		}
	}
	if o.stuckAfter <= 0 || o.startWait <= 0 {
		return usagef("--stuck-after and --cluster-start must be positive")
	}
	if o.backup != "" {
		if _, err := os.Stat(o.backup); err == nil {
			return usagef("--backup %s exists: give another file", o.backup)
		}
	}
	if err := checkReportFormat(o.output, ""); err != nil {
		return err
	}
	if o.concurrency < 1 || o.pageSize < 1 {
		return usagef("--concurrency and --page-size must be at least 1")
	}
	if err := checkDryRun(o.dryRun); err != nil {
		return err
	}
	if err := checkSelector(o.selector); err != nil {
		return err
	}
	ns, err := o.scope.get()
	if err != nil {
		return err
	}
	prog, err := newProgressPrinter(cmd.ErrOrStderr(), o.progress, "migrate "+name)
	if err != nil {
		return err
	}
	dyn, err := o.kube.dynamic()
	if err != nil {
		return err
	}
	checkpoint := o.checkpoint
	switch checkpoint {
	case "":
		checkpoint = "hubspoke-migrate-" + name + ".json"
	case "-":
		checkpoint = ""
	}
	ctx := cmd.Context()
	opts := migrate.Options{
		CRD: name, Namespace: ns, LabelSelector: o.selector, Client: dyn, Concurrency: o.concurrency, PageSize: o.pageSize,
		DryRun: o.dryRun == "server", ListOnly: o.dryRun == "client",
		Checkpoint: checkpoint, Prune: !o.noPrune, DropManagedFields: o.dropMF,
		Engine: engine, ClusterStart: o.startWait, ClusterStuck: o.stuckAfter,
		Progress: func(p migrate.Progress) { prog.update(migrateSnapshot(p)) },
	}
	var backup *os.File
	if o.backup != "" {
		// Written to a temporary file, linked as FILE once complete.
		if backup, err = os.CreateTemp(filepath.Dir(o.backup), filepath.Base(o.backup)+".tmp*"); err != nil {
			return fmt.Errorf("--backup: %w", err)
		}
		defer os.Remove(backup.Name())
		opts.Backup = backup
	}
	res, err := migrate.Migrate(ctx, opts)
	prog.finish()
	if backup != nil {
		cerr := backup.Close()
		if res != nil && res.Backup != nil {
			if cerr == nil {
				cerr = os.Link(backup.Name(), o.backup)
			}
			if cerr != nil {
				return fmt.Errorf("--backup %s: %w", o.backup, cerr)
			}
		}
	}
	if interrupted(ctx, err) {
		err = errInterrupted
		if res != nil && res.Checkpoint != "" {
			err = fmt.Errorf("%w (progress saved in %s)", errInterrupted, res.Checkpoint)
			res.Checkpoint = "" // said already
		}
	}
	if res != nil {
		if werr := writeMigrateReport(cmd.OutOrStdout(), o.output, res, err); werr != nil {
			return werr
		}
	}
	if err != nil {
		if res != nil && res.Checkpoint != "" {
			return fmt.Errorf("%w (progress saved in %s: run again to resume)", err, res.Checkpoint)
		}
		return err
	}
	if !o.noPrune && o.dryRun == "none" && ns == "" && o.selector == "" && !res.Pruned && !isAlreadyPruned(res) {
		return exitError{exitFail}
	}
	return nil
}

func isAlreadyPruned(res *migrate.Result) bool {
	return len(res.StoredVersions) == 1 && res.StoredVersions[0] == res.StorageVersion
}

func writeMigrateReport(w io.Writer, format string, res *migrate.Result, runErr error) error {
	rate := 0.0
	if s := res.Elapsed.Seconds(); s > 0 {
		rate = float64(res.Done) / s
	}
	if format != "text" {
		type backup struct {
			Objects int    `json:"objects"`
			SHA256  string `json:"sha256"`
		}
		out := struct {
			CRD            string           `json:"crd"`
			StorageVersion string           `json:"storageVersion"`
			Engine         string           `json:"engine,omitempty"`
			Migration      string           `json:"storageVersionMigration,omitempty"`
			Notes          []string         `json:"notes,omitempty"`
			Backup         *backup          `json:"backup,omitempty"`
			Progress       migrate.Progress `json:"objects"`
			Pruned         bool             `json:"pruned"`
			StoredVersions []string         `json:"storedVersions"`
			Message        string           `json:"message,omitempty"`
			Seconds        float64          `json:"seconds"`
			PerSecond      float64          `json:"objectsPerSecond"`
			Error          string           `json:"error,omitempty"`
		}{CRD: res.CRD, StorageVersion: res.StorageVersion, Engine: string(res.Engine), Migration: res.Migration, Notes: res.Notes,
			Progress: res.Progress, Pruned: res.Pruned, StoredVersions: res.StoredVersions, Message: res.PruneMessage, Seconds: res.Elapsed.Seconds(), PerSecond: rate}
		if res.Backup != nil {
			out.Backup = &backup{res.Backup.Count, res.Backup.SHA256}
		}
		if runErr != nil {
			out.Error = runErr.Error()
		}
		return writeStructured(w, format, out)
	}
	var b strings.Builder
	if res.Backup != nil {
		fmt.Fprintf(&b, "backup: %d objects (sha256 %s)\n", res.Backup.Count, res.Backup.SHA256)
	}
	for _, n := range res.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	if res.Engine == migrate.EngineCluster {
		fmt.Fprintf(&b, "engine: cluster (StorageVersionMigration %s)\n", res.Migration)
	}
	fmt.Fprintf(&b, "%s: %d objects at storage version %s in %s (%.0f/s): %d rewritten, %d already current, %d deleted meanwhile",
		res.CRD, res.Done+res.Resumed, res.StorageVersion, res.Elapsed.Round(time.Millisecond), rate, res.Rewritten, res.Unchanged, res.Skipped)
	if res.Accepted > 0 {
		fmt.Fprintf(&b, ", %d accepted by a dry run (rewritten by the real run if stored at another version than %s)", res.Accepted, res.StorageVersion)
	}
	if res.Resumed > 0 {
		fmt.Fprintf(&b, ", %d done by an earlier run", res.Resumed)
	}
	if res.Conflicts+res.Retries > 0 {
		fmt.Fprintf(&b, "; %d conflicts and %d transient errors retried", res.Conflicts, res.Retries)
	}
	if res.ManagedFieldsCleaned > 0 {
		fmt.Fprintf(&b, "; managedFields entries of versions no longer served removed from %d", res.ManagedFieldsCleaned)
	}
	b.WriteByte('\n')
	if res.PruneMessage != "" {
		b.WriteString(res.PruneMessage + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// progressFlag is --progress, for the commands that go through many
// objects.
func progressFlag(cmd *cobra.Command, p *string) {
	cmd.Flags().StringVar(p, "progress", "auto", "progress on stderr: auto (a bar on a terminal, lines otherwise), bar, lines or none")
}

// snapshot is the progress of a run: done of total objects, fresh of
// them done by this run (the rate counts those), and the counts that
// follow total on a progress line, as logfmt.
type snapshot struct {
	done, total, fresh int
	fields             string
}

func migrateSnapshot(pr migrate.Progress) snapshot {
	return snapshot{done: pr.Done + pr.Resumed, total: pr.Total, fresh: pr.Done,
		fields: fmt.Sprintf("rewritten=%d unchanged=%d skipped=%d accepted=%d resumed=%d conflicts=%d retries=%d",
			pr.Rewritten, pr.Unchanged, pr.Skipped, pr.Accepted, pr.Resumed, pr.Conflicts, pr.Retries)}
}

// progressPrinter renders the progress of a run: a bar redrawn in place
// on a terminal, one logfmt line a second otherwise.
type progressPrinter struct {
	w     io.Writer
	mode  string
	label string
	start time.Time

	mu   sync.Mutex
	last time.Time
	cur  snapshot
	any  bool
}

func newProgressPrinter(w io.Writer, mode, label string) (*progressPrinter, error) {
	switch mode {
	case "auto":
		mode = "lines"
		if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			mode = "bar"
		}
	case "bar", "lines", "none":
	default:
		return nil, usagef("--progress %q: want auto, bar, lines or none", mode)
	}
	return &progressPrinter{w: w, mode: mode, label: label, start: time.Now()}, nil
}

func (p *progressPrinter) update(s snapshot) {
	if p.mode == "none" {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cur, p.any = s, true
	now := time.Now()
	every := time.Second
	if p.mode == "bar" {
		every = 100 * time.Millisecond
	}
	if now.Sub(p.last) < every {
		return
	}
	p.last = now
	p.render()
}

func (p *progressPrinter) render() {
	s := p.cur
	rate := float64(s.fresh) / max(time.Since(p.start).Seconds(), 1e-3)
	if p.mode == "lines" {
		fields := ""
		if s.fields != "" {
			fields = " " + s.fields
		}
		fmt.Fprintf(p.w, "progress op=%q done=%d total=%d%s rate=%.0f/s\n", p.label, s.done, s.total, fields, rate)
		return
	}
	const width = 30
	frac := 0.0
	if s.total > 0 {
		frac = min(float64(s.done)/float64(s.total), 1)
	}
	filled := int(frac * width)
	fmt.Fprintf(p.w, "\r%s [%s%s] %d/%d %3.0f%% %.0f/s", p.label, strings.Repeat("#", filled), strings.Repeat(".", width-filled), s.done, s.total, 100*frac, rate)
}

func (p *progressPrinter) finish() {
	if p.mode == "none" {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.any {
		return
	}
	p.render()
	if p.mode == "bar" {
		fmt.Fprintln(p.w)
	}
}
