package migrate

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
)

// renameConverter converts widgets between v1alpha1 (spec.replicas) and v1
// (spec.size), both ways.
type renameConverter struct{}

func (renameConverter) Convert(dst, obj []byte, to string) ([]byte, error) {
	var m map[string]any
	if err := json.Unmarshal(obj, &m); err != nil {
		return nil, err
	}
	spec, _ := m["spec"].(map[string]any)
	from, into := "replicas", "size"
	if to == testGroup+"/v1alpha1" {
		from, into = into, from
	}
	if v, ok := spec[from]; ok && spec != nil {
		spec[into] = v
		delete(spec, from)
	}
	m["apiVersion"] = to
	out, err := json.Marshal(m)
	return append(dst, out...), err
}

func backupOf(t *testing.T, f *fakeAPI, version string) []byte {
	t.Helper()
	var buf bytes.Buffer
	res, err := WriteBackup(context.Background(), &buf, BackupOptions{CRD: "widgets.example.com", Client: f.client(), Version: version, PageSize: 4})
	if err != nil {
		t.Fatal(err)
	}
	if res.Count != len(f.objs) {
		t.Fatalf("backup count %d, want %d", res.Count, len(f.objs))
	}
	return buf.Bytes()
}

func TestBackupRestore(t *testing.T) {
	f := newFakeAPI("v1", []string{"v1"}, "v1alpha1", "v1")
	f.add("a", 5, "v1")
	f.add("b", 4, "v1")
	f.objs["a/w-001"]["status"] = map[string]any{"availableReplicas": int64(3)}
	want := map[string]map[string]any{}
	for k, o := range f.objs {
		want[k] = runtime.DeepCopyJSON(o)
	}
	data := backupOf(t, f, "")
	b, err := ReadBackup(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if b.Header.CRD != "widgets.example.com" || b.Header.Version != "v1" || len(b.Objects) != 9 || backupDefinition(b) == nil {
		t.Errorf("header %+v with %d objects", b.Header, len(b.Objects))
	}

	// Lose two objects and alter a third.
	delete(f.objs, "a/w-000")
	delete(f.objs, "b/w-003")
	f.objs["a/w-002"]["spec"] = map[string]any{"size": int64(99)}
	f.objs["a/w-001"]["status"] = map[string]any{"availableReplicas": int64(0)}

	c := f.client()
	res, err := Restore(context.Background(), b, RestoreOptions{Client: c})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(RestoreResult{Created: 2, Updated: 2, Unchanged: 5}, *res); diff != "" {
		t.Errorf("first restore (-want +got):\n%s", diff)
	}
	res, err = Restore(context.Background(), b, RestoreOptions{Client: c})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(RestoreResult{Unchanged: 9}, *res); diff != "" {
		t.Errorf("second restore (-want +got):\n%s", diff)
	}
	for k, o := range want {
		got := f.objs[k]
		for _, part := range []string{"spec", "status", "kind"} {
			if diff := cmp.Diff(o[part], got[part]); diff != "" {
				t.Errorf("%s %s (-want +got):\n%s", k, part, diff)
			}
		}
	}
}

func TestRestoreConvertsUnservedVersions(t *testing.T) {
	f := newFakeAPI("v1", []string{"v1alpha1", "v1"}, "v1alpha1", "v1")
	f.put("ns", "old", "v1alpha1", map[string]any{"spec": map[string]any{"replicas": int64(3)}})
	data := backupOf(t, f, "v1alpha1")
	b, err := ReadBackup(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	f.crd.Spec.Versions[0].Served = false
	delete(f.objs, "ns/old")
	if _, err := Restore(context.Background(), b, RestoreOptions{Client: f.client()}); err == nil || !strings.Contains(err.Error(), "object ns/old: version v1alpha1 is not served") {
		t.Fatalf("restore without converter: %v", err)
	}
	res, err := Restore(context.Background(), b, RestoreOptions{Client: f.client(), Converter: renameConverter{}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Created != 1 || res.Converted != 1 {
		t.Errorf("restore = %+v, want 1 created and converted", res)
	}
	if diff := cmp.Diff(map[string]any{"size": int64(3)}, f.objs["ns/old"]["spec"]); diff != "" {
		t.Errorf("spec (-want +got):\n%s", diff)
	}
}

func TestReadBackupRejectsDamage(t *testing.T) {
	f := newFakeAPI("v1", []string{"v1"}, "v1")
	f.add("ns", 3, "v1")
	good := string(backupOf(t, f, ""))
	lines := strings.SplitAfter(good, "\n")
	tests := []struct {
		name string
		data string
		want string
	}{
		{"empty", "", "empty file"},
		{"not a backup", `{"apiVersion":"v1","kind":"List"}` + "\n", "line 1: got apiVersion"},
		{"object altered", strings.Replace(good, `"size":1`, `"size":7`, 1), "line 3: checksum"},
		{"object dropped", lines[0] + lines[1] + lines[3] + lines[4], "2 objects, the trailer says 3"},
		{"truncated", lines[0] + lines[1] + lines[2], "no trailer after 2 objects"},
		{"garbage line", lines[0] + "{nope\n" + strings.Join(lines[1:], ""), "line 2"},
		{"data after trailer", good + lines[1], "data after the trailer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadBackup(strings.NewReader(tt.data))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ReadBackup error = %v, want one containing %q", err, tt.want)
			}
		})
	}
	if _, err := ReadBackup(strings.NewReader(good)); err != nil {
		t.Errorf("good backup: %v", err)
	}
}

func FuzzReadBackup(f *testing.F) {
	api := newFakeAPI("v1", []string{"v1"}, "v1")
	api.add("ns", 2, "v1")
	var buf bytes.Buffer
	if _, err := WriteBackup(context.Background(), &buf, BackupOptions{CRD: "widgets.example.com", Client: api.client()}); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add([]byte("{}\n{}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := ReadBackup(bytes.NewReader(data))
		if err != nil {
			return
		}
		// A backup that verifies has as many objects as its trailer says,
		// each a JSON object.
		for i, o := range b.Objects {
			var m map[string]any
			if err := json.Unmarshal(o, &m); err != nil {
				t.Errorf("object %d of a verified backup is not a JSON object: %v", i, err)
			}
		}
	})
}

// TestBackupVersionAndNamespace: --version must be a served version of the
// CRD (the error says which exist), and Namespace limits the backup.
func TestBackupVersionAndNamespace(t *testing.T) {
	f := newFakeAPI("v1", []string{"v1"}, "v1")
	f.add("a", 2, "v1")
	f.add("b", 3, "v1")
	for _, tt := range []struct{ version, want string }{
		{"v9", "v9 is not a version of crd widgets.example.com (versions: v1alpha1, v1)"},
		{"v1alpha1", "v1alpha1 is a version of crd widgets.example.com that is not served (served: v1)"},
	} {
		var buf bytes.Buffer
		_, err := WriteBackup(context.Background(), &buf, BackupOptions{CRD: "widgets.example.com", Client: f.client(), Version: tt.version})
		var ve *VersionError
		if !errors.As(err, &ve) || err.Error() != tt.want {
			t.Errorf("--version %s: error %v, want a VersionError %q", tt.version, err, tt.want)
		}
		if buf.Len() != 0 {
			t.Errorf("--version %s: wrote %d bytes", tt.version, buf.Len())
		}
	}
	var buf bytes.Buffer
	res, err := WriteBackup(context.Background(), &buf, BackupOptions{CRD: "widgets.example.com", Client: f.client(), Namespace: "b"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := ReadBackup(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if res.Count != 3 || len(b.Objects) != 3 {
		t.Errorf("backup of namespace b: %d objects, want 3", res.Count)
	}
	for _, o := range b.Objects {
		if !bytes.Contains(o, []byte(`"namespace":"b"`)) {
			t.Errorf("object %s in a backup of namespace b", o)
		}
	}
}

func sha256Sum(b []byte) [32]byte { return sha256.Sum256(b) }
