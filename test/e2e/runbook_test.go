package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/hubspoke/hubspoke/convert/rules"
	"github.com/hubspoke/hubspoke/review"
	hschema "github.com/hubspoke/hubspoke/schema"
)

// The runbook of docs/migrate.md ("Upgrade: add v2, make it the storage
// version, retire v1"), run as written: its commands are read from the
// docs, and run in a testscript as a user types them (hubspoke is this
// test binary run as the command line, see TestMain; kubectl is the real
// one), with the files of testdata/runbook. Three things are replaced, so
// that the runbook has a CRD and a webhook of its own on the package's
// sandbox: the group example.com (runbook.example.com), the webhook's
// service (runbook-webhook) and the port-forward's address (the sandbox
// webhook's).

const (
	runbookDocs    = "../../docs/migrate.md"
	runbookGroup   = "runbook.example.com"
	runbookService = "runbook-webhook"
	runbookNS      = "shop"
	runbookObjects = 30
	docsWebhookURL = "https://127.0.0.1:9443/convert"
)

// runbookCommands returns the hubspoke commands of the upgrade's numbered
// steps and the concrete rollback command after them, as the docs write
// them.
func runbookCommands(t *testing.T) (upgrade []string, rollback string) {
	t.Helper()
	docs := mustRead(t, runbookDocs)
	section := func(title string) string {
		i := strings.Index(docs, "\n### "+title)
		if i < 0 {
			t.Fatalf("%s has no section %q", runbookDocs, title)
		}
		rest := docs[i+1:]
		if j := strings.Index(rest[4:], "\n### "); j >= 0 {
			rest = rest[:j+4]
		}
		return rest
	}
	span := regexp.MustCompile("`(hubspoke [^`\\[]+)`")
	for _, m := range span.FindAllStringSubmatch(section("Upgrade: add v2, make it the storage version, retire v1"), -1) {
		upgrade = append(upgrade, m[1])
	}
	want := []string{"hubspoke check ", "hubspoke backup ", "hubspoke plan upgrade ", "hubspoke plan upgrade "}
	if len(upgrade) != len(want) {
		t.Fatalf("the upgrade runbook has %d hubspoke commands, want %d (check, backup, plan, plan --execute): %q", len(upgrade), len(want), upgrade)
	}
	for i, w := range want {
		if !strings.HasPrefix(upgrade[i], w) {
			t.Fatalf("step %d of the upgrade runbook is %q, want a command starting %q", i+1, upgrade[i], w)
		}
	}
	if !strings.HasSuffix(upgrade[3], " --execute") || strings.TrimSuffix(upgrade[3], " --execute") != upgrade[2] {
		t.Fatalf("step 4 %q is not step 3 %q with --execute", upgrade[3], upgrade[2])
	}
	for _, m := range span.FindAllStringSubmatch(section("Rollback"), -1) {
		if strings.HasPrefix(m[1], "hubspoke plan rollback ") && strings.Contains(m[1], "before-v2.jsonl") {
			if rollback != "" {
				t.Fatalf("two rollback commands after the upgrade: %q and %q", rollback, m[1])
			}
			rollback = m[1]
		}
	}
	if rollback == "" {
		t.Fatalf("the Rollback section has no command rolling back with before-v2.jsonl")
	}
	return upgrade, rollback
}

// runbookFile is a file of testdata/runbook in the runbook's group and
// service.
func runbookFile(t *testing.T, name string) string {
	t.Helper()
	s := mustRead(t, filepath.Join("testdata/runbook", name))
	s = strings.ReplaceAll(s, "example.com", runbookGroup)
	return strings.ReplaceAll(s, "name: hubspoke-webhook", "name: "+runbookService)
}

// runbookCommand is cmd with the runbook's CRD and webhook address.
func runbookCommand(cmd, webhookURL string) string {
	cmd = strings.ReplaceAll(cmd, "widgets.example.com", "widgets."+runbookGroup)
	return strings.ReplaceAll(cmd, docsWebhookURL, webhookURL)
}

func TestUpgradeRunbook(t *testing.T) {
	t.Parallel() // its own group, namespace and webhook
	upgrade, rollback := runbookCommands(t)
	ctx := context.Background()

	// The webhook of step 1, converting with conversion.yaml.
	conv, err := rules.Load("conversion.yaml", []byte(runbookFile(t, "conversion.yaml")))
	if err != nil {
		t.Fatal(err)
	}
	h, err := review.NewHandler(review.Options{Converters: []review.Converter{conv}})
	if err != nil {
		t.Fatal(err)
	}
	hook, err := sb.ServeWebhook("hubspoke-system", runbookService, h)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hook.Close() })
	webhookURL := "https://" + hook.Addr() + "/convert"

	// The live CRD (crd-v1.yaml) and its objects, stored in v1.
	loaded, err := hschema.Load("crd-v1.yaml", []byte(runbookFile(t, "crd-v1.yaml")))
	if err != nil {
		t.Fatal(err)
	}
	live := loaded.Object
	if _, err := sb.InstallCRD(ctx, live); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := sb.DeleteCRD(context.Background(), live.Name); err != nil {
			t.Error(err)
		}
	})
	if err := sb.EnsureNamespace(ctx, runbookNS); err != nil {
		t.Fatal(err)
	}
	widgets := dyn.Resource(schema.GroupVersionResource{Group: runbookGroup, Version: "v1", Resource: "widgets"}).Namespace(runbookNS)
	for i := range runbookObjects {
		obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": runbookGroup + "/v1", "kind": "Widget",
			"metadata": map[string]any{"name": fmt.Sprintf("w-%03d", i), "namespace": runbookNS}, "spec": map[string]any{"size": int64(i)}}}
		if _, err := widgets.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// The script: the docs' commands, each followed by what the docs say
	// of it; no command prints a raw klog line.
	crd := "widgets." + runbookGroup
	var script strings.Builder
	step := func(comment, cmd string, asserts ...string) {
		fmt.Fprintf(&script, "\n# %s\n%s\n! stderr '^[IWEF]\\d{4} '\n", comment, cmd)
		for _, a := range asserts {
			script.WriteString(a + "\n")
		}
	}
	fmt.Fprintf(&script, "env KUBECONFIG=%s\n", sb.KubeconfigPath())
	step("step 1: check, a warning for the spoke crd-v2.yaml drops", "exec "+runbookCommand(upgrade[0], webhookURL),
		`stdout 'warning rule-versions: spoke v1 is not a version of the CRD'`, `stdout '^ok: 0 errors'`)
	step("step 2: backup", "exec "+runbookCommand(upgrade[1], webhookURL),
		fmt.Sprintf(`stdout '^%s: %d objects at v1 written to before-v2.jsonl'`, regexp.QuoteMeta(crd), runbookObjects))
	step("step 3: the plan, every gate passing", "exec "+runbookCommand(upgrade[2], webhookURL),
		`! stdout '\[(fail|pending)\] (webhook|exactly one|the API server|hubspoke check)'`,
		`stdout '\[pass\] hubspoke check passes for the crd the upgrade serves: versions \[v2 v1\]'`)
	step("step 4: executed", "exec "+runbookCommand(upgrade[3], webhookURL),
		`stdout '^every step done$'`, `stdout 'remove \[v1\]: done'`)
	step("storedVersions after the upgrade", "exec kubectl get crd "+crd+" -o jsonpath={.status.storedVersions}",
		`stdout '^\["v2"\]$'`)
	// Migrated, not edited: the guard finds nothing changed.
	rb := runbookCommand(rollback, webhookURL)
	step("the rollback guard after the upgrade alone", "exec "+rb,
		fmt.Sprintf(`stdout '\[pass\] no object changed since the backup is overwritten: none of the %d objects changed'`, runbookObjects),
		`! stdout '\[fail\]'`)
	step("one real edit", "exec kubectl patch widgets."+runbookGroup+" w-003 -n "+runbookNS+` --type merge -p '{"spec":{"replicas":42}}'`)
	step("the rollback guard names exactly that object", "! exec "+rb,
		fmt.Sprintf(`stdout '^   \[fail\] no object changed since the backup is overwritten: 1 changed since the backup would be overwritten: %s/w-003; allow it explicitly to restore them$'`, runbookNS),
		fmt.Sprintf(`stdout '^       - %s/w-003 \(/spec/size\)$'`, runbookNS))
	step("the rollback, allowed to overwrite it, executed", "exec "+rb+" --overwrite-changed --execute",
		`stdout '^every step done$'`, fmt.Sprintf(`stdout 'restore %d objects from the backup of .*: done \(0 created, 1 updated, %d unchanged'`, runbookObjects, runbookObjects-1))
	step("w-003 as backed up, read at v1", "exec kubectl get widgets.v1."+runbookGroup+" w-003 -n "+runbookNS+" -o jsonpath={.spec.size}",
		`stdout '^3$'`)

	dir := t.TempDir()
	var archive strings.Builder
	archive.WriteString(script.String())
	for _, f := range []string{"crd-v2.yaml", "conversion.yaml"} {
		fmt.Fprintf(&archive, "-- %s --\n%s", f, runbookFile(t, f))
	}
	path := filepath.Join(dir, "runbook.txtar")
	if err := os.WriteFile(path, []byte(archive.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("script:\n%s", script.String())
	testscript.Run(t, testscript.Params{Files: []string{path}, RequireExplicitExec: true})
}
