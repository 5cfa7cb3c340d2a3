package migrate

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

var widgetsGR = schema.GroupResource{Group: testGroup, Resource: "widgets"}

func tooMany(seconds int) error {
	return apierrors.NewTooManyRequests("slow down", seconds)
}

func connReset() error {
	return &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
}

func allStoredIn(f *fakeAPI, version string) map[string]string {
	want := map[string]string{}
	for k := range f.storedIn() {
		want[k] = version
	}
	return want
}

func TestMigrate(t *testing.T) {
	type want struct {
		rewritten, unchanged, skipped int
		conflicts, retries            int
		waits                         []time.Duration // exact waits asked by the server; nil: not compared
		pruned                        bool
		err                           string // substring of the error; "" for success
	}
	tests := []struct {
		name string
		// setup adds faults to f (which holds 25 objects in v1alpha1).
		setup func(f *fakeAPI)
		want  want
	}{
		{
			name:  "every object rewritten and storedVersions pruned",
			setup: func(*fakeAPI) {},
			want:  want{rewritten: 25, pruned: true},
		},
		{
			name: "conflict with a concurrent writer is retried after a fresh get",
			setup: func(f *fakeAPI) {
				var once sync.Once
				f.beforeUpdate = func(key string, n int) error {
					if key == "default/w-007" {
						once.Do(func() {
							f.put("default", "w-007", "v1alpha1", map[string]any{"spec": map[string]any{"size": int64(700)}})
						})
					}
					return nil
				}
			},
			want: want{rewritten: 25, conflicts: 1, pruned: true},
		},
		{
			name: "429 honours Retry-After",
			setup: func(f *fakeAPI) {
				var once sync.Once
				f.beforeUpdate = func(key string, n int) error {
					var err error
					if key == "default/w-003" {
						once.Do(func() { err = tooMany(7) })
					}
					return err
				}
			},
			want: want{rewritten: 25, retries: 1, waits: []time.Duration{7 * time.Second}, pruned: true},
		},
		{
			name: "transient network error backs off",
			setup: func(f *fakeAPI) {
				var once sync.Once
				f.beforeUpdate = func(key string, n int) error {
					var err error
					if key == "default/w-011" {
						once.Do(func() { err = connReset() })
					}
					return err
				}
			},
			want: want{rewritten: 25, retries: 1, pruned: true},
		},
		{
			name: "throttled list is retried",
			setup: func(f *fakeAPI) {
				var once sync.Once
				f.beforeList = func(version, cont string) error {
					var err error
					if cont != "" {
						once.Do(func() { err = tooMany(1) })
					}
					return err
				}
			},
			want: want{rewritten: 25, retries: 1, waits: []time.Duration{time.Second}, pruned: true},
		},
		{
			name: "object deleted during the run is skipped",
			setup: func(f *fakeAPI) {
				f.beforeUpdate = func(key string, n int) error {
					if key == "default/w-020" {
						f.mu.Lock()
						delete(f.objs, key)
						f.mu.Unlock()
					}
					return nil
				}
			},
			want: want{rewritten: 24, skipped: 1, pruned: true},
		},
		{
			name: "any other error stops the run naming the object",
			setup: func(f *fakeAPI) {
				f.beforeUpdate = func(key string, n int) error {
					if key == "default/w-015" {
						return apierrors.NewInternalError(errors.New("conversion webhook for example.com/v1alpha1, Kind=Widget failed"))
					}
					return nil
				}
			},
			want: want{err: "object default/w-015: write at v1: Internal error occurred: conversion webhook"},
		},
		{
			name: "retries are bounded",
			setup: func(f *fakeAPI) {
				f.beforeUpdate = func(key string, n int) error {
					if key == "default/w-002" {
						return connReset()
					}
					return nil
				}
			},
			want: want{err: "object default/w-002: giving up after 3 retries"},
		},
		{
			name: "crd spec edited during the run: nothing pruned",
			setup: func(f *fakeAPI) {
				var once sync.Once
				f.beforeUpdate = func(key string, n int) error {
					once.Do(func() {
						f.editCRD(func(c *apiextensionsv1.CustomResourceDefinition) {
							c.Spec.Versions[0].Deprecated = true
							c.Generation++
						})
					})
					return nil
				}
			},
			want: want{rewritten: 25, pruned: false},
		},
		{
			// The cluster's migrator writes its StorageMigrating condition,
			// anyone may label the CRD: its resourceVersion changes, not
			// what is stored where.
			name: "crd status and labels changed during the run: pruned",
			setup: func(f *fakeAPI) {
				var once sync.Once
				f.beforeUpdate = func(key string, n int) error {
					once.Do(func() {
						f.editCRD(func(c *apiextensionsv1.CustomResourceDefinition) {
							c.Labels = map[string]string{"edited": "yes"}
							setCRDCondition(c, apiextensionsv1.CustomResourceDefinitionCondition{Type: StorageMigrating, Status: apiextensionsv1.ConditionFalse, Reason: "MigrationSucceeded"})
						})
					})
					return nil
				}
			},
			want: want{rewritten: 25, pruned: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeAPI("v1", []string{"v1alpha1", "v1"}, "v1alpha1", "v1")
			f.add("default", 25, "v1alpha1")
			before := f.storedIn()
			contentBefore := map[string]any{}
			for k, o := range f.objs {
				contentBefore[k] = o["spec"]
			}
			tt.setup(f)
			sl := &noSleep{}
			res, err := Migrate(context.Background(), Options{
				CRD: "widgets.example.com", Client: f.client(), PageSize: 10, Concurrency: 4, Prune: true,
				Backoff: Backoff{Retries: 3}, sleep: sl.sleep,
			})
			if tt.want.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.want.err) {
					t.Fatalf("Migrate error = %v, want one containing %q", err, tt.want.err)
				}
				var oe *ObjectError
				if !errors.As(err, &oe) {
					t.Errorf("error %T is not an *ObjectError", err)
				}
				if got := f.crd.Status.StoredVersions; len(got) != 2 {
					t.Errorf("storedVersions = %v after a failed run, want both kept", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("Migrate: %v", err)
			}
			got := want{rewritten: res.Rewritten, unchanged: res.Unchanged, skipped: res.Skipped,
				conflicts: res.Conflicts, retries: res.Retries, pruned: res.Pruned}
			wantCmp := tt.want
			if wantCmp.waits != nil {
				got.waits = sl.waits
			}
			if diff := cmp.Diff(wantCmp, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(allStoredIn(f, "v1"), f.storedIn()); diff != "" {
				t.Errorf("stored versions (-want +got):\n%s", diff)
			}
			if res.Pruned {
				if diff := cmp.Diff([]string{"v1"}, f.crd.Status.StoredVersions); diff != "" {
					t.Errorf("storedVersions (-want +got):\n%s", diff)
				}
			} else {
				if !strings.Contains(res.PruneMessage, "changed since the migration began") {
					t.Errorf("PruneMessage = %q, want it to say the crd changed", res.PruneMessage)
				}
				if len(f.crd.Status.StoredVersions) != 2 {
					t.Errorf("storedVersions = %v, want both kept", f.crd.Status.StoredVersions)
				}
			}
			// Nothing lost: every object's spec is what it was or what the
			// concurrent writer wrote.
			for k := range before {
				o, ok := f.objs[k]
				if !ok {
					continue
				}
				want := contentBefore[k]
				if k == "default/w-007" && tt.want.conflicts > 0 {
					want = map[string]any{"size": int64(700)}
				}
				if diff := cmp.Diff(want, o["spec"]); diff != "" {
					t.Errorf("%s spec (-want +got):\n%s", k, diff)
				}
			}
		})
	}
}

func TestMigrateTwiceChangesNothing(t *testing.T) {
	f := newFakeAPI("v1", []string{"v1alpha1", "v1"}, "v1alpha1", "v1")
	f.add("ns", 12, "v1alpha1")
	opts := Options{CRD: "widgets.example.com", Client: f.client(), PageSize: 5}
	if _, err := Migrate(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	res, err := Migrate(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Rewritten != 0 || res.Unchanged != 12 {
		t.Errorf("second run: %d rewritten, %d unchanged; want 0 and 12", res.Rewritten, res.Unchanged)
	}
	for k, n := range f.writes {
		if n != 1 {
			t.Errorf("%s written %d times, want 1", k, n)
		}
	}
}

// TestMigrateDryRun: a dry run never claims a rewrite it cannot see (the
// API server answers a dry-run write the same whether or not the object
// would be re-encoded), counts objects the real run will find current as
// such when storedVersions says every object is, and stores nothing.
func TestMigrateDryRun(t *testing.T) {
	tests := []struct {
		name           string
		storedVersions []string
		listOnly       bool
		want           Progress // of the dry run
		wantReal       Progress // of the real run after it
		wantUpdates    int      // update requests of the dry run
	}{
		{"objects may be stored at v1alpha1", []string{"v1alpha1", "v1"}, false,
			Progress{Total: 7, Done: 7, Accepted: 7}, Progress{Total: 7, Done: 7, Rewritten: 7}, 7},
		{"every object stored at v1", []string{"v1"}, false,
			Progress{Total: 7, Done: 7, Unchanged: 7}, Progress{Total: 7, Done: 7, Unchanged: 7}, 7},
		{"client: list only", []string{"v1alpha1", "v1"}, true,
			Progress{Total: 7, Done: 7, Accepted: 7}, Progress{Total: 7, Done: 7, Rewritten: 7}, 0},
		{"client: list only, every object stored at v1", []string{"v1"}, true,
			Progress{Total: 7, Done: 7, Unchanged: 7}, Progress{Total: 7, Done: 7, Unchanged: 7}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeAPI("v1", tt.storedVersions, "v1alpha1", "v1")
			stored := "v1alpha1"
			if len(tt.storedVersions) == 1 {
				stored = "v1"
			}
			f.add("ns", 7, stored)
			res, err := Migrate(context.Background(), Options{CRD: "widgets.example.com", Client: f.client(), DryRun: !tt.listOnly, ListOnly: tt.listOnly, Prune: true})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, res.Progress); diff != "" || res.Pruned {
				t.Errorf("dry run (-want +got):\n%s\npruned %v", diff, res.Pruned)
			}
			if f.updates != tt.wantUpdates {
				t.Errorf("dry run sent %d updates, want %d", f.updates, tt.wantUpdates)
			}
			if diff := cmp.Diff(allStoredIn(f, stored), f.storedIn()); diff != "" {
				t.Errorf("dry run stored something (-want +got):\n%s", diff)
			}
			res, err = Migrate(context.Background(), Options{CRD: "widgets.example.com", Client: f.client()})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantReal, res.Progress); diff != "" {
				t.Errorf("real run (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMigrateResumesFromCheckpoint(t *testing.T) {
	f := newFakeAPI("v1", []string{"v1alpha1", "v1"}, "v1alpha1", "v1")
	f.add("default", 30, "v1alpha1")
	cpPath := filepath.Join(t.TempDir(), "checkpoint.json")
	fail := true
	f.beforeUpdate = func(key string, n int) error {
		if fail && key == "default/w-024" {
			return apierrors.NewBadRequest("boom")
		}
		return nil
	}
	opts := Options{CRD: "widgets.example.com", Client: f.client(), PageSize: 10, Concurrency: 1, Checkpoint: cpPath, Prune: true}
	if _, err := Migrate(context.Background(), opts); err == nil || !strings.Contains(err.Error(), "default/w-024") {
		t.Fatalf("first run error = %v, want one naming default/w-024", err)
	}
	cp, err := LoadCheckpoint(cpPath)
	if err != nil || cp == nil {
		t.Fatalf("checkpoint after the failed run: %v, %v", cp, err)
	}
	if cp.LastKey != "default/w-019" || cp.Done != 20 || cp.Complete {
		t.Errorf("checkpoint = %+v, want lastKey default/w-019, done 20, not complete", cp)
	}
	fail = false
	res, err := Migrate(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Resumed != 20 || res.Done != 10 || !res.Pruned {
		t.Errorf("resumed run: resumed %d, done %d, pruned %v; want 20, 10, true", res.Resumed, res.Done, res.Pruned)
	}
	for i := range 20 {
		if k := fmt.Sprintf("default/w-%03d", i); f.writes[k] != 1 {
			t.Errorf("%s written %d times, want once", k, f.writes[k])
		}
	}
	if diff := cmp.Diff(allStoredIn(f, "v1"), f.storedIn()); diff != "" {
		t.Errorf("stored versions (-want +got):\n%s", diff)
	}
	if _, err := os.Stat(cpPath); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("checkpoint left after a complete run: %v", err)
	}
}

func TestMigrateCheckpointExpiredContinue(t *testing.T) {
	f := newFakeAPI("v1", []string{"v1alpha1", "v1"}, "v1alpha1", "v1")
	f.add("default", 15, "v1alpha1")
	cpPath := filepath.Join(t.TempDir(), "cp.json")
	cp := &Checkpoint{CRD: "widgets.example.com", UID: "crd-uid", StorageVersion: "v1", CRDResourceVersion: "1", CRDGeneration: 1,
		Continue: "default/w-010", LastKey: "default/w-009", Done: 10}
	if err := cp.Save(cpPath); err != nil {
		t.Fatal(err)
	}
	expired := false
	f.beforeList = func(version, cont string) error {
		if cont == "default/w-010" && !expired {
			expired = true
			return apierrors.NewResourceExpired("The provided continue parameter is too old")
		}
		return nil
	}
	res, err := Migrate(context.Background(), Options{CRD: "widgets.example.com", Client: f.client(), PageSize: 10, Checkpoint: cpPath})
	if err != nil {
		t.Fatal(err)
	}
	if res.Done != 5 || res.Resumed != 10 {
		t.Errorf("done %d resumed %d, want 5 and 10", res.Done, res.Resumed)
	}
	for i := range 10 {
		if k := fmt.Sprintf("default/w-%03d", i); f.writes[k] != 0 {
			t.Errorf("%s written again after resuming", k)
		}
	}
}

func TestMigrateStaleCheckpointStartsOver(t *testing.T) {
	f := newFakeAPI("v1", []string{"v1alpha1", "v1"}, "v1alpha1", "v1")
	f.add("default", 6, "v1alpha1")
	cpPath := filepath.Join(t.TempDir(), "cp.json")
	// Written when the CRD had another resourceVersion (another storage
	// version, maybe): its progress means nothing now.
	cp := &Checkpoint{CRD: "widgets.example.com", UID: "crd-uid", StorageVersion: "v1", CRDResourceVersion: "0", LastKey: "default/w-004", Continue: "default/w-005", Done: 5}
	if err := cp.Save(cpPath); err != nil {
		t.Fatal(err)
	}
	res, err := Migrate(context.Background(), Options{CRD: "widgets.example.com", Client: f.client(), Checkpoint: cpPath})
	if err != nil {
		t.Fatal(err)
	}
	if res.Done != 6 || res.Resumed != 0 {
		t.Errorf("done %d resumed %d, want 6 and 0", res.Done, res.Resumed)
	}
}

func TestMigrateNamesObjectWhenListFails(t *testing.T) {
	f := newFakeAPI("v1", []string{"v1alpha1", "v1"}, "v1alpha1", "v1")
	f.add("default", 8, "v1alpha1")
	webhookFails := apierrors.NewInternalError(errors.New("conversion webhook for example.com/v1alpha1, Kind=Widget failed: bad object"))
	// The list at v1 fails as a whole (the webhook fails on one object);
	// at v1alpha1 it needs no conversion and succeeds.
	f.beforeList = func(version, cont string) error {
		if version == "v1" {
			return webhookFails
		}
		return nil
	}
	f.beforeGet = func(key string) error {
		if key == "default/w-005" {
			return webhookFails
		}
		return nil
	}
	_, err := Migrate(context.Background(), Options{CRD: "widgets.example.com", Client: f.client(), Concurrency: 1, Prune: true})
	var oe *ObjectError
	if !errors.As(err, &oe) || oe.Name != "w-005" || oe.Namespace != "default" {
		t.Fatalf("error = %v, want an *ObjectError naming default/w-005", err)
	}
	if len(f.crd.Status.StoredVersions) != 2 {
		t.Errorf("storedVersions = %v, want both kept", f.crd.Status.StoredVersions)
	}
}

func TestMigrateDropsManagedFieldsOfUnservedVersions(t *testing.T) {
	f := newFakeAPI("v1", []string{"v1alpha1", "v1"}, "v1")
	f.add("default", 2, "v1")
	entry := func(manager, apiVersion string) map[string]any {
		return map[string]any{"manager": manager, "operation": "Apply", "apiVersion": apiVersion, "fieldsType": "FieldsV1", "fieldsV1": map[string]any{"f:spec": map[string]any{}}}
	}
	f.objs["default/w-000"]["metadata"].(map[string]any)["managedFields"] = []any{entry("old", "example.com/v1alpha1"), entry("new", "example.com/v1")}
	f.objs["default/w-001"]["metadata"].(map[string]any)["managedFields"] = []any{entry("new", "example.com/v1")}
	res, err := Migrate(context.Background(), Options{CRD: "widgets.example.com", Client: f.client()})
	if err != nil {
		t.Fatal(err)
	}
	if res.Rewritten != 1 || res.Unchanged != 1 {
		t.Errorf("%d rewritten, %d unchanged; want 1 and 1", res.Rewritten, res.Unchanged)
	}
	for _, k := range []string{"default/w-000", "default/w-001"} {
		mf := f.objs[k]["metadata"].(map[string]any)["managedFields"].([]any)
		if len(mf) != 1 || mf[0].(map[string]any)["manager"] != "new" {
			t.Errorf("%s managedFields = %v, want only the v1 entry", k, mf)
		}
	}
	// When every entry goes, the request asks for a reset with one empty
	// entry (an empty list is dropped by the API server).
	f.objs["default/w-001"]["metadata"].(map[string]any)["managedFields"] = []any{entry("old", "example.com/v1alpha1")}
	if _, err := Migrate(context.Background(), Options{CRD: "widgets.example.com", Client: f.client()}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]any{map[string]any{}}, f.objs["default/w-001"]["metadata"].(map[string]any)["managedFields"]); diff != "" {
		t.Errorf("managedFields sent (-want +got):\n%s", diff)
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want errClass
		wait time.Duration
	}{
		{"conflict", apierrors.NewConflict(widgetsGR, "a", errors.New("x")), classConflict, 0},
		{"not found", apierrors.NewNotFound(widgetsGR, "a"), classNotFound, 0},
		{"429 with Retry-After", tooMany(3), classThrottled, 3 * time.Second},
		{"429 without Retry-After", tooMany(0), classThrottled, 0},
		{"server timeout", apierrors.NewServerTimeout(widgetsGR, "update", 2), classThrottled, 2 * time.Second},
		{"service unavailable", apierrors.NewServiceUnavailable("down"), classThrottled, 0},
		{"connection reset", connReset(), classTransient, 0},
		{"connection refused", &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, classTransient, 0},
		{"invalid", apierrors.NewInvalid(schema.GroupKind{Group: testGroup, Kind: "Widget"}, "a", nil), classFatal, 0},
		{"internal error", apierrors.NewInternalError(errors.New("webhook")), classFatal, 0},
		{"forbidden", apierrors.NewForbidden(widgetsGR, "a", errors.New("no")), classFatal, 0},
		{"canceled", context.Canceled, classFatal, 0},
		{"untrusted certificate", &url.Error{Op: "Get", URL: "https://127.0.0.1:6443/apis", Err: x509.UnknownAuthorityError{}}, classFatal, 0},
		{"certificate for another host", &url.Error{Op: "Get", URL: "https://127.0.0.1:6443/apis", Err: x509.HostnameError{Host: "127.0.0.1"}}, classFatal, 0},
		{"plain error", errors.New("something"), classFatal, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, wait := classify(fmt.Errorf("wrapped: %w", tt.err))
			if got != tt.want || wait != tt.wait {
				t.Errorf("classify = %v, %v; want %v, %v", got, wait, tt.want, tt.wait)
			}
		})
	}
}

func TestBackoffDelay(t *testing.T) {
	b := Backoff{Initial: 100 * time.Millisecond, Max: time.Second}.withDefaults()
	for attempt, base := range []time.Duration{100, 200, 400, 800, 1000, 1000} {
		base *= time.Millisecond
		d := b.delay(attempt)
		if d < base*8/10 || d > base*12/10 {
			t.Errorf("delay(%d) = %v, want %v ±20%%", attempt, d, base)
		}
	}
}

// TestPruneGuard: Prune compares the CRD's generation and storage version
// with those the migration began with, not its resourceVersion: a spec
// change stops it and says what changed; a status or metadata change (the
// cluster's migrator's condition) does not, and a status written between
// its read and its write is read again.
func TestPruneGuard(t *testing.T) {
	tests := []struct {
		name   string
		edit   func(*apiextensionsv1.CustomResourceDefinition)
		race   bool // edit between Prune's read and its write
		pruned bool
		want   string
	}{
		{name: "storage version switched", edit: func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Versions[0].Storage, c.Spec.Versions[1].Storage = true, false
			c.Generation++
		}, want: "storage version v1 then, v1alpha1 now"},
		{name: "spec edited", edit: editShortNames, want: "generation 1 then, 2 now; its spec changed"},
		{name: "caBundle rotated", edit: func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Conversion.Webhook.ClientConfig.CABundle = []byte("new CA")
			c.Generation++
		}, pruned: true, want: "storedVersions set to [v1]"},
		{name: "deleted and created again", edit: func(c *apiextensionsv1.CustomResourceDefinition) { c.UID = "other" }, want: "deleted and created again"},
		{name: "metadata edited", edit: func(c *apiextensionsv1.CustomResourceDefinition) { c.Labels = map[string]string{"a": "b"} }, pruned: true, want: "storedVersions set to [v1] (dropped [v1alpha1])"},
		{name: "condition written by the cluster's migrator", edit: func(c *apiextensionsv1.CustomResourceDefinition) {
			setCRDCondition(c, apiextensionsv1.CustomResourceDefinitionCondition{Type: StorageMigrating, Status: apiextensionsv1.ConditionTrue, Message: "Migration m is running"})
		}, pruned: true, want: "storedVersions set to [v1]"},
		{name: "status written between the read and the write", race: true, edit: func(c *apiextensionsv1.CustomResourceDefinition) {
			setCRDCondition(c, apiextensionsv1.CustomResourceDefinitionCondition{Type: StorageMigrating, Status: apiextensionsv1.ConditionFalse})
		}, pruned: true, want: "storedVersions set to [v1]"},
		{name: "spec edited between the read and the write", race: true, edit: editShortNames, want: "generation 1 then, 2 now"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeAPI("v1", []string{"v1alpha1", "v1"}, "v1alpha1", "v1")
			c := f.client()
			seen, err := GetCRD(context.Background(), c, "widgets.example.com")
			if err != nil {
				t.Fatal(err)
			}
			if tt.race {
				calls := 0
				f.beforeCRD = func() error {
					if calls++; calls == 2 { // Prune's GET was the first
						f.editCRD(tt.edit)
					}
					return nil
				}
			} else {
				f.editCRD(tt.edit)
			}
			pr, err := Prune(context.Background(), c, seen)
			if err != nil {
				t.Fatal(err)
			}
			if pr.Pruned != tt.pruned || !strings.Contains(pr.Message, tt.want) {
				t.Errorf("Prune = %+v, want pruned %v with a message containing %q", pr, tt.pruned, tt.want)
			}
			want := []string{"v1alpha1", "v1"}
			if tt.pruned {
				want = []string{"v1"}
			}
			if diff := cmp.Diff(want, f.crd.Status.StoredVersions); diff != "" {
				t.Errorf("storedVersions (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMigrateUsage(t *testing.T) {
	f := newFakeAPI("v1", nil, "v1")
	f.crd.Spec.Versions[0].Storage = true // two storage versions
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"no client", Options{CRD: "x"}, "no client"},
		{"no crd", Options{Client: f.client()}, "no crd"},
		{"unknown crd", Options{CRD: "gadgets.example.com", Client: f.client()}, "get crd gadgets.example.com"},
		{"two storage versions", Options{CRD: "widgets.example.com", Client: f.client()}, "2 storage versions"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Migrate(context.Background(), tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestMigrateMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	f := newFakeAPI("v1", []string{"v1alpha1", "v1"}, "v1alpha1", "v1")
	f.add("default", 4, "v1alpha1")
	for range 2 { // the second run counts on the same collectors
		if _, err := Migrate(context.Background(), Options{CRD: "widgets.example.com", Client: f.client(), Registerer: reg}); err != nil {
			t.Fatal(err)
		}
	}
	want := `
# HELP hubspoke_migrate_objects_total Objects handled by storage migration, by result.
# TYPE hubspoke_migrate_objects_total counter
hubspoke_migrate_objects_total{result="rewritten"} 4
hubspoke_migrate_objects_total{result="unchanged"} 4
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "hubspoke_migrate_objects_total"); err != nil {
		t.Error(err)
	}
}

// TestMigrateContinueExpiresMidRun: the continue token expires (410 Gone)
// after two pages of this run; the run lists from the start again and must
// neither handle nor count the objects it already did, and its checkpoint
// must count each object once.
func TestMigrateContinueExpiresMidRun(t *testing.T) {
	for _, tt := range []struct {
		name    string
		expired error
	}{
		{"resource expired", apierrors.NewResourceExpired("The provided continue parameter is too old to display a consistent list result.")},
		{"gone", apierrors.NewGone("continue token expired")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeAPI("v1", []string{"v1alpha1", "v1"}, "v1alpha1", "v1")
			f.add("default", 30, "v1alpha1")
			cpPath := filepath.Join(t.TempDir(), "cp.json")
			var expired bool
			f.beforeList = func(version, cont string) error {
				if cont == "default/w-020" && !expired {
					expired = true
					return tt.expired
				}
				return nil
			}
			fail := true
			f.beforeUpdate = func(key string, _ int) error {
				if fail && key == "default/w-025" {
					return apierrors.NewBadRequest("boom")
				}
				return nil
			}
			opts := Options{CRD: "widgets.example.com", Client: f.client(), PageSize: 10, Concurrency: 1, Checkpoint: cpPath, Prune: true}
			res, err := Migrate(context.Background(), opts)
			if err == nil || !strings.Contains(err.Error(), "default/w-025") {
				t.Fatalf("run error = %v, want one naming default/w-025", err)
			}
			if !expired {
				t.Fatal("the continue token never expired: the test tests nothing")
			}
			if res.Done != 25 || res.Rewritten != 25 || res.Unchanged != 0 {
				t.Errorf("first run: done %d, rewritten %d, unchanged %d; want 25, 25, 0", res.Done, res.Rewritten, res.Unchanged)
			}
			cp, err := LoadCheckpoint(cpPath)
			if err != nil || cp == nil {
				t.Fatalf("checkpoint: %v, %v", cp, err)
			}
			if cp.Done != 20 || cp.LastKey != "default/w-019" {
				t.Errorf("checkpoint = %+v, want done 20 after default/w-019", cp)
			}
			fail = false
			res, err = Migrate(context.Background(), opts)
			if err != nil {
				t.Fatal(err)
			}
			if res.Resumed != 20 || res.Done != 10 || res.Rewritten != 5 || res.Unchanged != 5 || res.Total != 30 {
				t.Errorf("second run: resumed %d, done %d, rewritten %d, unchanged %d, total %d; want 20, 10, 5, 5, 30",
					res.Resumed, res.Done, res.Rewritten, res.Unchanged, res.Total)
			}
			for i := range 30 {
				if k := fmt.Sprintf("default/w-%03d", i); f.writes[k] != 1 {
					t.Errorf("%s written %d times, want once", k, f.writes[k])
				}
			}
		})
	}
}

func connRefused() error {
	return &url.Error{Op: "Get", URL: "https://127.0.0.1:1/apis", Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}
}

// TestMigrateConnectionRefused: when nothing listens at the API server's
// address the run fails at once, without the retries (about 24 s) meant
// for a server that answered before; once it has answered, a refused
// connection (a restart) is retried.
func TestMigrateConnectionRefused(t *testing.T) {
	t.Run("never answered: no retry", func(t *testing.T) {
		f := newFakeAPI("v1", []string{"v1alpha1", "v1"}, "v1alpha1", "v1")
		calls := 0
		f.beforeCRD = func() error { calls++; return connRefused() }
		var s noSleep
		opts := Options{CRD: "widgets.example.com", Client: f.client(), Checkpoint: filepath.Join(t.TempDir(), "cp.json")}
		opts.sleep = s.sleep
		res, err := Migrate(context.Background(), opts)
		if err == nil || !strings.Contains(err.Error(), "connection refused: is the API server of this kubeconfig running?") {
			t.Fatalf("error = %v, want a refused connection named", err)
		}
		if calls != 1 || len(s.waits) != 0 {
			t.Errorf("%d requests and waits %v, want one request and no wait", calls, s.waits)
		}
		if res != nil && res.Checkpoint != "" {
			t.Errorf("result claims checkpoint %q", res.Checkpoint)
		}
	})
	t.Run("refused after the first answer: retried", func(t *testing.T) {
		f := newFakeAPI("v1", []string{"v1alpha1", "v1"}, "v1alpha1", "v1")
		f.add("default", 3, "v1alpha1")
		refused := 0
		f.beforeUpdate = func(key string, n int) error {
			if refused < 2 {
				refused++
				return connRefused()
			}
			return nil
		}
		var s noSleep
		opts := Options{CRD: "widgets.example.com", Client: f.client(), Concurrency: 1}
		opts.sleep = s.sleep
		res, err := Migrate(context.Background(), opts)
		if err != nil {
			t.Fatal(err)
		}
		if res.Rewritten != 3 || res.Retries != 2 {
			t.Errorf("rewritten %d, retries %d; want 3 and 2", res.Rewritten, res.Retries)
		}
	})
}

// TestMigrateSaysWhereProgressIs: Result.Checkpoint names the file only
// when it holds progress, so the CLI's "run again to resume" is true.
func TestMigrateSaysWhereProgressIs(t *testing.T) {
	f := newFakeAPI("v1", []string{"v1alpha1", "v1"}, "v1alpha1", "v1")
	f.add("default", 12, "v1alpha1")
	cpPath := filepath.Join(t.TempDir(), "cp.json")
	failOn := "default/w-002"
	f.beforeUpdate = func(key string, n int) error {
		if key == failOn {
			return apierrors.NewBadRequest("boom")
		}
		return nil
	}
	opts := Options{CRD: "widgets.example.com", Client: f.client(), PageSize: 5, Concurrency: 1, Checkpoint: cpPath}
	res, err := Migrate(context.Background(), opts)
	if err == nil || res.Checkpoint != "" {
		t.Fatalf("failed in the first page: error %v, checkpoint %q; want an error and no checkpoint", err, res.Checkpoint)
	}
	if _, err := os.Stat(cpPath); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("checkpoint file after a first page that failed: %v", err)
	}
	failOn = "default/w-007"
	res, err = Migrate(context.Background(), opts)
	if err == nil || res.Checkpoint != cpPath {
		t.Fatalf("failed in the second page: error %v, checkpoint %q; want an error and %q", err, res.Checkpoint, cpPath)
	}
	if _, err := os.Stat(cpPath); err != nil {
		t.Fatalf("checkpoint named but not written: %v", err)
	}
}

// TestMigrateNamespace: -n limits the run to one namespace, and then
// storedVersions is not pruned.
func TestMigrateNamespace(t *testing.T) {
	f := newFakeAPI("v1", []string{"v1alpha1", "v1"}, "v1alpha1", "v1")
	f.add("a", 3, "v1alpha1")
	f.add("b", 4, "v1alpha1")
	res, err := Migrate(context.Background(), Options{CRD: "widgets.example.com", Client: f.client(), Namespace: "b", Prune: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Rewritten != 4 || res.Pruned || !strings.Contains(res.PruneMessage, "namespace b only") {
		t.Errorf("rewritten %d, pruned %v (%q); want 4, not pruned, saying why", res.Rewritten, res.Pruned, res.PruneMessage)
	}
	for k, v := range f.storedIn() {
		if want := map[bool]string{true: "v1", false: "v1alpha1"}[strings.HasPrefix(k, "b/")]; v != want {
			t.Errorf("%s stored in %s, want %s", k, v, want)
		}
	}
}

// TestMigrateConflictsBounded: an object that conflicts on every write is
// read again and written again at most MaxConflicts times (default
// DefaultMaxConflicts), then the run stops naming it.
func TestMigrateConflictsBounded(t *testing.T) {
	for _, tt := range []struct {
		name         string
		maxConflicts int
		wantWrites   int // writes of the conflicting object sent
	}{
		{"option", 3, 4},
		{"default", 0, DefaultMaxConflicts + 1},
		{"one", 1, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeAPI("v1", []string{"v1alpha1", "v1"}, "v1alpha1", "v1")
			f.add("default", 3, "v1alpha1")
			var mu sync.Mutex
			writes, gets := 0, 0
			f.beforeUpdate = func(key string, n int) error {
				if key != "default/w-001" {
					return nil
				}
				mu.Lock()
				defer mu.Unlock()
				writes++
				return apierrors.NewConflict(widgetsGR, "w-001", errors.New("the object has been modified"))
			}
			f.beforeGet = func(key string) error {
				if key == "default/w-001" {
					mu.Lock()
					gets++
					mu.Unlock()
				}
				return nil
			}
			var s noSleep
			opts := Options{CRD: "widgets.example.com", Client: f.client(), Concurrency: 1, MaxConflicts: tt.maxConflicts, Prune: true}
			opts.sleep = s.sleep
			res, err := Migrate(context.Background(), opts)
			bound := tt.maxConflicts
			if bound == 0 {
				bound = DefaultMaxConflicts
			}
			want := fmt.Sprintf("object default/w-001: still conflicting after %d fresh reads", bound)
			var oe *ObjectError
			if err == nil || !strings.Contains(err.Error(), want) || !errors.As(err, &oe) {
				t.Fatalf("error = %v, want an *ObjectError containing %q", err, want)
			}
			if writes != tt.wantWrites || gets != tt.wantWrites-1 {
				t.Errorf("%d writes and %d fresh reads of the conflicting object, want %d and %d", writes, gets, tt.wantWrites, tt.wantWrites-1)
			}
			if res.Conflicts != tt.wantWrites {
				t.Errorf("Conflicts = %d, want %d", res.Conflicts, tt.wantWrites)
			}
			if len(f.crd.Status.StoredVersions) != 2 {
				t.Errorf("storedVersions %v pruned after a failed run", f.crd.Status.StoredVersions)
			}
		})
	}
}

// TestMigrateCheckpointNotWritable: a checkpoint that cannot be written is
// an error before the first object is written.
func TestMigrateCheckpointNotWritable(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ name, path, want string }{
		{"parent is a file", filepath.Join(file, "cp.json"), "checkpoint " + filepath.Join(file, "cp.json") + " cannot be written"},
		{"missing directory", filepath.Join(dir, "nowhere", "cp.json"), "cannot be written"},
		{"a directory", dir, "checkpoint " + dir + " is a directory"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeAPI("v1", []string{"v1alpha1", "v1"}, "v1alpha1", "v1")
			f.add("default", 5, "v1alpha1")
			_, err := Migrate(context.Background(), Options{CRD: "widgets.example.com", Client: f.client(), Checkpoint: tt.path, Prune: true})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want one containing %q", err, tt.want)
			}
			if f.updates != 0 {
				t.Errorf("%d objects written before the checkpoint was found unwritable", f.updates)
			}
		})
	}
	// A writable one leaves no temporary file behind.
	f := newFakeAPI("v1", []string{"v1alpha1", "v1"}, "v1alpha1", "v1")
	f.add("default", 5, "v1alpha1")
	cpDir := t.TempDir()
	if _, err := Migrate(context.Background(), Options{CRD: "widgets.example.com", Client: f.client(), Checkpoint: filepath.Join(cpDir, "cp.json")}); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(cpDir); len(left) != 0 {
		t.Errorf("files left after a complete run: %v", left)
	}
}

// TestMigrateNamespaceMustExist: -n naming a namespace that does not exist
// (or any namespace, for a cluster-scoped CRD) fails before any write,
// instead of migrating nothing; a client that may not read namespaces
// goes on.
func TestMigrateNamespaceMustExist(t *testing.T) {
	t.Run("missing", func(t *testing.T) {
		f := newFakeAPI("v1", []string{"v1alpha1", "v1"}, "v1alpha1", "v1")
		f.add("a", 3, "v1alpha1")
		_, err := Migrate(context.Background(), Options{CRD: "widgets.example.com", Client: f.client(), Namespace: "nope", Prune: true})
		var ne *NamespaceError
		if !errors.As(err, &ne) || !strings.Contains(err.Error(), "namespace nope not found") {
			t.Fatalf("error = %v, want a *NamespaceError saying nope is not found", err)
		}
		if f.updates != 0 {
			t.Errorf("%d writes", f.updates)
		}
	})
	t.Run("cluster-scoped crd", func(t *testing.T) {
		f := newFakeAPI("v1", []string{"v1alpha1", "v1"}, "v1alpha1", "v1")
		f.crd.Spec.Scope = apiextensionsv1.ClusterScoped
		_, err := Migrate(context.Background(), Options{CRD: "widgets.example.com", Client: f.client(), Namespace: "a"})
		var ne *NamespaceError
		if !errors.As(err, &ne) || !strings.Contains(err.Error(), "is cluster-scoped") {
			t.Fatalf("error = %v, want a *NamespaceError saying the crd is cluster-scoped", err)
		}
	})
	t.Run("not allowed to read namespaces", func(t *testing.T) {
		f := newFakeAPI("v1", []string{"v1alpha1", "v1"}, "v1alpha1", "v1")
		f.add("a", 3, "v1alpha1")
		f.forbidNamespaces = true
		res, err := Migrate(context.Background(), Options{CRD: "widgets.example.com", Client: f.client(), Namespace: "a"})
		if err != nil || res.Rewritten != 3 {
			t.Fatalf("error %v, result %+v; want 3 rewritten", err, res)
		}
	})
}

// TestMigrateLabelSelector: -l limits the run to the selected objects, and
// then storedVersions is not pruned; a checkpoint of another selector is
// not resumed.
func TestMigrateLabelSelector(t *testing.T) {
	f := newFakeAPI("v1", []string{"v1alpha1", "v1"}, "v1alpha1", "v1")
	f.add("a", 6, "v1alpha1")
	for i, k := range []string{"a/w-001", "a/w-003", "a/w-004"} {
		f.objs[k]["metadata"].(map[string]any)["labels"] = map[string]any{"tier": "gold", "i": fmt.Sprint(i)}
	}
	res, err := Migrate(context.Background(), Options{CRD: "widgets.example.com", Client: f.client(), LabelSelector: "tier=gold", Prune: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Rewritten != 3 || res.Pruned || !strings.Contains(res.PruneMessage, "selected by tier=gold only") {
		t.Errorf("rewritten %d, pruned %v (%q); want 3, not pruned, saying why", res.Rewritten, res.Pruned, res.PruneMessage)
	}
	for k, v := range f.storedIn() {
		want := "v1alpha1"
		if k == "a/w-001" || k == "a/w-003" || k == "a/w-004" {
			want = "v1"
		}
		if v != want {
			t.Errorf("%s stored in %s, want %s", k, v, want)
		}
	}
	if _, err := Migrate(context.Background(), Options{CRD: "widgets.example.com", Client: f.client(), LabelSelector: "tier in (gold"}); err == nil || !strings.Contains(err.Error(), `label selector "tier in (gold"`) {
		t.Errorf("bad selector: %v", err)
	}
	// A checkpoint saved by a run of another selector is not resumed.
	cp := filepath.Join(t.TempDir(), "cp.json")
	saved := &Checkpoint{CRD: "widgets.example.com", LabelSelector: "tier=gold", UID: string(f.crd.UID), StorageVersion: "v1",
		CRDResourceVersion: f.crd.ResourceVersion, LastKey: "a/w-005", Done: 3, Complete: true}
	if err := saved.Save(cp); err != nil {
		t.Fatal(err)
	}
	res, err = Migrate(context.Background(), Options{CRD: "widgets.example.com", Client: f.client(), Checkpoint: cp, Prune: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Resumed != 0 || res.Done != 6 || !res.Pruned {
		t.Errorf("resumed %d, done %d, pruned %v; want a whole run, pruned", res.Resumed, res.Done, res.Pruned)
	}
}

// TestMigrateUntrustedCertificate: an API server whose certificate the
// kubeconfig does not trust is not retried as a network error: one
// connection, no wait, and the certificate error in the message.
func TestMigrateUntrustedCertificate(t *testing.T) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("request %s reached a server whose certificate is not trusted", r.URL)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	defer srv.Close()
	dyn, err := dynamic.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	var s noSleep
	opts := Options{CRD: "widgets.example.com", Client: dyn}
	opts.sleep = s.sleep
	_, err = Migrate(context.Background(), opts)
	if err == nil || !strings.Contains(err.Error(), "x509: certificate signed by unknown authority") {
		t.Fatalf("error = %v, want the certificate error", err)
	}
	if n := conns.Load(); n != 1 || len(s.waits) != 0 {
		t.Errorf("%d connections and waits %v, want one connection and no retry", n, s.waits)
	}
}

// editShortNames changes the CRD's spec as another client would.
func editShortNames(c *apiextensionsv1.CustomResourceDefinition) {
	c.Spec.Names.ShortNames = append(c.Spec.Names.ShortNames, "wd")
	c.Generation++
}
