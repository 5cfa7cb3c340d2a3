package migrate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/dynamic"
)

// FieldManager is the field manager hubspoke writes with.
const FieldManager = "hubspoke-migrate"

// Defaults of Options.
const (
	DefaultConcurrency  = 16
	DefaultPageSize     = 500
	DefaultMaxConflicts = 20
)

// Options configures Migrate.
type Options struct {
	// CRD is the name of the CustomResourceDefinition (plural.group).
	CRD string
	// Namespace, when set, limits the run to one namespace (default: every
	// namespace). storedVersions is never pruned after a run limited to a
	// namespace: objects elsewhere may still be stored at older versions.
	// A namespace that does not exist is an error (*NamespaceError), and
	// so is a namespace given for a cluster-scoped CRD.
	Namespace string
	// LabelSelector, when set, limits the run to the objects it selects
	// (kubectl's -l syntax); storedVersions is then never pruned either.
	LabelSelector string
	// Client reaches the API server (required).
	Client dynamic.Interface
	// Concurrency is how many objects are written at once (default
	// DefaultConcurrency).
	Concurrency int
	// PageSize is the LIST page size (default DefaultPageSize).
	PageSize int64
	// DryRun sends every write with dryRun=All: the API server converts,
	// validates and admits each object but stores nothing. Nothing is
	// pruned and no checkpoint is written. Whether the real run would
	// re-encode an object shows only when it is written, so a dry run
	// counts objects as Unchanged when status.storedVersions holds the
	// storage version alone (and no managedFields entry is to be
	// dropped), else as Accepted: never as Rewritten.
	DryRun bool
	// ListOnly (kubectl's --dry-run=client) lists and counts the objects
	// as DryRun does, but sends no write at all. Implies DryRun's other
	// effects: nothing pruned, no checkpoint.
	ListOnly bool
	// Checkpoint, when set, is a file recording the progress of the run
	// after every page; a later run with the same file resumes after the
	// last completed page. It is removed when the run completes. Migrate
	// checks that it can write there before it writes any object.
	Checkpoint string
	// Prune sets status.storedVersions to the storage version alone once
	// every object was rewritten, unless the CRD changed since the run
	// began (see Result.PruneMessage).
	Prune bool
	// DropManagedFields lists versions whose metadata.managedFields entries
	// are removed from each object as it is rewritten. Entries of versions
	// the CRD no longer serves are always removed: server-side apply fails
	// on entries of a version that is later removed from the CRD.
	DropManagedFields []string
	// MaxConflicts bounds the conflicts retried for one object (default
	// DefaultMaxConflicts).
	MaxConflicts int
	// Backoff paces the retries of transient errors.
	Backoff Backoff
	// Progress, when set, is called after every object (from several
	// goroutines, but never concurrently) with the counts so far.
	Progress func(Progress)
	// Engine chooses who rewrites the objects: EngineClient (the zero
	// value), EngineCluster or EngineAuto. Result.Engine says which did.
	Engine Engine
	// ClusterStart bounds the wait for the cluster's migrator to take up
	// the StorageVersionMigration (its Running condition) before it is
	// deemed not running: the migration is then deleted, and EngineAuto
	// uses the client engine (default DefaultClusterStart).
	ClusterStart time.Duration
	// ClusterStuck is how long a cluster migration may go without progress
	// while the migrator retries an error (a conversion webhook failing)
	// before it is stopped with a *StuckError (default
	// DefaultClusterStuck); without a retried error, ten times as long.
	ClusterStuck time.Duration
	// ClusterSample bounds the objects a stuck cluster migration reads to
	// find the one that fails (default DefaultClusterSample).
	ClusterSample int
	// Backup, when set, receives a backup of the objects (WriteBackup's
	// format, of the run's namespace and selection), written before the
	// first write; the run does not start if it fails.
	Backup io.Writer
	// Logger receives one record per retry and per page (nil: silent).
	Logger *slog.Logger
	// Registerer receives the metrics hubspoke_migrate_objects_total
	// {result} and hubspoke_migrate_retries_total{reason} (nil: none).
	Registerer prometheus.Registerer

	sleep sleepFunc     // tests replace it
	poll  time.Duration // how often a cluster migration is read; tests shorten it
}

// Progress counts the objects of a run.
type Progress struct {
	// Total is the number of objects expected (listed plus the API
	// server's remainingItemCount); zero while unknown.
	Total int `json:"total"`
	// Done is every object handled, whatever the outcome.
	Done int `json:"done"`
	// Rewritten objects were written again at the storage version.
	Rewritten int `json:"rewritten"`
	// Unchanged objects were already stored at the storage version: the
	// API server answered the write without a new resourceVersion.
	Unchanged int `json:"unchanged"`
	// Skipped objects were deleted while the run went on.
	Skipped int `json:"skipped"`
	// Accepted objects passed a dry run (converted, validated and
	// admitted; with ListOnly: listed); the real run rewrites those
	// stored at another version than the storage version.
	Accepted int `json:"accepted,omitempty"`
	// Resumed objects were done by an earlier run (from the checkpoint).
	Resumed int `json:"resumed"`
	// Conflicts and Retries count the conflicts retried and the transient
	// errors retried.
	Conflicts int `json:"conflicts"`
	Retries   int `json:"retries"`
	// ManagedFieldsCleaned counts the objects whose managedFields entries
	// of versions no longer served (or dropped) were removed.
	ManagedFieldsCleaned int `json:"managedFieldsCleaned,omitempty"`
}

// Result is the outcome of Migrate.
type Result struct {
	CRD            string
	StorageVersion string
	Progress
	// Engine is the engine that rewrote the objects; Migration the
	// StorageVersionMigration of the cluster engine.
	Engine    Engine
	Migration string
	// Notes say what the run chose and why (EngineAuto's choice, a stale
	// StorageMigrating condition).
	Notes []string
	// Backup describes the backup written first (Options.Backup).
	Backup *BackupResult
	// CRDResourceVersion and CRDGeneration are the CRD's when the run
	// began (for a resumed run: when the first run began).
	CRDResourceVersion string
	CRDGeneration      int64
	// Pruned tells whether status.storedVersions was set to
	// StoredVersions; PruneMessage says why not when it was not.
	Pruned         bool
	StoredVersions []string
	PruneMessage   string
	// Checkpoint is the checkpoint file that holds this run's progress
	// (written by it, or by the run it resumed); empty when none was
	// written, so a failed run says "run again to resume" only when it
	// can.
	Checkpoint string
	Elapsed    time.Duration
}

// ObjectError names the object a run stopped at.
type ObjectError struct {
	Namespace, Name string
	Err             error
}

func (e *ObjectError) Error() string {
	if e.Namespace == "" {
		return fmt.Sprintf("object %s: %v", e.Name, e.Err)
	}
	return fmt.Sprintf("object %s/%s: %v", e.Namespace, e.Name, e.Err)
}

func (e *ObjectError) Unwrap() error { return e.Err }

type metrics struct {
	objects *prometheus.CounterVec
	retries *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		objects: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hubspoke_migrate_objects_total", Help: "Objects handled by storage migration, by result."}, []string{"result"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hubspoke_migrate_retries_total", Help: "Requests retried by storage migration, by reason."}, []string{"reason"}),
	}
	if reg != nil {
		for _, c := range []**prometheus.CounterVec{&m.objects, &m.retries} {
			if err := reg.Register(*c); err != nil {
				// A second run on the same registry counts on.
				var are prometheus.AlreadyRegisteredError
				if !errors.As(err, &are) {
					return nil, fmt.Errorf("migrate: register metrics: %w", err)
				}
				existing, ok := are.ExistingCollector.(*prometheus.CounterVec)
				if !ok {
					return nil, fmt.Errorf("migrate: register metrics: %w", err)
				}
				*c = existing
			}
		}
	}
	return m, nil
}

// run is the state of one Migrate call.
type run struct {
	opts    Options
	crd     *apiextensionsv1.CustomResourceDefinition
	storage string
	rw      string          // the version objects are read and written at: the storage version
	drop    map[string]bool // apiVersions whose managedFields entries go
	log     *slog.Logger
	metrics *metrics

	mu   sync.Mutex
	prog Progress

	saved       bool        // the checkpoint file holds this run's progress
	allCurrent  bool        // storedVersions is the storage version alone
	contacted   atomic.Bool // the API server has answered once
	cleanupOnly bool        // write only objects whose managedFields entries go
}

// Migrate re-encodes every object of opts.CRD at its storage version and,
// with opts.Prune, then prunes status.storedVersions. On error the Result
// holds the counts so far; an error about one object is an *ObjectError.
//
// Before the first write it refuses while another migration of the CRD's
// resource is under way (*BusyError), checks the conversion webhook on a
// sample object (*WebhookError), and writes opts.Backup. opts.Engine
// chooses who rewrites the objects: hubspoke (EngineClient) or the
// cluster's storage version migrator (EngineCluster, EngineAuto), whose
// migration is followed to its end, a stuck one stopped with a
// *StuckError. Either way, managedFields entries of versions the CRD no
// longer serves are removed afterwards.
func Migrate(ctx context.Context, opts Options) (*Result, error) {
	start := time.Now()
	if opts.Client == nil {
		return nil, errors.New("migrate: no client given")
	}
	if opts.CRD == "" {
		return nil, errors.New("migrate: no crd given")
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = DefaultConcurrency
	}
	if opts.PageSize <= 0 {
		opts.PageSize = DefaultPageSize
	}
	if opts.MaxConflicts <= 0 {
		opts.MaxConflicts = DefaultMaxConflicts
	}
	if opts.ListOnly {
		opts.DryRun = true
	}
	if opts.Engine == "" {
		opts.Engine = EngineClient
	}
	if _, err := ParseEngine(string(opts.Engine)); err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	if opts.ClusterStart <= 0 {
		opts.ClusterStart = DefaultClusterStart
	}
	if opts.ClusterStuck <= 0 {
		opts.ClusterStuck = DefaultClusterStuck
	}
	if opts.ClusterSample <= 0 {
		opts.ClusterSample = DefaultClusterSample
	}
	if opts.poll <= 0 {
		opts.poll = 250 * time.Millisecond
	}
	if _, err := labels.Parse(opts.LabelSelector); err != nil {
		return nil, fmt.Errorf("migrate: label selector %q: %w", opts.LabelSelector, err)
	}
	opts.Backoff = opts.Backoff.withDefaults()
	if opts.sleep == nil {
		opts.sleep = realSleep
	}
	r := &run{opts: opts, log: opts.Logger}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	var err error
	if r.metrics, err = newMetrics(opts.Registerer); err != nil {
		return nil, err
	}
	if err := r.retry(ctx, "get crd", func() error {
		var err error
		r.crd, err = GetCRD(ctx, opts.Client, opts.CRD)
		return err
	}); err != nil {
		return nil, fmt.Errorf("migrate %s: %w", opts.CRD, err)
	}
	r.contacted.Store(true)
	if r.storage, err = storageVersion(r.crd); err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	r.rw = r.storage
	if err := r.retry(ctx, "get namespace", func() error { return checkNamespace(ctx, opts.Client, r.crd, opts.Namespace) }); err != nil {
		return nil, fmt.Errorf("migrate %s: %w", opts.CRD, err)
	}
	r.allCurrent = slices.Equal(r.crd.Status.StoredVersions, []string{r.storage})
	r.drop = map[string]bool{}
	for _, v := range opts.DropManagedFields {
		r.drop[r.crd.Spec.Group+"/"+v] = true
	}
	res := &Result{CRD: opts.CRD, StorageVersion: r.storage, CRDResourceVersion: r.crd.ResourceVersion, CRDGeneration: r.crd.Generation, StoredVersions: r.crd.Status.StoredVersions}
	finish := func(err error) (*Result, error) {
		r.mu.Lock()
		res.Progress = r.prog
		r.mu.Unlock()
		res.Elapsed = time.Since(start)
		if r.saved {
			res.Checkpoint = opts.Checkpoint
		}
		return res, err
	}

	// Before anything is written: no other migration under way, and the
	// webhook converts.
	var note string
	if err := r.retry(ctx, "list storageversionmigrations", func() error {
		var err error
		note, err = checkNotBusy(ctx, opts.Client, r.crd)
		return err
	}); err != nil {
		return nil, fmt.Errorf("migrate %s: %w", opts.CRD, err)
	}
	if note != "" {
		res.Notes = append(res.Notes, note)
	}
	if err := r.checkWebhook(ctx); err != nil {
		return nil, fmt.Errorf("migrate %s: %w", opts.CRD, err)
	}

	cp := &Checkpoint{CRD: opts.CRD, Namespace: opts.Namespace, LabelSelector: opts.LabelSelector, UID: string(r.crd.UID), StorageVersion: r.storage, CRDResourceVersion: r.crd.ResourceVersion, CRDGeneration: r.crd.Generation}
	resumable := false
	if opts.Checkpoint != "" && !opts.DryRun {
		// Before the first write: a run that cannot save its progress
		// must not start.
		err := checkWritable(opts.Checkpoint)
		var old *Checkpoint
		if err == nil {
			old, err = LoadCheckpoint(opts.Checkpoint)
		}
		switch {
		case err != nil:
			return nil, fmt.Errorf("migrate %s: %w", opts.CRD, err)
		case old == nil:
		case old.CRD != cp.CRD || old.Namespace != cp.Namespace || old.LabelSelector != cp.LabelSelector || old.UID != cp.UID || old.StorageVersion != cp.StorageVersion || old.CRDGeneration != cp.CRDGeneration:
			r.log.Info("migrate: checkpoint is for another state of the crd, starting over", "checkpoint", opts.Checkpoint,
				"crd", old.CRD, "storageVersion", old.StorageVersion, "crdGeneration", old.CRDGeneration)
		default:
			cp = old
			resumable = true
			res.CRDResourceVersion = cp.CRDResourceVersion
		}
	}

	engine := opts.Engine
	if engine != EngineClient {
		why := clusterOnlyConflicts(opts, resumable)
		switch {
		case why != "" && engine == EngineCluster:
			return nil, fmt.Errorf("migrate %s: the cluster engine cannot do this run: %s (use the client engine)", opts.CRD, why)
		case why != "":
			engine = EngineClient
			res.Notes = append(res.Notes, "client engine: the cluster's migrator cannot be used, "+why)
		}
	}

	if opts.Backup != nil {
		bres, err := WriteBackup(ctx, opts.Backup, BackupOptions{CRD: opts.CRD, Client: opts.Client, Namespace: opts.Namespace, LabelSelector: opts.LabelSelector, PageSize: opts.PageSize})
		if err != nil {
			return nil, fmt.Errorf("migrate %s: backup: %w; nothing written", opts.CRD, err)
		}
		res.Backup = bres
	}

	if engine != EngineClient {
		err := r.migrateCluster(ctx, res)
		var cu *clusterUnavailable
		switch {
		case errors.As(err, &cu) && engine == EngineAuto:
			res.Notes = append(res.Notes, "client engine: "+cu.Error())
			res.Migration = ""
			r.mu.Lock()
			r.prog = Progress{}
			r.mu.Unlock()
		case err != nil:
			res.Engine = EngineCluster
			return finish(fmt.Errorf("migrate %s: %w", opts.CRD, err))
		default:
			res.Engine = EngineCluster
			if err := r.finishCluster(ctx, res); err != nil {
				return finish(err)
			}
			if err := r.cleanManagedFields(ctx); err != nil {
				return finish(err)
			}
			return finish(nil)
		}
	}
	res.Engine = EngineClient
	if resumable {
		r.saved = true
		r.prog.Resumed = cp.Done
		r.log.Info("migrate: resuming", "checkpoint", opts.Checkpoint, "done", cp.Done, "after", cp.LastKey)
	}
	if !cp.Complete {
		if err := r.migrateAll(ctx, cp); err != nil {
			return finish(err)
		}
	}
	if opts.DryRun {
		res.PruneMessage = "dry run: nothing pruned"
		return finish(nil)
	}
	switch {
	case opts.Prune && opts.Namespace != "":
		res.PruneMessage = "storedVersions not pruned: the run covered namespace " + opts.Namespace + " only"
	case opts.Prune && opts.LabelSelector != "":
		res.PruneMessage = "storedVersions not pruned: the run covered the objects selected by " + opts.LabelSelector + " only"
	case opts.Prune:
		pr, err := Prune(ctx, opts.Client, r.crd)
		if err != nil {
			return finish(fmt.Errorf("migrate %s: %w", opts.CRD, err))
		}
		res.Pruned, res.StoredVersions, res.PruneMessage = pr.Pruned, pr.StoredVersions, pr.Message
	}
	if opts.Checkpoint != "" {
		if err := removeCheckpoint(opts.Checkpoint); err != nil {
			return finish(err)
		}
	}
	return finish(nil)
}

// cleanManagedFields removes, after a cluster migration, the managedFields
// entries of versions the CRD no longer serves (and of
// opts.DropManagedFields) from the objects that have some: a PUT of each
// such object, as the client engine does in its own writes.
func (r *run) cleanManagedFields(ctx context.Context) error {
	if len(r.drop) == 0 && len(servedVersions(r.crd)) == len(r.crd.Spec.Versions) {
		return nil // no entry can name a version to drop
	}
	r.cleanupOnly = true
	defer func() { r.cleanupOnly = false }()
	opts := r.opts
	r.opts.Checkpoint = ""
	defer func() { r.opts = opts }()
	return r.migrateAll(ctx, &Checkpoint{})
}

// page is one LIST answer, or the items of a page found another way.
type page struct {
	items    []unstructured.Unstructured
	cont     string // the continue token after this page
	needGet  bool   // items were listed at another version: GET each first
	lastKey  string // key of the page's last item
	estimate int    // listed so far plus remainingItemCount
}

func objectKey(u *unstructured.Unstructured) string {
	if ns := u.GetNamespace(); ns != "" {
		return ns + "/" + u.GetName()
	}
	return u.GetName()
}

// migrateAll lists page after page (one page ahead) and rewrites each page
// with opts.Concurrency workers, updating cp after every page.
func (r *run) migrateAll(ctx context.Context, cp *Checkpoint) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pages := make(chan page, 1)
	listErr := make(chan error, 1)
	go func() {
		defer close(pages)
		listErr <- r.listAll(ctx, cp, pages)
	}()
	for p := range pages {
		if err := r.migratePage(ctx, p); err != nil {
			cancel()
			for range pages {
			}
			<-listErr
			return err
		}
		cp.Continue, cp.LastKey = p.cont, p.lastKey
		r.mu.Lock()
		cp.Done = r.prog.Done + r.prog.Resumed
		r.mu.Unlock()
		if r.opts.Checkpoint != "" && !r.opts.DryRun {
			if err := cp.Save(r.opts.Checkpoint); err != nil {
				cancel()
				for range pages {
				}
				<-listErr
				return err
			}
			r.saved = true
		}
		r.log.Debug("migrate: page done", "crd", r.opts.CRD, "objects", len(p.items), "lastKey", p.lastKey)
	}
	if err := <-listErr; err != nil {
		return err
	}
	cp.Complete = true
	if r.opts.Checkpoint != "" && !r.opts.DryRun {
		if err := cp.Save(r.opts.Checkpoint); err != nil {
			return err
		}
		r.saved = true
	}
	return nil
}

// listAll sends the pages of the CRD's objects at the storage version,
// starting after cp's position.
func (r *run) listAll(ctx context.Context, cp *Checkpoint, out chan<- page) error {
	client := listClient(r.opts.Client, r.crd, r.rw, r.opts.Namespace)
	cont, skipTo, resumed := cp.Continue, cp.LastKey, cp.Done
	if cp.LastKey != "" && cp.Continue == "" {
		// The last run ended on a page boundary at the end of the list.
		return nil
	}
	listed, restarts := 0, 0
	for {
		var list *unstructured.UnstructuredList
		err := r.retry(ctx, "list", func() error {
			var err error
			list, err = client.List(ctx, metav1.ListOptions{Limit: r.opts.PageSize, Continue: cont, LabelSelector: r.opts.LabelSelector})
			return err
		})
		if err != nil && cont != "" && isExpired(err) && restarts < 3 {
			restarts++
			// The continue token outlived etcd's compaction: list from the
			// start again, skipping every key already sent, by this run or
			// an earlier one (LIST is in key order), so no object is
			// handled or counted twice.
			r.log.Info("migrate: continue token expired, listing from the start", "crd", r.opts.CRD, "after", skipTo)
			cont = ""
			listed = -resumed // the estimate counts what is left to this run
			continue
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			p, ferr := r.pageElsewhere(ctx, cont)
			if ferr != nil {
				return fmt.Errorf("migrate %s: list at %s: %w", r.opts.CRD, r.rw, err)
			}
			p.estimate = listed + len(p.items)
			if skip(&p, skipTo) {
				listed += len(p.items)
				select {
				case out <- p:
				case <-ctx.Done():
					return ctx.Err()
				}
				skipTo = max(skipTo, p.lastKey)
			}
			if p.cont == "" {
				return nil
			}
			cont = p.cont
			continue
		}
		p := page{items: list.Items, cont: list.GetContinue()}
		listed += len(list.Items)
		p.estimate = listed
		if rc := list.GetRemainingItemCount(); rc != nil {
			p.estimate += int(*rc)
		}
		if len(p.items) > 0 {
			p.lastKey = objectKey(&p.items[len(p.items)-1])
		}
		if skip(&p, skipTo) {
			select {
			case out <- p:
			case <-ctx.Done():
				return ctx.Err()
			}
			skipTo = max(skipTo, p.lastKey)
		}
		if p.cont == "" {
			return nil
		}
		cont = p.cont
	}
}

// skip drops the items at or before key (done by an earlier run) and tells
// whether anything is left.
func skip(p *page, key string) bool {
	if key != "" {
		p.items = slices.DeleteFunc(p.items, func(u unstructured.Unstructured) bool { return objectKey(&u) <= key })
	}
	return len(p.items) > 0 || p.cont == ""
}

// pageElsewhere lists the page at cont at another served version. A LIST at
// the storage version fails as a whole when one object cannot be converted
// to it; at another version that object may need no conversion, so its name
// can be found and the failing GET named.
func (r *run) pageElsewhere(ctx context.Context, cont string) (page, error) {
	var errs []error
	for _, v := range servedVersions(r.crd) {
		if v == r.rw {
			continue
		}
		list, err := listClient(r.opts.Client, r.crd, v, r.opts.Namespace).List(ctx, metav1.ListOptions{Limit: r.opts.PageSize, Continue: cont, LabelSelector: r.opts.LabelSelector})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		p := page{items: list.Items, cont: list.GetContinue(), needGet: true}
		if len(p.items) > 0 {
			p.lastKey = objectKey(&p.items[len(p.items)-1])
		}
		return p, nil
	}
	return page{}, errors.Join(errs...)
}

func isExpired(err error) bool {
	return strings.Contains(err.Error(), "continue parameter is too old") || isGoneOrExpired(err)
}

// migratePage rewrites the items of p with opts.Concurrency workers and
// returns the first error.
func (r *run) migratePage(ctx context.Context, p page) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	r.mu.Lock()
	if p.estimate > r.prog.Total-r.prog.Resumed {
		r.prog.Total = p.estimate + r.prog.Resumed
	}
	r.mu.Unlock()
	work := make(chan *unstructured.Unstructured)
	var (
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	for range min(r.opts.Concurrency, len(p.items)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for obj := range work {
				if err := r.migrateOne(ctx, obj, p.needGet); err != nil {
					errOnce.Do(func() { firstErr = err; cancel() })
				}
			}
		}()
	}
	for i := range p.items {
		select {
		case work <- &p.items[i]:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
	}
	close(work)
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
}

type outcome int

const (
	outRewritten outcome = iota
	outUnchanged
	outSkipped
	outAccepted
)

// migrateOne writes obj back as read; fresh says to GET it first.
func (r *run) migrateOne(ctx context.Context, obj *unstructured.Unstructured, fresh bool) error {
	ns, name := obj.GetNamespace(), obj.GetName()
	client := objectClient(r.opts.Client, r.crd, r.rw, ns)
	named := func(err error) error {
		return &ObjectError{Namespace: ns, Name: name, Err: err}
	}
	var updateOpts metav1.UpdateOptions
	updateOpts.FieldManager = FieldManager
	if r.opts.DryRun {
		updateOpts.DryRun = []string{metav1.DryRunAll}
	}
	conflicts, retries := 0, 0
	for {
		if fresh {
			got, err := client.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				switch class, wait := classify(err); class {
				case classNotFound:
					r.count(outSkipped)
					return nil
				case classThrottled, classTransient:
					if err := r.backoff(ctx, &retries, class, wait, err); err != nil {
						return named(err)
					}
					continue
				default:
					return named(fmt.Errorf("get at %s: %w", r.rw, err))
				}
			}
			obj, fresh = got, false
		}
		if r.cleanupOnly && !r.hasEntriesToDrop(obj) {
			return nil
		}
		dropped := r.dropManagedFields(obj)
		var (
			out *unstructured.Unstructured
			err error
		)
		sentRV := obj.GetResourceVersion()
		if !r.opts.ListOnly {
			out, err = client.Update(ctx, obj, updateOpts)
		}
		if err == nil {
			if dropped && !r.opts.DryRun {
				r.mu.Lock()
				r.prog.ManagedFieldsCleaned++
				r.mu.Unlock()
			}
			if r.cleanupOnly {
				return nil
			}
			switch {
			case r.opts.DryRun && r.allCurrent && !dropped:
				// Every object is stored at the storage version already
				// and this one's content does not change: the real run
				// will find it current.
				r.count(outUnchanged)
			case r.opts.DryRun:
				// A dry run cannot see whether the object is stored at
				// another version: count it as accepted, not rewritten.
				r.count(outAccepted)
			case out.GetResourceVersion() == sentRV:
				r.count(outUnchanged)
			default:
				r.count(outRewritten)
			}
			return nil
		}
		switch class, wait := classify(err); class {
		case classNotFound:
			r.count(outSkipped)
			return nil
		case classConflict:
			conflicts++
			r.mu.Lock()
			r.prog.Conflicts++
			r.mu.Unlock()
			r.metrics.retries.WithLabelValues("conflict").Inc()
			if conflicts > r.opts.MaxConflicts {
				return named(fmt.Errorf("still conflicting after %d fresh reads: %w", r.opts.MaxConflicts, err))
			}
			r.log.Debug("migrate: conflict, reading again", "namespace", ns, "name", name)
			fresh = true
		case classThrottled, classTransient:
			if err := r.backoff(ctx, &retries, class, wait, err); err != nil {
				return named(err)
			}
		default:
			return named(fmt.Errorf("write at %s: %w", r.rw, err))
		}
	}
}

// backoff waits before retry *retries (then counts it), or returns the
// final error once the retries are spent.
func (r *run) backoff(ctx context.Context, retries *int, class errClass, wait time.Duration, err error) error {
	if !r.contacted.Load() && utilnet.IsConnectionRefused(err) {
		// Nothing listens there: say so now rather than after 20 s of
		// retries. Once the API server has answered, a refused connection
		// (a restart) is retried like any network error.
		return fmt.Errorf("%w: is the API server of this kubeconfig running?", err)
	}
	if *retries >= r.opts.Backoff.Retries {
		return fmt.Errorf("giving up after %d retries: %w", *retries, err)
	}
	if wait <= 0 {
		wait = r.opts.Backoff.delay(*retries)
	}
	*retries++
	r.mu.Lock()
	r.prog.Retries++
	r.mu.Unlock()
	r.metrics.retries.WithLabelValues(class.String()).Inc()
	r.log.Info("migrate: retrying", "reason", class.String(), "wait", wait, "err", err)
	if err := r.opts.sleep(ctx, wait); err != nil {
		return err
	}
	return nil
}

// retry runs f, retrying throttling and transient errors.
func (r *run) retry(ctx context.Context, what string, f func() error) error {
	retries := 0
	for {
		err := f()
		if err == nil {
			return nil
		}
		class, wait := classify(err)
		if class != classThrottled && class != classTransient {
			return err
		}
		if err := r.backoff(ctx, &retries, class, wait, fmt.Errorf("%s: %w", what, err)); err != nil {
			return err
		}
	}
}

func (r *run) count(o outcome) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.prog.Done++
	switch o {
	case outRewritten:
		r.prog.Rewritten++
		r.metrics.objects.WithLabelValues("rewritten").Inc()
	case outUnchanged:
		r.prog.Unchanged++
		r.metrics.objects.WithLabelValues("unchanged").Inc()
	case outSkipped:
		r.prog.Skipped++
		r.metrics.objects.WithLabelValues("skipped").Inc()
	case outAccepted:
		r.prog.Accepted++
		r.metrics.objects.WithLabelValues("accepted").Inc()
	}
	if r.prog.Total < r.prog.Done+r.prog.Resumed {
		r.prog.Total = r.prog.Done + r.prog.Resumed
	}
	if r.opts.Progress != nil {
		r.opts.Progress(r.prog)
	}
}

// dropManagedFields removes the managedFields entries of versions being
// dropped and of versions the CRD no longer serves, and tells whether it
// removed any.
func (r *run) dropManagedFields(obj *unstructured.Unstructured) bool {
	mf := obj.GetManagedFields()
	if len(mf) == 0 {
		return false
	}
	kept := mf[:0:0]
	for _, e := range mf {
		if r.dropEntry(e.APIVersion) {
			continue
		}
		kept = append(kept, e)
	}
	if len(kept) == len(mf) {
		return false
	}
	if len(kept) == 0 {
		// An empty list would not do: for custom resources the API server
		// drops it while coercing metadata, and then keeps the live
		// entries. One empty entry is the other way to ask for a reset
		// (isResetManagedFields in k8s.io/apimachinery's fieldmanager).
		kept = []metav1.ManagedFieldsEntry{{}}
	}
	obj.SetManagedFields(kept)
	return true
}

// hasEntriesToDrop tells whether obj has a managedFields entry that
// dropManagedFields removes.
func (r *run) hasEntriesToDrop(obj *unstructured.Unstructured) bool {
	for _, e := range obj.GetManagedFields() {
		if r.dropEntry(e.APIVersion) {
			return true
		}
	}
	return false
}

func (r *run) dropEntry(apiVersion string) bool {
	if r.drop[apiVersion] {
		return true
	}
	group, version, ok := strings.Cut(apiVersion, "/")
	return ok && group == r.crd.Spec.Group && !isServed(r.crd, version)
}
