package migrate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TestReadBackupRefusesTamperingAndDuplicates: the header is covered by a
// checksum, and an object that is there twice fails verification, however
// well its own checksum holds.
func TestReadBackupRefusesTamperingAndDuplicates(t *testing.T) {
	f := newFakeAPI("v1", []string{"v1"}, "v1")
	f.add("ns", 3, "v1")
	good := string(backupOf(t, f, ""))
	lines := strings.SplitAfter(good, "\n")
	// The trailer of a file with one object line repeated: count and total
	// made to match, so that only the duplicate is wrong.
	dup := lines[0] + lines[1] + lines[2] + lines[3] + lines[2]
	b, err := ReadBackup(strings.NewReader(good))
	if err != nil {
		t.Fatal(err)
	}
	dupTrailer := fmt.Sprintf(`{"count":4,"header":"%s","sha256":"%s"}`+"\n", b.HeaderSHA256, totalOf(t, b.Objects[0], b.Objects[1], b.Objects[2], b.Objects[1]))
	tests := []struct {
		name, data, want string
	}{
		{"header crd changed", strings.Replace(good, `"crd":"widgets.example.com"`, `"crd":"gadgets.example.com"`, 1), "backup line 1: header checksum"},
		{"header version changed", strings.Replace(good, `"version":"v1"`, `"version":"v1alpha1"`, 1), "the header was altered"},
		{"header definition changed", strings.Replace(good, `"plural":"widgets"`, `"plural":"gadgets"`, 1), "the header was altered"},
		{"trailer without header checksum", strings.Replace(good, `"header":"`+b.HeaderSHA256+`",`, "", 1), "the trailer has no checksum of the header"},
		{"object twice", dup + dupTrailer, "backup line 5: object ns/w-001 again (first on line 3)"},
		{"object without name", lines[0] + `{"sha256":"` + sumOf(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"namespace":"ns"}}`) + `","object":{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"namespace":"ns"}}}` + "\n", "backup line 2: the object has no metadata.name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadBackup(strings.NewReader(tt.data))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ReadBackup error = %v, want one containing %q", err, tt.want)
			}
		})
	}
	// Whitespace is no difference.
	spaced := strings.Replace(good, `"kind":"Backup"`, `"kind": "Backup"`, 1)
	if _, err := ReadBackup(strings.NewReader(spaced)); err != nil {
		t.Errorf("a reformatted header: %v", err)
	}
}

func sumOf(s string) string {
	return fmt.Sprintf("%x", sha256Sum([]byte(s)))
}

func totalOf(t *testing.T, objs ...[]byte) string {
	t.Helper()
	var all []byte
	for _, o := range objs {
		all = append(append(all, o...), '\n')
	}
	return fmt.Sprintf("%x", sha256Sum(all))
}

// gadgetBackup is a well-formed backup whose objects are of another CRD
// (Gadgets of other.example.com) under a header that names
// widgets.example.com.
func gadgetBackup(t *testing.T) *Backup {
	t.Helper()
	f := newFakeAPI("v1", []string{"v1"}, "v1")
	f.add("default", 2, "v1")
	var buf bytes.Buffer
	if _, err := WriteBackup(context.Background(), &buf, BackupOptions{CRD: "widgets.example.com", Client: f.client()}); err != nil {
		t.Fatal(err)
	}
	// The fake serves one CRD under any name: make the file say what it is.
	data := strings.ReplaceAll(buf.String(), `"kind":"Widget"`, `"kind":"Gadget"`)
	data = strings.ReplaceAll(data, `"apiVersion":"example.com/v1"`, `"apiVersion":"other.example.com/v1"`)
	b, err := rewriteBackup(data)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rewriteBackup reads data as a backup whose checksums are recomputed: a
// well-formed file with the content an adversary chose.
func rewriteBackup(data string) (*Backup, error) {
	lines := strings.Split(strings.TrimSpace(data), "\n")
	var objs [][]byte
	var out strings.Builder
	out.WriteString(lines[0] + "\n")
	for _, l := range lines[1 : len(lines)-1] {
		i := strings.Index(l, `"object":`)
		obj := compact([]byte(l[i+len(`"object":`) : len(l)-1]))
		objs = append(objs, obj)
		fmt.Fprintf(&out, `{"sha256":"%x","object":%s}`+"\n", sha256Sum(obj), obj)
	}
	var all []byte
	for _, o := range objs {
		all = append(append(all, o...), '\n')
	}
	fmt.Fprintf(&out, `{"count":%d,"header":"%x","sha256":"%x"}`+"\n", len(objs), sha256Sum(compact([]byte(lines[0]))), sha256Sum(all))
	return ReadBackup(strings.NewReader(out.String()))
}

// TestRestoreValidatesEveryObjectFirst: a backup with any object that
// cannot be restored writes nothing, and the error names every such object
// (and the line it is on).
func TestRestoreValidatesEveryObjectFirst(t *testing.T) {
	setup := func() (*fakeAPI, *Backup) {
		f := newFakeAPI("v1", []string{"v1"}, "v1alpha1", "v1")
		f.add("a", 3, "v1")
		f.add("b", 2, "v1")
		b, err := ReadBackup(bytes.NewReader(backupOf(t, f, "")))
		if err != nil {
			t.Fatal(err)
		}
		for k := range f.objs {
			delete(f.objs, k)
		}
		return f, b
	}
	tests := []struct {
		name   string
		edit   func(f *fakeAPI, b *Backup) *Backup
		opts   RestoreOptions
		want   []string // substrings of the error
		nWrite int      // writes expected (0: none)
	}{
		{
			name: "backup of another crd",
			edit: func(f *fakeAPI, _ *Backup) *Backup { return gadgetBackup(t) },
			opts: RestoreOptions{CRD: "widgets.example.com"},
			want: []string{`2 problems in the 2 objects to restore into crd widgets.example.com, nothing written`,
				`backup line 2: object default/w-000: apiVersion "other.example.com/v1" is not a version of group example.com`},
		},
		{
			name: "namespace missing",
			edit: func(f *fakeAPI, b *Backup) *Backup { delete(f.namespaces, "b"); return b },
			want: []string{"1 problems in the 5 objects", "namespace b of 2 objects not found: create it first"},
		},
		{
			name: "kind of another crd in the same group",
			edit: func(f *fakeAPI, b *Backup) *Backup {
				nb, err := rewriteBackup(strings.Replace(backupText(t, b), `"kind":"Widget","metadata":{"name":"w-002"`, `"kind":"Gadget","metadata":{"name":"w-002"`, 1))
				if err != nil {
					t.Fatal(err)
				}
				return nb
			},
			want: []string{`object a/w-002: kind "Gadget", but crd widgets.example.com holds Widget`},
		},
		{
			name: "version not served, no rules",
			edit: func(f *fakeAPI, b *Backup) *Backup {
				f.crd.Spec.Versions[1].Served = false
				f.crd.Spec.Versions[0].Storage, f.crd.Spec.Versions[1].Storage = true, false
				return b
			},
			want: []string{"5 problems", "object a/w-000: version v1 is not served by crd widgets.example.com (served: v1alpha1): give the conversion rules to convert it"},
		},
		{
			name: "cluster-scoped crd",
			edit: func(f *fakeAPI, b *Backup) *Backup { f.crd.Spec.Scope = apiextensionsv1.ClusterScoped; return b },
			want: []string{"object a/w-000: namespace a, but crd widgets.example.com is cluster-scoped"},
		},
		{
			name: "the API server refuses the sample",
			edit: func(f *fakeAPI, b *Backup) *Backup {
				f.refuseObject = func(u *unstructured.Unstructured) error {
					return apierrors.NewInvalid(schema.GroupKind{Group: testGroup, Kind: "Widget"}, u.GetName(), field.ErrorList{field.Invalid(field.NewPath("spec", "size"), 0, "must be odd")})
				}
				return b
			},
			want: []string{"backup line 2: server dry run of a sample, nothing written: object a/w-000: create:", "must be odd"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, b := setup()
			b = tt.edit(f, b)
			opts := tt.opts
			opts.Client = f.client()
			res, err := Restore(context.Background(), b, opts)
			if err == nil {
				t.Fatalf("restore passed: %+v", res)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nwant it to contain %q", err, w)
				}
			}
			if len(f.writeLog) != 0 {
				t.Errorf("written before the validation failed: %v", f.writeLog)
			}
		})
	}
}

func backupText(t *testing.T, b *Backup) string {
	t.Helper()
	var s strings.Builder
	s.WriteString(`{"apiVersion":"hubspoke.dev/v1alpha1","kind":"Backup","crd":"` + b.Header.CRD + `","version":"` + b.Header.Version + `","created":"2026-12-02T13:00:00Z"}` + "\n")
	for _, o := range b.Objects {
		s.WriteString(`{"sha256":"x","object":` + string(o) + "}\n")
	}
	s.WriteString(`{"count":0}` + "\n")
	return s.String()
}

// TestRestoreSelectorAndProgress: -l restores only the selected objects,
// and progress counts them.
func TestRestoreSelectorAndProgress(t *testing.T) {
	f := newFakeAPI("v1", []string{"v1"}, "v1")
	f.add("a", 4, "v1")
	for _, k := range []string{"a/w-001", "a/w-002"} {
		f.objs[k]["metadata"].(map[string]any)["labels"] = map[string]any{"tier": "gold"}
	}
	b, err := ReadBackup(bytes.NewReader(backupOf(t, f, "")))
	if err != nil {
		t.Fatal(err)
	}
	for k := range f.objs {
		delete(f.objs, k)
	}
	var seen []RestoreProgress
	res, err := Restore(context.Background(), b, RestoreOptions{Client: f.client(), LabelSelector: "tier=gold", Progress: func(p RestoreProgress) { seen = append(seen, p) }})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(RestoreResult{Created: 2}, *res); diff != "" {
		t.Errorf("restore (-want +got):\n%s", diff)
	}
	if len(f.objs) != 2 || f.objs["a/w-001"] == nil || f.objs["a/w-002"] == nil {
		t.Errorf("objects after the restore: %v", f.objs)
	}
	want := []RestoreProgress{{RestoreResult: RestoreResult{Created: 1}, Done: 1, Total: 2}, {RestoreResult: RestoreResult{Created: 2}, Done: 2, Total: 2}}
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Errorf("progress (-want +got):\n%s", diff)
	}
}

// TestChangedSinceComparesContent: after a migration that re-encoded every
// object (every resourceVersion changed) and unserved the backup's
// version, only the object edited since is changed; objects created or
// deleted since are not listed.
func TestChangedSinceComparesContent(t *testing.T) {
	f := newFakeAPI("v1alpha1", []string{"v1alpha1"}, "v1alpha1", "v1")
	for i := range 5 {
		f.put("shop", fmt.Sprintf("w-%03d", i), "v1alpha1", map[string]any{"spec": map[string]any{"replicas": int64(i)}})
	}
	b, err := ReadBackup(bytes.NewReader(backupOf(t, f, "v1alpha1")))
	if err != nil {
		t.Fatal(err)
	}
	// The upgrade: every object converted and written again at v1, then
	// v1alpha1 is no longer served.
	for i := range 5 {
		f.put("shop", fmt.Sprintf("w-%03d", i), "v1", map[string]any{"spec": map[string]any{"size": int64(i)}})
	}
	f.editCRD(func(c *apiextensionsv1.CustomResourceDefinition) {
		c.Spec.Versions[0].Served, c.Spec.Versions[0].Storage, c.Spec.Versions[1].Storage = false, false, true
	})
	opts := CompareOptions{Converter: renameConverter{}}
	changed, err := ChangedSince(context.Background(), f.client(), b, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(changed) != 0 {
		t.Errorf("changed after a migration alone: %v, want none", changed)
	}
	// One real edit, one object deleted, one created.
	f.put("shop", "w-003", "v1", map[string]any{"spec": map[string]any{"size": int64(42)}})
	delete(f.objs, "shop/w-001")
	f.put("shop", "w-100", "v1", map[string]any{"spec": map[string]any{"size": int64(1)}})
	changed, err = ChangedSince(context.Background(), f.client(), b, opts)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]Changed{{Key: "shop/w-003", Pointers: []string{"/spec/replicas"}}}, changed); diff != "" {
		t.Errorf("changed (-want +got):\n%s", diff)
	}
	// Without a way to convert, an unserved version cannot be compared:
	// an error says what to give, not every object "changed".
	if _, err := ChangedSince(context.Background(), f.client(), b, CompareOptions{}); err == nil || !strings.Contains(err.Error(), "no longer serves v1alpha1, the version of the backup: give the conversion rules") {
		t.Errorf("without a converter: %v", err)
	}
	// Through the webhook (a Prober) instead of rules: the same answer.
	changed, err = ChangedSince(context.Background(), f.client(), b, CompareOptions{Prober: &fakeProber{}})
	if err != nil || len(changed) != 1 || changed[0].Key != "shop/w-003" {
		t.Errorf("through a prober: %v, %v", changed, err)
	}
}

// TestPlanRefusesBeforeTheFirstChange: a rollback given a backup of
// another CRD fails its restore step's gate, which depends on no earlier
// step: Execute changes nothing (no storage switch, no migration, no
// prune) and says so.
func TestPlanRefusesBeforeTheFirstChange(t *testing.T) {
	f := newFakeAPI("v1", []string{"v1alpha1", "v1"}, "v1alpha1", "v1")
	f.add("default", 4, "v1")
	generation, rv := f.crd.Generation, f.crd.ResourceVersion
	for _, tt := range []struct {
		name   string
		backup *Backup
		want   string
	}{
		{"backup of another crd", func() *Backup { b := gadgetBackup(t); b.Header.CRD = "gadgets.other.example.com"; return b }(), "the backup is of crd gadgets.other.example.com, not widgets.example.com"},
		{"backup naming this crd, objects of another", gadgetBackup(t), "every object of the backup can be restored: 2 problems in the 2 objects to restore"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			plan, err := PlanRollback(context.Background(), "widgets.example.com", "v1alpha1", PlanOptions{Client: f.client(), Prober: &fakeProber{}, Backup: tt.backup, OverwriteChanged: true, Settle: time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			err = plan.Execute(context.Background(), &out)
			var se *StepError
			if !errors.As(err, &se) || !se.BeforeStart || se.Step != 6 || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "not started, nothing changed: a gate of step 6") {
				t.Fatalf("Execute = %v, want a *StepError before the start at step 6 containing %q", err, tt.want)
			}
			if out.Len() != 0 {
				t.Errorf("steps reported although none ran:\n%s", out.String())
			}
			if f.crd.Generation != generation || f.crd.ResourceVersion != rv || f.updates != 0 || len(f.writeLog) != 0 {
				t.Errorf("the cluster changed: generation %d->%d, resourceVersion %s->%s, %d object updates", generation, f.crd.Generation, rv, f.crd.ResourceVersion, f.updates)
			}
		})
	}
}

// TestPlanGateShowsReasons: a failing check lists its findings under the
// gate, in the plan and in the error of Execute.
func TestPlanGateShowsReasons(t *testing.T) {
	f := newFakeAPI("v1alpha1", []string{"v1alpha1"}, "v1alpha1")
	f.add("default", 2, "v1alpha1")
	target := f.crd.DeepCopy()
	target.Spec.Versions[1].Served, target.Spec.Versions[1].Storage, target.Spec.Versions[0].Storage = true, true, false
	var checked []string
	var findings []string
	for i := range 25 {
		findings = append(findings, fmt.Sprintf("rules.yaml:%d: finding %d at /spec/f%d", i+1, i, i))
	}
	opts := PlanOptions{Client: f.client(), Prober: &fakeProber{}, Settle: time.Millisecond,
		Check: func(_ context.Context, crd *apiextensionsv1.CustomResourceDefinition) error {
			checked = versionNames(crd)
			return &GateError{Summary: "hubspoke check: 25 errors", Reasons: findings}
		}}
	plan, err := PlanUpgrade(context.Background(), target, opts)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"v1alpha1", "v1"}, checked); diff != "" {
		t.Errorf("versions of the crd checked (-want +got):\n%s", diff)
	}
	var text bytes.Buffer
	if err := plan.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"[fail] hubspoke check passes for the crd the upgrade serves: hubspoke check: 25 errors\n       - rules.yaml:1: finding 0 at /spec/f0\n", "       - rules.yaml:20: finding 19 at /spec/f19\n       - and 5 more\n"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("plan text:\n%s\nwant it to contain %q", text.String(), want)
		}
	}
	err = plan.Execute(context.Background(), &text)
	var se *StepError
	if !errors.As(err, &se) || len(se.Gates) != 1 || len(se.Gates[0].Reasons) != MaxReasons+1 {
		t.Fatalf("Execute = %v, want the check gate with its reasons", err)
	}
}
