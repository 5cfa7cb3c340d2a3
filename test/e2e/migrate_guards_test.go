package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/hubspoke/hubspoke/internal/cli"
	"github.com/hubspoke/hubspoke/migrate"
)

// The guards of migrate, backup and restore against inputs they were not
// written for, on the sandbox, through the command line.

// migCLI runs the command line in this process against the sandbox.
func migCLI(ctx context.Context, stdin string, args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = cli.Main(ctx, append(args, "--kubeconfig", sb.KubeconfigPath()), strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

// forgeBackup returns the backup data with edit applied to the header and
// to every object, and every checksum recomputed: a well-formed backup
// with the content an adversary (or a careless script) chose. edit may
// drop an object (return nil) or duplicate one (return two).
func forgeBackup(t *testing.T, data string, header func(map[string]any), edit func(map[string]any) []map[string]any) string {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(data), "\n")
	var h map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &h); err != nil {
		t.Fatal(err)
	}
	if header != nil {
		header(h)
	}
	hb, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	out.Write(append(hb, '\n'))
	total := sha256.New()
	count := 0
	for _, l := range lines[1 : len(lines)-1] {
		var line struct{ Object map[string]any }
		if err := json.Unmarshal([]byte(l), &line); err != nil {
			t.Fatal(err)
		}
		objs := []map[string]any{line.Object}
		if edit != nil {
			objs = edit(line.Object)
		}
		for _, o := range objs {
			ob, err := json.Marshal(o)
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(ob)
			fmt.Fprintf(&out, `{"sha256":"%s","object":%s}`+"\n", hex.EncodeToString(sum[:]), ob)
			total.Write(append(ob, '\n'))
			count++
		}
	}
	hs := sha256.Sum256(hb)
	fmt.Fprintf(&out, `{"count":%d,"header":"%s","sha256":"%s"}`+"\n", count, hex.EncodeToString(hs[:]), hex.EncodeToString(total.Sum(nil)))
	return out.String()
}

func TestRestoreGuardsOnSandbox(t *testing.T) {
	t.Parallel() // its own group, CRD and faults
	e := migSetup(t, "guards", 8)
	ctx := context.Background()
	dir := t.TempDir()
	backup := filepath.Join(dir, "b.jsonl")
	if code, out, errOut := migCLI(ctx, "", "backup", e.name, "--file", backup); code != 0 {
		t.Fatalf("backup: exit %d\n%s%s", code, out, errOut)
	}
	data := mustRead(t, backup)

	// -n naming a namespace that does not exist: a clear error, nothing
	// written, for backup and migrate.
	if code, _, errOut := migCLI(ctx, "", "backup", e.name, "--file", filepath.Join(dir, "nope.jsonl"), "-n", "nope"); code != 1 ||
		errOut != "error: backup "+e.name+": namespace nope not found: no object of crd "+e.name+" can be in it\n" {
		t.Errorf("backup -n nope: exit %d, %q", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "nope.jsonl")); !os.IsNotExist(err) {
		t.Errorf("backup -n nope wrote a file: %v", err)
	}
	if code, _, errOut := migCLI(ctx, "", "migrate", e.name, "-n", "nope", "--checkpoint", "-"); code != 1 ||
		errOut != "error: migrate "+e.name+": namespace nope not found: no object of crd "+e.name+" can be in it\n" {
		t.Errorf("migrate -n nope: exit %d, %q", code, errOut)
	}
	if got := e.storedVersions(); len(got) != 2 {
		t.Errorf("storedVersions %v after migrate -n nope", got)
	}

	// The cluster as a restore would change it: one object deleted (a
	// restore creates it), one edited (a restore updates it).
	if err := e.client("v1").Delete(ctx, "w-00002", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	edited, err := e.client("v1").Get(ctx, "w-00005", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(edited.Object, int64(500), "spec", "size"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.client("v1").Update(ctx, edited, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	before := e.contents("v1")

	group := e.crd.Spec.Group
	tests := []struct {
		name   string
		data   string
		args   []string
		stderr []string
	}{
		{
			name: "objects of another crd",
			data: forgeBackup(t, data, nil, func(o map[string]any) []map[string]any {
				o["apiVersion"] = "plain.example.com/v1"
				return []map[string]any{o}
			}),
			stderr: []string{"8 problems in the 8 objects to restore into crd " + e.name + ", nothing written",
				`backup line 2: object migrate/w-00000: apiVersion "plain.example.com/v1" is not a version of group ` + group},
		},
		{
			name:   "a backup of another crd given by name",
			data:   forgeBackup(t, data, func(h map[string]any) { h["crd"] = "widgets.example.com" }, nil),
			args:   []string{"--crd-name", "widgets.example.com"},
			stderr: []string{"nothing written", `apiVersion "` + group + `/v1" is not a version of group example.com (crd widgets.example.com)`},
		},
		{
			name: "a namespace that does not exist",
			data: forgeBackup(t, data, nil, func(o map[string]any) []map[string]any {
				if o["metadata"].(map[string]any)["name"] == "w-00006" {
					o["metadata"].(map[string]any)["namespace"] = "gone"
				}
				return []map[string]any{o}
			}),
			stderr: []string{"1 problems in the 8 objects", "namespace gone of 1 objects not found: create it first"},
		},
		{
			name: "a version neither served nor converted",
			data: forgeBackup(t, data, nil, func(o map[string]any) []map[string]any {
				o["apiVersion"] = group + "/v9"
				return []map[string]any{o}
			}),
			stderr: []string{"object migrate/w-00000: version v9 is not served by crd " + e.name + " (served: v1alpha1, v1): give the conversion rules to convert it"},
		},
		{
			name: "objects the API server refuses",
			data: forgeBackup(t, data, nil, func(o map[string]any) []map[string]any {
				o["spec"] = map[string]any{"size": int64(-5)}
				return []map[string]any{o}
			}),
			stderr: []string{"server dry run of a sample, nothing written: object migrate/w-00000: update:", "spec.size: Invalid value: -5"},
		},
		{
			name:   "a header altered",
			data:   strings.Replace(data, `"version":"v1"`, `"version":"v1alpha1"`, 1),
			stderr: []string{"<stdin>: backup line 1: header checksum ", "the header was altered"},
		},
		{
			name: "an object twice",
			data: forgeBackup(t, data, nil, func(o map[string]any) []map[string]any {
				if o["metadata"].(map[string]any)["name"] == "w-00003" {
					return []map[string]any{o, o}
				}
				return []map[string]any{o}
			}),
			stderr: []string{"<stdin>: backup line 6: object migrate/w-00003 again (first on line 5)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := migCLI(ctx, tt.data, append([]string{"restore", "-f", "-"}, tt.args...)...)
			if code != 1 {
				t.Errorf("exit %d, want 1\n%s%s", code, out, errOut)
			}
			for _, w := range tt.stderr {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr %q\nwant it to contain %q", errOut, w)
				}
			}
			if strings.Contains(out, "restored:") {
				t.Errorf("stdout claims a restore:\n%s", out)
			}
			assertSameContents(t, before, e.contents("v1"))
		})
	}

	// The backup as taken restores, and a second restore changes nothing.
	if code, out, errOut := migCLI(ctx, data, "restore", "-f", "-", "-o", "json"); code != 0 ||
		!strings.Contains(out, `"created": 1`) || !strings.Contains(out, `"updated": 1`) || !strings.Contains(out, `"unchanged": 6`) {
		t.Errorf("restore: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := migCLI(ctx, data, "restore", "-f", "-"); code != 0 || !strings.Contains(out, "restored: 0 created, 0 updated, 8 unchanged") {
		t.Errorf("second restore: exit %d\n%s%s", code, out, errOut)
	}
}

// TestMigrateInterruptedCLI: Ctrl-C in the middle of a migration ends
// with "interrupted; run again to resume", not "context canceled", and
// running the same command again resumes and completes it.
func TestMigrateInterruptedCLI(t *testing.T) {
	t.Parallel() // its own group, CRD and faults
	e := migSetup(t, "interrupt", 300)
	// Let the API server's watch cache finish converting the objects
	// after the storage switch, so that the held conversion is the
	// migration's.
	waitIdle(t, time.Second, e.faults.converted.Load)
	cp := filepath.Join(t.TempDir(), "cp.json")
	// The client engine's checkpoint is what this tests (auto would first
	// wait --cluster-start for a storage version migrator, or, on a
	// sandbox that runs one, hand it the run).
	args := []string{"migrate", e.name, "--engine", "client", "--page-size", "50", "--concurrency", "4", "--checkpoint", cp, "--progress", "none"}
	reached, release := e.faults.holdOn("w-00150")
	defer release()
	ctx, cancel := context.WithCancel(context.Background())
	type result struct {
		code        int
		out, errOut string
	}
	done := make(chan result, 1)
	go func() {
		code, out, errOut := migCLI(ctx, "", args...)
		done <- result{code, out, errOut}
	}()
	select {
	case <-reached:
	case r := <-done:
		t.Fatalf("the run ended before it reached w-00150: exit %d\n%s%s", r.code, r.out, r.errOut)
	case <-time.After(2 * time.Minute):
		t.Fatal("the migration never converted w-00150")
	}
	cancel() // Ctrl-C
	r := <-done
	release()
	want := "error: interrupted; run again to resume (progress saved in " + cp + ")\n"
	if r.code != 1 || r.errOut != want {
		t.Errorf("interrupted run: exit %d, stderr %q; want 1 and %q", r.code, r.errOut, want)
	}
	if strings.Contains(r.out+r.errOut, "context canceled") {
		t.Errorf("the interrupted run says context canceled:\n%s%s", r.out, r.errOut)
	}
	saved, err := migrate.LoadCheckpoint(cp)
	if err != nil || saved == nil || saved.Done != 150 {
		t.Fatalf("checkpoint %+v, %v; want 150 objects done", saved, err)
	}

	code, out, errOut := migCLI(context.Background(), "", args...)
	if code != 0 || !strings.Contains(out, "300 objects at storage version v1") || !strings.Contains(out, "150 done by an earlier run") {
		t.Fatalf("the run again: exit %d\n%s%s", code, out, errOut)
	}
	if got := e.storedVersions(); !slices.Equal(got, []string{"v1"}) {
		t.Errorf("storedVersions %v, want [v1]", got)
	}
	e.assertAllStoredAt("v1")
}
