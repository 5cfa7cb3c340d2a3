package migrate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	svmv1 "k8s.io/api/storagemigration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// Engine chooses who rewrites the objects of a migration.
type Engine string

// Engines.
const (
	// EngineClient: hubspoke reads and writes every object itself (a PUT
	// of each as read), with checkpoints, dry runs, namespace and label
	// scope. The zero value of Options.Engine means it.
	EngineClient Engine = "client"
	// EngineCluster: the cluster's own storage version migrator
	// (kube-controller-manager's storage-version-migrator-controller,
	// GA in Kubernetes 1.37) rewrites them, through a
	// StorageVersionMigration hubspoke creates and follows. The cluster
	// prunes status.storedVersions itself. No dry run, namespace or label
	// scope, and it always prunes.
	EngineCluster Engine = "cluster"
	// EngineAuto: the cluster's migrator when it really runs (it takes up
	// the StorageVersionMigration within Options.ClusterStart) and the
	// run needs nothing only the client engine does; otherwise the
	// client engine.
	EngineAuto Engine = "auto"
)

// ParseEngine reads an engine's name.
func ParseEngine(s string) (Engine, error) {
	switch e := Engine(s); e {
	case EngineAuto, EngineCluster, EngineClient:
		return e, nil
	}
	return "", fmt.Errorf("engine %q: want auto, cluster or client", s)
}

// Defaults of the cluster engine's Options.
const (
	DefaultClusterStart  = 15 * time.Second
	DefaultClusterStuck  = time.Minute
	DefaultClusterSample = 10000
)

// ManagedByLabel marks the StorageVersionMigrations hubspoke creates.
const ManagedByLabel = "app.kubernetes.io/managed-by"

// ClusterError says the cluster's migration failed: its Failed condition.
type ClusterError struct {
	Migration string
	Reason    string
	Message   string
	// Restored: see StuckError.Restored.
	Restored *StoredVersionsRestored
}

func (e *ClusterError) Error() string {
	msg := fmt.Sprintf("storage version migration %s failed (%s): %s", e.Migration, e.Reason, e.Message)
	if e.Restored != nil {
		msg += "; " + e.Restored.String()
	}
	return msg
}

// StuckError says a cluster migration went without progress while the
// cluster's migrator retried an error (a conversion webhook that fails
// gives one it retries for ever), and that hubspoke stopped it: marked
// Failed, so that the migrator gives up and sets the CRD's
// StorageMigrating condition to False. Objects not rewritten yet stay as
// they are stored; nothing is lost.
type StuckError struct {
	Migration string
	// Message is the migration's Running condition: the controller's
	// count and its last transient error.
	Message string
	// For is how long it went without progress.
	For time.Duration
	// Object is the object found failing among a sample read at the
	// storage version, with the API server's error (the webhook's); nil
	// when the sample found none.
	Object *ObjectError
	// Sampled counts the objects read to find it; Remaining those not
	// rewritten since the migration began.
	Sampled, Remaining int
	// Restored, when set, says that the migrator pruned
	// status.storedVersions as the migration failed, and that hubspoke
	// put the versions back.
	Restored *StoredVersionsRestored
}

// StoredVersionsRestored says that Kubernetes' migrator pruned
// status.storedVersions at the end of a migration that failed (1.37 does:
// its runner prunes whenever the CRD's generation did not change, success
// or not), and that hubspoke put back the versions objects may still be
// stored in.
type StoredVersionsRestored struct {
	Pruned, Restored []string
}

func (s *StoredVersionsRestored) String() string {
	return fmt.Sprintf("the cluster's migrator pruned status.storedVersions to %v although the migration failed: hubspoke restored %v", s.Pruned, s.Restored)
}

func (e *StuckError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "storage version migration %s stuck: no object rewritten for %s (%d not rewritten yet)", e.Migration, e.For.Round(time.Second), e.Remaining)
	if e.Message != "" {
		fmt.Fprintf(&b, ", the migrator says %q", e.Message)
	}
	if e.Object != nil {
		fmt.Fprintf(&b, "; the migrator retries a write that fails: %v", e.Object)
	} else {
		fmt.Fprintf(&b, "; none of the %d read at the storage version failed", e.Sampled)
	}
	b.WriteString("; stopped (marked Failed): objects not rewritten stay as stored, nothing lost")
	if e.Restored != nil {
		fmt.Fprintf(&b, "; %s", e.Restored)
	}
	b.WriteString("; fix the cause and run again")
	return b.String()
}

func (e *StuckError) Unwrap() error {
	if e.Object == nil {
		return nil
	}
	return e.Object
}

// errClusterUnavailable: the cluster engine cannot run here; the reason
// says why (auto falls back to the client engine).
type clusterUnavailable struct{ why string }

func (e *clusterUnavailable) Error() string {
	return "the cluster's storage version migrator is not available: " + e.why
}

// clusterOnlyConflicts returns why the cluster engine cannot do what opts
// ask ("" when it can).
func clusterOnlyConflicts(opts Options, resumable bool) string {
	switch {
	case opts.ListOnly || opts.DryRun:
		return "it has no dry run"
	case opts.Namespace != "":
		return "it cannot be limited to a namespace"
	case opts.LabelSelector != "":
		return "it cannot be limited by a label selector"
	case !opts.Prune:
		return "it always prunes status.storedVersions"
	case resumable:
		return "a checkpoint of an interrupted client run is there to resume"
	}
	return ""
}

// migrateCluster runs the migration as a StorageVersionMigration and
// follows it to its end. It returns a *clusterUnavailable, having deleted
// the migration, when the cluster's migrator does not take it up within
// opts.ClusterStart.
func (r *run) migrateCluster(ctx context.Context, res *Result) error {
	crd := r.crd
	svms := r.opts.Client.Resource(SVMResource)

	// Where the objects stand before: how many, and the resourceVersion
	// from which their writes are watched for progress.
	var total int
	var listRV string
	if err := r.retry(ctx, "list", func() error {
		list, err := listClient(r.opts.Client, crd, r.storage, "").List(ctx, metav1.ListOptions{Limit: 1})
		if err != nil {
			return err
		}
		total = len(list.Items)
		if rc := list.GetRemainingItemCount(); rc != nil {
			total += int(*rc)
		}
		listRV = list.GetResourceVersion()
		return nil
	}); err != nil {
		return fmt.Errorf("migrate %s: list at %s: %w", crd.Name, r.storage, err)
	}
	r.mu.Lock()
	r.prog.Total = total
	r.mu.Unlock()

	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": SVMResource.GroupVersion().String(), "kind": "StorageVersionMigration",
		"metadata": map[string]any{
			"generateName": "hubspoke-" + truncate(crd.Spec.Names.Plural, 40) + "-",
			"labels":       map[string]any{ManagedByLabel: "hubspoke"},
			"annotations":  map[string]any{"hubspoke.dev/crd": crd.Name},
		},
		"spec": map[string]any{"resource": map[string]any{"group": crd.Spec.Group, "resource": crd.Spec.Names.Plural}},
	}}
	// Progress: the objects written from now on, watched from the LIST's
	// resourceVersion.
	var counter *writeCounter
	if listRV != "" {
		counter = r.watchWrites(ctx, listRV)
		defer counter.stop()
	}
	var created *unstructured.Unstructured
	err := r.retry(ctx, "create storageversionmigration", func() error {
		var err error
		created, err = svms.Create(ctx, obj, metav1.CreateOptions{FieldManager: FieldManager})
		return err
	})
	switch {
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		return &clusterUnavailable{why: "the API server does not serve storagemigration.k8s.io/v1 (Kubernetes 1.37 does, by default)"}
	case apierrors.IsForbidden(err):
		return &clusterUnavailable{why: "not allowed to create storageversionmigrations: " + err.Error()}
	case err != nil:
		return fmt.Errorf("migrate %s: create storageversionmigration: %w", crd.Name, err)
	}
	name := created.GetName()
	res.Migration = name
	r.log.Info("migrate: cluster migration created", "crd", crd.Name, "migration", name)

	if _, err := r.followMigration(ctx, name, counter); err != nil {
		var se *StuckError
		var ce *ClusterError
		if errors.As(err, &se) || errors.As(err, &ce) || ctx.Err() != nil {
			restored := r.repairStoredVersions(name)
			switch {
			case se != nil:
				se.Restored = restored
			case ce != nil:
				ce.Restored = restored
			case restored != nil:
				r.log.Info("migrate: "+restored.String(), "migration", name)
			}
		}
		return err
	}
	if counter != nil {
		counter.settle(ctx, r.opts.poll)
	}
	r.mu.Lock()
	rewritten, skipped := 0, 0
	if counter != nil {
		rewritten, skipped = counter.counts()
	}
	r.prog.Rewritten = rewritten
	r.prog.Skipped = skipped
	if r.prog.Total < rewritten+skipped {
		r.prog.Total = rewritten + skipped
	}
	r.prog.Unchanged = r.prog.Total - rewritten - skipped
	r.prog.Done = r.prog.Total
	if r.opts.Progress != nil {
		r.opts.Progress(r.prog)
	}
	r.mu.Unlock()
	return nil
}

// followMigration waits for the migration name to end. It gives up on the
// migrator when it has not taken the migration up within
// opts.ClusterStart (and deletes it), and stops a migration stuck for
// opts.ClusterStuck.
func (r *run) followMigration(ctx context.Context, name string, counter *writeCounter) (*svmv1.StorageVersionMigration, error) {
	svms := r.opts.Client.Resource(SVMResource)
	created := time.Now()
	running := false
	probes := 0     // samples read since the last progress
	primed := false // see prime
	lastChange := time.Now()
	lastStatus, lastWrites := "", 0
	tick := time.NewTicker(r.opts.poll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			r.stopMigration(name, "interrupted: hubspoke migrate was stopped")
			return nil, ctx.Err()
		case <-tick.C:
		}
		u, err := svms.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			if class, _ := classify(err); class == classThrottled || class == classTransient {
				continue
			}
			if ctx.Err() != nil {
				continue
			}
			return nil, fmt.Errorf("migrate %s: get storageversionmigration %s: %w", r.opts.CRD, name, err)
		}
		svm, err := svmFromUnstructured(u.Object)
		if err != nil {
			return nil, err
		}
		conds := svm.Status.Conditions
		if c := meta.FindStatusCondition(conds, string(svmv1.MigrationFailed)); c != nil && c.Status == metav1.ConditionTrue {
			return nil, &ClusterError{Migration: name, Reason: c.Reason, Message: c.Message}
		}
		if meta.IsStatusConditionTrue(conds, string(svmv1.MigrationSucceeded)) {
			return svm, nil
		}
		if running && !primed && svm.Status.ResourceVersion != "" {
			primed = true
			r.prime(ctx, svm.Status.ResourceVersion)
		}
		if !running {
			if meta.IsStatusConditionTrue(conds, string(svmv1.MigrationRunning)) {
				running = true
				lastChange = time.Now()
				r.log.Info("migrate: the cluster's migrator took the migration up", "migration", name, "after", time.Since(created))
				continue
			}
			if time.Since(created) < r.opts.ClusterStart {
				continue
			}
			// Not taken up. Another migration of the resource started
			// since the check (the migrator runs one at a time)?
			if active, _, err := ActiveMigrations(ctx, r.opts.Client, r.crd); err == nil {
				for _, a := range active {
					if a.Name != name && meta.IsStatusConditionTrue(a.Status.Conditions, string(svmv1.MigrationRunning)) {
						r.deleteMigration(name)
						return nil, &BusyError{CRD: r.crd.Name, Migration: a.Name}
					}
				}
			}
			r.deleteMigration(name)
			return nil, &clusterUnavailable{why: fmt.Sprintf("it did not take up StorageVersionMigration %s within %s (is kube-controller-manager running its storage-version-migrator-controller, with the garbage collector on, at Kubernetes 1.37 or later?); the migration was deleted", name, r.opts.ClusterStart)}
		}
		// Progress: a new status, or objects written. The migrator's
		// writes of objects already at the storage version are not seen
		// (they change nothing), nor, mostly, its retried errors (it
		// records them with a status update of a copy that conflicts): so
		// a migration without progress is read, and called stuck only when
		// an object it has not rewritten fails to read at the storage
		// version, as the migrator's write of it does.
		status := fmt.Sprint(svm.Status)
		writes := 0
		if counter != nil {
			writes = counter.total()
		}
		if status != lastStatus || writes != lastWrites {
			lastStatus, lastWrites, lastChange, probes = status, writes, time.Now(), 0
			continue
		}
		// Every ClusterStuck without progress, a quick sample; after ten,
		// every object not rewritten, up to ClusterSample.
		still := time.Since(lastChange)
		if still < time.Duration(probes+1)*r.opts.ClusterStuck {
			continue
		}
		probes++
		limit := quickSample
		if probes >= 10 {
			limit = r.opts.ClusterSample
		}
		failing, sampled, remaining := r.findFailing(ctx, svm.Status.ResourceVersion, limit)
		if ctx.Err() != nil {
			continue
		}
		r.log.Info("migrate: the cluster migration makes no progress: objects not rewritten read at the storage version", "migration", name,
			"for", still, "read", sampled, "notRewritten", remaining, "failing", failing)
		if failing == nil && limit < r.opts.ClusterSample {
			continue // the migrator may be writing objects already current
		}
		msg := ""
		if c := meta.FindStatusCondition(conds, string(svmv1.MigrationRunning)); c != nil {
			msg = c.Message
		}
		e := &StuckError{Migration: name, Message: msg, For: still, Object: failing, Sampled: sampled, Remaining: remaining}
		why := "no progress for " + still.Round(time.Second).String()
		if failing != nil {
			why += "; " + failing.Error()
		}
		r.stopMigration(name, why)
		return nil, e
	}
}

// prime rewrites, as the client engine does (a PUT of the object as read),
// the first object not written since the migration's resourceVersion
// whose write re-encodes it (at most primeWrites tried). The cluster's
// migrator starts only once its garbage collector's cache of the resource
// has reached that resourceVersion, which on a resource nobody writes
// takes until the next bookmark of its watch (a minute or more); the
// write, one the migration makes anyway, gets it there at once.
func (r *run) prime(ctx context.Context, since string) {
	sinceRV, err := strconv.ParseUint(since, 10, 64)
	if err != nil {
		return
	}
	list, err := listClient(r.opts.Client, r.crd, r.storage, "").List(ctx, metav1.ListOptions{Limit: primeWrites})
	if err != nil {
		return
	}
	for i := range list.Items {
		obj := &list.Items[i]
		rv, err := strconv.ParseUint(obj.GetResourceVersion(), 10, 64)
		if err != nil || rv > sinceRV {
			return // written since: the cache will see it
		}
		out, err := objectClient(r.opts.Client, r.crd, r.storage, obj.GetNamespace()).Update(ctx, obj, metav1.UpdateOptions{FieldManager: FieldManager})
		if err != nil {
			r.log.Debug("migrate: prime the cluster's migrator", "object", objectKey(obj), "err", err)
			continue
		}
		if out.GetResourceVersion() != obj.GetResourceVersion() {
			return
		}
	}
}

// primeWrites bounds the objects prime tries.
const primeWrites = 20

// quickSample is how many objects not rewritten a migration without
// progress for ClusterStuck reads, to tell stuck from slow.
const quickSample = 100

// findFailing reads the objects not rewritten since the migration began
// (resourceVersion at most since) at the storage version, up to limit of
// them, eight at a time, and returns the first that fails, with the API
// server's error.
func (r *run) findFailing(ctx context.Context, since string, limit int) (failing *ObjectError, sampled, remaining int) {
	sinceRV, _ := strconv.ParseUint(since, 10, 64)
	pages := make(chan page, 1)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		defer close(pages)
		_ = r.listAll(ctx, &Checkpoint{}, pages)
	}()
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		work = make(chan *unstructured.Unstructured)
	)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for obj := range work {
				_, err := objectClient(r.opts.Client, r.crd, r.storage, obj.GetNamespace()).Get(ctx, obj.GetName(), metav1.GetOptions{})
				if err == nil || apierrors.IsNotFound(err) || ctx.Err() != nil {
					continue
				}
				mu.Lock()
				if failing == nil {
					failing = &ObjectError{Namespace: obj.GetNamespace(), Name: obj.GetName(), Err: fmt.Errorf("get at %s: %w", r.storage, err)}
					cancel()
				}
				mu.Unlock()
			}
		}()
	}
	for p := range pages {
		for i := range p.items {
			obj := &p.items[i]
			if rv, err := strconv.ParseUint(obj.GetResourceVersion(), 10, 64); err == nil && sinceRV > 0 && rv > sinceRV {
				continue // written since the migration began: at the storage version
			}
			remaining++
			if sampled >= limit || ctx.Err() != nil {
				continue
			}
			sampled++
			select {
			case work <- obj:
			case <-ctx.Done():
			}
		}
	}
	close(work)
	wg.Wait()
	return failing, sampled, remaining
}

// stopMigration marks the migration Failed, so that the cluster's
// migrator gives up on it and sets the CRD's StorageMigrating condition
// to False (it leaves the condition True for a migration deleted while it
// runs). It works on a context of its own: it also runs once the run's is
// cancelled.
func (r *run) stopMigration(name, why string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	svms := r.opts.Client.Resource(SVMResource)
	for range 5 {
		u, err := svms.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			r.log.Info("migrate: could not stop the cluster migration", "migration", name, "err", err)
			return
		}
		svm, err := svmFromUnstructured(u.Object)
		if err != nil || svmFinished(svm) {
			return
		}
		meta.SetStatusCondition(&svm.Status.Conditions, metav1.Condition{
			Type: string(svmv1.MigrationFailed), Status: metav1.ConditionTrue, Reason: "StoppedByHubspoke",
			Message: "stopped by hubspoke migrate: " + why, ObservedGeneration: svm.Generation,
		})
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(svm)
		if err != nil {
			return
		}
		_, err = svms.UpdateStatus(ctx, &unstructured.Unstructured{Object: m}, metav1.UpdateOptions{FieldManager: FieldManager})
		if apierrors.IsConflict(err) {
			continue
		}
		if err != nil {
			r.log.Info("migrate: could not stop the cluster migration", "migration", name, "err", err)
		}
		return
	}
}

// repairStoredVersions waits (a bounded time) for the cluster's migrator
// to end the failed migration name (the CRD's StorageMigrating condition
// no longer True for it), then puts back into status.storedVersions the
// versions it held when the run began, if the migrator pruned them:
// Kubernetes 1.37's runner prunes storedVersions at the end of a
// migration whether it succeeded or failed, and objects not rewritten are
// still stored at those versions. It works on a context of its own: it
// also runs once the run's is cancelled.
func (r *run) repairStoredVersions(name string) *StoredVersionsRestored {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		now, err := GetCRD(ctx, r.opts.Client, r.opts.CRD)
		if err != nil {
			break
		}
		if c := migratingCondition(now); c == nil || migrationInMessage(c.Message) != name {
			break
		}
		if realSleep(ctx, r.opts.poll) != nil {
			break
		}
	}
	ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for range 10 {
		now, err := GetCRD(ctx, r.opts.Client, r.opts.CRD)
		if err != nil || now.UID != r.crd.UID {
			return nil
		}
		next := slices.Clone(now.Status.StoredVersions)
		for _, v := range r.crd.Status.StoredVersions {
			if !slices.Contains(next, v) && findVersion(now, v) != nil {
				next = append(next, v)
			}
		}
		if len(next) == len(now.Status.StoredVersions) {
			return nil
		}
		// In the order they had.
		order := func(v string) int {
			if i := slices.Index(r.crd.Status.StoredVersions, v); i >= 0 {
				return i
			}
			return len(r.crd.Status.StoredVersions)
		}
		slices.SortStableFunc(next, func(a, b string) int { return order(a) - order(b) })
		fixed := now.DeepCopy()
		fixed.Status.StoredVersions = next
		u, err := toUnstructured(fixed)
		if err != nil {
			return nil
		}
		_, err = r.opts.Client.Resource(CRDResource).UpdateStatus(ctx, u, metav1.UpdateOptions{FieldManager: FieldManager})
		if apierrors.IsConflict(err) {
			continue
		}
		if err != nil {
			r.log.Info("migrate: could not restore status.storedVersions", "crd", r.opts.CRD, "want", next, "err", err)
			return nil
		}
		return &StoredVersionsRestored{Pruned: now.Status.StoredVersions, Restored: next}
	}
	return nil
}

// deleteMigration deletes a migration the cluster's migrator never took
// up.
func (r *run) deleteMigration(name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.opts.Client.Resource(SVMResource).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		r.log.Info("migrate: could not delete the cluster migration", "migration", name, "err", err)
	}
}

// finishCluster waits (a bounded time) for the cluster's migrator to set
// the CRD's StorageMigrating condition to False after a migration that
// succeeded: it prunes status.storedVersions then, unless the CRD's spec
// changed during the migration. If it did not prune, Prune is tried with
// the CRD as it was when the run began (it refuses if the generation or
// the storage version changed).
func (r *run) finishCluster(ctx context.Context, res *Result) error {
	deadline := time.Now().Add(30 * time.Second)
	var now *apiextensionsv1.CustomResourceDefinition
	for {
		var err error
		if err = r.retry(ctx, "get crd", func() error {
			now, err = GetCRD(ctx, r.opts.Client, r.opts.CRD)
			return err
		}); err != nil {
			return fmt.Errorf("migrate %s: %w", r.opts.CRD, err)
		}
		if migratingCondition(now) == nil || time.Now().After(deadline) {
			break
		}
		if err := realSleep(ctx, r.opts.poll); err != nil {
			return err
		}
	}
	want := []string{r.storage}
	if slices.Equal(now.Status.StoredVersions, want) {
		res.Pruned, res.StoredVersions = true, want
		dropped := without(r.crd.Status.StoredVersions, r.storage)
		res.PruneMessage = fmt.Sprintf("storedVersions set to [%s] by the cluster's migrator (dropped %v)", r.storage, dropped)
		if len(dropped) == 0 {
			res.Pruned = false
			res.PruneMessage = fmt.Sprintf("storedVersions already [%s]", r.storage)
		}
		return nil
	}
	pr, err := Prune(ctx, r.opts.Client, r.crd)
	if err != nil {
		return fmt.Errorf("migrate %s: %w", r.opts.CRD, err)
	}
	res.Pruned, res.StoredVersions, res.PruneMessage = pr.Pruned, pr.StoredVersions, pr.Message
	return nil
}

// writeCounter counts the objects written (or deleted) at the storage
// version since a resourceVersion, from a watch: each one written is
// stored at the storage version.
type writeCounter struct {
	mu      sync.Mutex
	written map[string]bool
	deleted map[string]bool
	cancel  context.CancelFunc
	done    chan struct{}
}

func (c *writeCounter) counts() (written, deleted int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.written), len(c.deleted)
}

func (c *writeCounter) total() int {
	w, d := c.counts()
	return w + d
}

// settle waits until the watch has reported nothing new for a few polls
// (at most two seconds): the last writes reach the watch after the
// migration reports its end.
func (c *writeCounter) settle(ctx context.Context, poll time.Duration) {
	deadline := time.Now().Add(2 * time.Second)
	last, quiet := c.total(), 0
	for quiet < 3 && time.Now().Before(deadline) && realSleep(ctx, poll) == nil {
		if n := c.total(); n != last {
			last, quiet = n, 0
		} else {
			quiet++
		}
	}
}

func (c *writeCounter) stop() {
	c.cancel()
	<-c.done
}

// watchWrites watches the CRD's objects at the storage version from rv and
// reports each object written as progress.
func (r *run) watchWrites(ctx context.Context, rv string) *writeCounter {
	ctx, cancel := context.WithCancel(ctx)
	c := &writeCounter{written: map[string]bool{}, deleted: map[string]bool{}, cancel: cancel, done: make(chan struct{})}
	start := func() (watch.Interface, error) {
		return listClient(r.opts.Client, r.crd, r.storage, "").Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
	}
	first, firstErr := start()
	go func() {
		defer close(c.done)
		for ctx.Err() == nil {
			w, err := first, firstErr
			if w == nil && err == nil {
				w, err = start()
			}
			first, firstErr = nil, nil
			if err != nil {
				r.log.Debug("migrate: progress watch", "err", err)
				return // progress only
			}
		events:
			for {
				var ev watch.Event
				var ok bool
				select {
				case <-ctx.Done():
					break events
				case ev, ok = <-w.ResultChan():
				}
				if !ok {
					break
				}
				if ev.Type == watch.Error {
					// Too old a resourceVersion, most likely: progress is
					// a nicety, the migration's end is read elsewhere.
					r.log.Debug("migrate: progress watch ended", "event", ev.Object)
					w.Stop()
					return
				}
				u, ok := ev.Object.(*unstructured.Unstructured)
				if !ok {
					continue
				}
				if ev.Type == watch.Bookmark {
					rv = u.GetResourceVersion()
					continue
				}
				rv = u.GetResourceVersion()
				key := objectKey(u)
				c.mu.Lock()
				switch ev.Type {
				case watch.Modified, watch.Added:
					c.written[key] = true
				case watch.Deleted:
					delete(c.written, key)
					c.deleted[key] = true
				}
				written, deleted := len(c.written), len(c.deleted)
				c.mu.Unlock()
				r.mu.Lock()
				r.prog.Rewritten, r.prog.Skipped = written, deleted
				r.prog.Done = written + deleted
				if r.prog.Total < r.prog.Done {
					r.prog.Total = r.prog.Done
				}
				if r.opts.Progress != nil {
					r.opts.Progress(r.prog)
				}
				r.mu.Unlock()
			}
			w.Stop()
		}
	}()
	return c
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

func without(list []string, v string) []string {
	var out []string
	for _, s := range list {
		if s != v {
			out = append(out, s)
		}
	}
	return out
}
