package sandboxcmd

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/hubspoke/hubspoke/migrate"
)

// extraSteps are the demo's steps after the final verification: backup,
// storage migration with storedVersions clean-up, retiring the old version,
// and the rollback path.
func (d *demo) extraSteps() []struct {
	title string
	run   func(context.Context) error
} {
	return []struct {
		title string
		run   func(context.Context) error
	}{
		{"backup, then migrate every object to v1 and prune storedVersions", d.stepMigrate},
		{"v1alpha1 no longer served", d.stepUnserve},
		{"rollback: plan rollback --to v1alpha1, executed step by step, checked against the backup", d.stepRollback},
	}
}

func (d *demo) stepMigrate(ctx context.Context) error {
	var buf bytes.Buffer
	b, err := migrate.WriteBackup(ctx, &buf, migrate.BackupOptions{CRD: widgetCRD, Client: d.dyn})
	if err != nil {
		return err
	}
	if b.Count != 4 {
		return d.fail("backup holds %d objects, want 4", b.Count)
	}
	d.backup = buf.Bytes()
	d.ok("backup: %d objects at %s, sha256 %s…", b.Count, b.Version, b.SHA256[:12])
	res, err := migrate.Migrate(ctx, migrate.Options{CRD: widgetCRD, Client: d.dyn, Prune: true})
	if err != nil {
		return err
	}
	if res.Done != 4 || res.Rewritten+res.Unchanged != 4 {
		return d.fail("migration handled %d objects (%d rewritten, %d unchanged), want 4", res.Done, res.Rewritten, res.Unchanged)
	}
	d.ok("migrated: %d objects re-encoded at %s (%d already were), %d conflicts retried", res.Rewritten, res.StorageVersion, res.Unchanged, res.Conflicts)
	if !res.Pruned {
		return d.fail("storedVersions not pruned: %s", res.PruneMessage)
	}
	return d.expectStoredVersions(ctx, "v1")
}

func (d *demo) stepUnserve(ctx context.Context) error {
	if err := d.updateCRD(ctx, func(crd *apiextensionsCRD) {
		for i := range crd.Spec.Versions {
			if crd.Spec.Versions[i].Name == "v1alpha1" {
				crd.Spec.Versions[i].Served = false
			}
		}
	}); err != nil {
		return err
	}
	for {
		_, err := d.dyn.Resource(v1alpha1).Namespace(demoNamespace).Get(ctx, "alpha", metav1.GetOptions{})
		if errors.IsNotFound(err) {
			break
		}
		select {
		case <-ctx.Done():
			return d.fail("v1alpha1 is still served: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	d.ok("reads through v1alpha1 now answer 404 NotFound; nothing is stored in it any more")
	if err := d.expectField(ctx, v1, "alpha", "size", 1); err != nil {
		return err
	}
	d.ok("alpha still reads through v1 (size 1)")
	return nil
}

func (d *demo) stepRollback(ctx context.Context) error {
	backup, err := migrate.ReadBackup(bytes.NewReader(d.backup))
	if err != nil {
		return err
	}
	svc := d.crd.Spec.Conversion.Webhook.ClientConfig.Service
	plan, err := migrate.PlanRollback(ctx, widgetCRD, "v1alpha1", migrate.PlanOptions{
		Client: d.dyn,
		// The webhook is probed directly, as through a port-forward: the
		// version to roll back to is not served yet, so the API server
		// cannot be asked to convert to it.
		Prober: &migrate.WebhookProber{URL: "https://" + d.webhookAddr + "/convert", ServerName: svc.Name + "." + svc.Namespace + ".svc"},
		Settle: time.Second,
	})
	if err != nil {
		return err
	}
	var text bytes.Buffer
	if err := plan.WriteText(&text); err != nil {
		return err
	}
	d.ok("planned:\n%s", indent(text.String()))
	var log bytes.Buffer
	if err := plan.Execute(ctx, &log); err != nil {
		fmt.Fprint(d.out, indent(log.String()))
		return err
	}
	d.ok("executed:\n%s", indent(log.String()))
	if err := d.expectStoredVersions(ctx, "v1alpha1"); err != nil {
		return err
	}
	// Every object is as the backup holds it, read through v1alpha1 now.
	for _, raw := range backup.Objects {
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(raw); err != nil {
			return err
		}
		want, _, _ := unstructured.NestedInt64(obj.Object, "spec", "size")
		if err := d.expectField(ctx, v1alpha1, obj.GetName(), "replicas", want); err != nil {
			return err
		}
	}
	d.ok("all %d objects read through v1alpha1 match the backup (replicas = backed-up size)", len(backup.Objects))
	return nil
}

func indent(s string) string {
	s = strings.TrimRight(s, "\n")
	return "        " + strings.ReplaceAll(s, "\n", "\n        ")
}
