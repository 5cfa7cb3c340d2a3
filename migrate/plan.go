package migrate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
)

// GateState is the outcome of one gate.
type GateState string

// Gate states. A pending gate depends on an earlier step of the same
// execution (the migration before the prune).
const (
	GatePass    GateState = "pass"
	GateFail    GateState = "fail"
	GatePending GateState = "pending"
)

// Gate is one condition a step needs, measured on the live cluster.
type Gate struct {
	Name   string    `json:"name"`
	State  GateState `json:"state"`
	Detail string    `json:"detail,omitempty"`
	// Reasons are the findings behind a failure, each naming where (an
	// object, a file:line, a JSON pointer): the first MaxReasons.
	Reasons []string `json:"reasons,omitempty"`
}

// MaxReasons is how many reasons a gate lists.
const MaxReasons = 20

// GateError is an error with the findings that explain it, for a gate to
// list (PlanOptions.Check returns one).
type GateError struct {
	Summary string
	Reasons []string
}

func (e *GateError) Error() string { return e.Summary }

// failGate sets g to fail with err, and err's reasons when it has some.
func failGate(g *Gate, err error) {
	g.State, g.Detail = GateFail, err.Error()
	var ge *GateError
	var re *RestoreError
	switch {
	case errors.As(err, &ge):
		g.Reasons = ge.Reasons
	case errors.As(err, &re):
		g.Detail = fmt.Sprintf("%d problems in the %d objects to restore", len(re.Problems), re.Objects)
		g.Reasons = re.Problems
	}
	if len(g.Reasons) > MaxReasons {
		g.Reasons = append(g.Reasons[:MaxReasons:MaxReasons], fmt.Sprintf("and %d more", len(g.Reasons)-MaxReasons))
	}
}

// Step is one step of a plan.
type Step struct {
	Name string `json:"name"`
	// Done tells that the live state already reflects the step.
	Done  bool   `json:"done"`
	Gates []Gate `json:"gates,omitempty"`
	// Result says what Execute did: "already done", "ok" (a step that
	// only checks), or "done: ..." with what changed.
	Result string `json:"result,omitempty"`

	done  func(live *apiextensionsv1.CustomResourceDefinition) bool
	gates func(ctx context.Context, live *apiextensionsv1.CustomResourceDefinition) []Gate
	run   func(ctx context.Context, live *apiextensionsv1.CustomResourceDefinition) (string, error)
}

// Plan is an ordered list of gated steps.
type Plan struct {
	Kind  string  `json:"kind"` // upgrade or rollback
	CRD   string  `json:"crd"`
	Steps []*Step `json:"steps"`
	// Notes are advice that no step can carry out (e.g. rolling back the
	// webhook's deployment).
	Notes []string `json:"notes,omitempty"`

	client dynamic.Interface
	opts   PlanOptions
	// seen is the CRD as read by the migration step, for the prune step.
	seen *apiextensionsv1.CustomResourceDefinition
}

// PlanOptions configures PlanUpgrade and PlanRollback.
type PlanOptions struct {
	Client dynamic.Interface
	// Prober reaches the conversion webhook directly, so that versions the
	// live CRD does not serve yet can be probed. Nil probes through the
	// API server only (reading a sample object at every served version).
	Prober Prober
	// Check runs hubspoke check with the CRD an upgrade goes through (the
	// target's versions and the live ones it drops: every version objects
	// may be stored in while the webhook converts them); nil makes that
	// gate fail with a message saying how to run it. A *GateError's
	// reasons are listed under the gate.
	Check func(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) error
	// Migrate is the template of the migration step's options (CRD,
	// Client and Prune are set by the plan).
	Migrate Options
	// Backup, for a rollback, is restored after the storage switch; its
	// header's CRD definition also supplies a version removed since.
	Backup *Backup
	// Converter converts backed-up objects of versions no longer served.
	Converter Converter
	// OverwriteChanged lets a rollback restore objects changed since the
	// backup was taken; without it the plan lists them and its first step
	// does not pass.
	OverwriteChanged bool
	// Definition, for a rollback, is a CRD holding the definition of the
	// version to roll back to when the live CRD no longer has it.
	Definition *apiextensionsv1.CustomResourceDefinition
	// Settle is how long to wait after switching the storage version before
	// migrating, so that every API server has seen the switch (default
	// DefaultSettle). An API server that has not yet seen it would write
	// the objects at the old version again.
	Settle time.Duration
}

// DefaultSettle is the default of PlanOptions.Settle.
const DefaultSettle = 5 * time.Second

// StepError tells which step's gate failed or which step failed.
type StepError struct {
	Step  int
	Name  string
	Gates []Gate // the failing gates
	Err   error  // the step's own failure
	// BeforeStart: a gate failed when every gate was measured before the
	// first step, and nothing was changed.
	BeforeStart bool
}

func (e *StepError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("step %d (%s) failed: %v", e.Step, e.Name, e.Err)
	}
	var why []string
	for _, g := range e.Gates {
		why = append(why, g.Name+": "+g.Detail)
	}
	if e.BeforeStart {
		return fmt.Sprintf("not started, nothing changed: a gate of step %d (%s) fails: %s", e.Step, e.Name, strings.Join(why, "; "))
	}
	return fmt.Sprintf("step %d (%s) stopped at its gate: %s", e.Step, e.Name, strings.Join(why, "; "))
}

func (e *StepError) Unwrap() error { return e.Err }

// PlanUpgrade compares the live CRD of target's name with target and
// returns the ordered steps that get from one to the other: webhook
// serving every pair, new versions served (not storage), storage switched,
// objects migrated, storedVersions pruned, old versions no longer served,
// then removed. Gates are measured live now and again by Execute.
func PlanUpgrade(ctx context.Context, target *apiextensionsv1.CustomResourceDefinition, opts PlanOptions) (*Plan, error) {
	live, err := GetCRD(ctx, opts.Client, target.Name)
	if err != nil {
		return nil, fmt.Errorf("plan upgrade: %w", err)
	}
	newStorage, err := storageVersion(target)
	if err != nil {
		return nil, fmt.Errorf("plan upgrade: target: %w", err)
	}
	liveStorage, err := storageVersion(live)
	if err != nil {
		return nil, fmt.Errorf("plan upgrade: live: %w", err)
	}
	p := &Plan{Kind: "upgrade", CRD: target.Name, client: opts.Client, opts: opts}
	var added, removed, unserve []string
	for _, v := range target.Spec.Versions {
		if findVersion(live, v.Name) == nil {
			added = append(added, v.Name)
		}
		if !v.Served && isServed(live, v.Name) {
			unserve = append(unserve, v.Name)
		}
	}
	for _, v := range live.Spec.Versions {
		if findVersion(target, v.Name) == nil {
			removed = append(removed, v.Name)
			if v.Served {
				unserve = append(unserve, v.Name)
			}
		}
	}

	p.Steps = append(p.Steps, &Step{
		Name: "webhook answers every pair of served versions",
		done: func(*apiextensionsv1.CustomResourceDefinition) bool { return false },
		gates: func(ctx context.Context, live *apiextensionsv1.CustomResourceDefinition) []Gate {
			return []Gate{p.probeGate(ctx, live, target)}
		},
	})
	p.Steps = append(p.Steps, &Step{
		Name: fmt.Sprintf("serve the target's versions %v, storage stays %s", servedVersions(target), liveStorage),
		done: func(live *apiextensionsv1.CustomResourceDefinition) bool {
			for _, v := range target.Spec.Versions {
				if v.Served && !isServed(live, v.Name) {
					return false
				}
			}
			return true
		},
		gates: func(ctx context.Context, live *apiextensionsv1.CustomResourceDefinition) []Gate {
			next := serveTarget(live, target, liveStorage)
			serve := func(now *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinition {
				return serveTarget(now, target, liveStorage)
			}
			return []Gate{oneStorageGate(live), p.acceptedGate(ctx, live, serve), p.checkGate(ctx, next), p.probeGate(ctx, live, target)}
		},
		run: func(ctx context.Context, live *apiextensionsv1.CustomResourceDefinition) (string, error) {
			next, err := editCRD(ctx, p.client, live, func(now *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinition {
				return serveTarget(now, target, liveStorage)
			})
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("served %v", servedVersions(next)), nil
		},
	})
	p.addStorageSteps(newStorage)
	if len(unserve) > 0 {
		p.Steps = append(p.Steps, &Step{
			Name: fmt.Sprintf("stop serving %v", unserve),
			done: func(live *apiextensionsv1.CustomResourceDefinition) bool {
				return !slices.ContainsFunc(unserve, func(v string) bool { return isServed(live, v) })
			},
			gates: func(ctx context.Context, live *apiextensionsv1.CustomResourceDefinition) []Gate {
				return []Gate{notStoredGate("no object stored in a version being unserved", live, unserve)}
			},
			run: func(ctx context.Context, live *apiextensionsv1.CustomResourceDefinition) (string, error) {
				_, err := editCRD(ctx, p.client, live, func(next *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinition {
					for i := range next.Spec.Versions {
						if slices.Contains(unserve, next.Spec.Versions[i].Name) {
							next.Spec.Versions[i].Served = false
						}
					}
					return next
				})
				if err != nil {
					return "", err
				}
				// Drop their managedFields entries before they are removed.
				res, err := p.migrate(ctx, unserve)
				if err != nil {
					return "", err
				}
				return fmt.Sprintf("unserved; managedFields of %v cleaned on %d objects", unserve, res.Rewritten), nil
			},
		})
	}
	if len(removed) > 0 {
		p.Steps = append(p.Steps, &Step{
			Name: fmt.Sprintf("remove %v", removed),
			done: func(live *apiextensionsv1.CustomResourceDefinition) bool {
				return !slices.ContainsFunc(removed, func(v string) bool { return findVersion(live, v) != nil })
			},
			gates: func(ctx context.Context, live *apiextensionsv1.CustomResourceDefinition) []Gate {
				return []Gate{notStoredGate("no version removed while still in storedVersions", live, removed)}
			},
			run: func(ctx context.Context, live *apiextensionsv1.CustomResourceDefinition) (string, error) {
				_, err := editCRD(ctx, p.client, live, func(now *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinition {
					next := now.DeepCopy()
					next.Spec = *target.Spec.DeepCopy()
					if next.Spec.Conversion != nil && next.Spec.Conversion.Webhook != nil && next.Spec.Conversion.Webhook.ClientConfig != nil &&
						len(next.Spec.Conversion.Webhook.ClientConfig.CABundle) == 0 && now.Spec.Conversion != nil && now.Spec.Conversion.Webhook != nil &&
						now.Spec.Conversion.Webhook.ClientConfig != nil {
						next.Spec.Conversion.Webhook.ClientConfig.CABundle = now.Spec.Conversion.Webhook.ClientConfig.CABundle
					}
					return next
				})
				if err != nil {
					return "", err
				}
				return "the crd is now the target", nil
			},
		})
	}
	if err := p.measure(ctx); err != nil {
		return nil, err
	}
	return p, nil
}

// PlanRollback returns the steps that make version the storage version of
// the CRD again and leave every object stored in it: serve it again (from
// opts.Definition or the backup's CRD when it was removed), switch storage,
// migrate, prune storedVersions, and restore opts.Backup when given.
func PlanRollback(ctx context.Context, crdName, version string, opts PlanOptions) (*Plan, error) {
	live, err := GetCRD(ctx, opts.Client, crdName)
	if err != nil {
		return nil, fmt.Errorf("plan rollback: %w", err)
	}
	p := &Plan{Kind: "rollback", CRD: crdName, client: opts.Client, opts: opts}
	def := findVersion(live, version)
	if def == nil {
		for _, src := range []*apiextensionsv1.CustomResourceDefinition{opts.Definition, backupDefinition(opts.Backup)} {
			if src != nil && findVersion(src, version) != nil {
				def = findVersion(src, version).DeepCopy()
				break
			}
		}
	}
	if def == nil && !slices.Contains(live.Status.StoredVersions, version) {
		// Defined nowhere, and no object is stored in it.
		return nil, fmt.Errorf("plan rollback: %w", &VersionError{CRD: live, Version: version, Nowhere: true})
	}
	p.Notes = append(p.Notes,
		"if the webhook's code is at fault, roll its deployment back first: the probe gate measures the webhook that answers now",
		"if the webhook is down, objects stored in another version cannot be read: bring it back (docs/migrate.md, \"The webhook is down\")",
	)
	p.Steps = append(p.Steps, &Step{
		Name: "webhook answers every pair of served versions",
		done: func(*apiextensionsv1.CustomResourceDefinition) bool { return false },
		gates: func(ctx context.Context, live *apiextensionsv1.CustomResourceDefinition) []Gate {
			target := live.DeepCopy()
			if v := findVersion(target, version); v != nil {
				v.Served = true
			} else if def != nil {
				d := *def.DeepCopy()
				d.Served, d.Storage = true, false
				target.Spec.Versions = append(target.Spec.Versions, d)
			}
			gates := []Gate{p.probeGate(ctx, live, target)}
			if opts.Backup != nil {
				gates = append(gates, p.overwriteGate(ctx, crdName))
			}
			return gates
		},
	})
	p.Steps = append(p.Steps, &Step{
		Name: fmt.Sprintf("serve %s again", version),
		done: func(live *apiextensionsv1.CustomResourceDefinition) bool { return isServed(live, version) },
		gates: func(ctx context.Context, live *apiextensionsv1.CustomResourceDefinition) []Gate {
			g := Gate{Name: "definition of " + version, State: GatePass, Detail: "in the live crd"}
			switch {
			case findVersion(live, version) != nil:
			case def != nil:
				g.Detail = "from the given crd or the backup"
			default:
				g.State, g.Detail = GateFail, fmt.Sprintf("the live crd no longer defines %s: give a crd file or a backup that does", version)
			}
			return []Gate{g, oneStorageGate(live)}
		},
		run: func(ctx context.Context, live *apiextensionsv1.CustomResourceDefinition) (string, error) {
			_, err := editCRD(ctx, p.client, live, func(next *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinition {
				if v := findVersion(next, version); v != nil {
					v.Served = true
				} else {
					d := *def.DeepCopy()
					d.Served, d.Storage = true, false
					next.Spec.Versions = append(next.Spec.Versions, d)
				}
				return next
			})
			if err != nil {
				return "", err
			}
			return "served " + version, nil
		},
	})
	p.addStorageSteps(version)
	if opts.Backup != nil {
		// A backup taken at a version that the rollback leaves
		// unserved is compared and restored through the rules (or the
		// webhook).
		b := opts.Backup
		p.Steps = append(p.Steps, &Step{
			Name: fmt.Sprintf("restore %d objects from the backup of %s", len(b.Objects), b.Header.Created.Format("2006-01-02 15:04:05Z")),
			done: func(*apiextensionsv1.CustomResourceDefinition) bool { return false },
			gates: func(ctx context.Context, live *apiextensionsv1.CustomResourceDefinition) []Gate {
				g := Gate{Name: "backup verified", State: GatePass, Detail: fmt.Sprintf("%d objects, sha256 %s", len(b.Objects), b.SHA256)}
				if b.Header.CRD != crdName {
					g.State, g.Detail = GateFail, fmt.Sprintf("the backup is of crd %s, not %s", b.Header.CRD, crdName)
					return []Gate{g}
				}
				// Every object, judged against the CRD as the rollback
				// leaves it (version served and the storage version).
				v := Gate{Name: "every object of the backup can be restored", State: GatePass}
				after := rolledBack(live, version, def)
				if items, err := prepareRestore(ctx, p.client, b, after, opts.Converter, "", true); err != nil {
					failGate(&v, err)
				} else {
					v.Detail = fmt.Sprintf("%d objects: group, kind, name, namespace and version checked", len(items))
				}
				return []Gate{g, v}
			},
			run: func(ctx context.Context, live *apiextensionsv1.CustomResourceDefinition) (string, error) {
				res, err := Restore(ctx, b, RestoreOptions{Client: p.client, CRD: crdName, Converter: opts.Converter})
				if err != nil {
					return "", err
				}
				return fmt.Sprintf("%d created, %d updated, %d unchanged, %d converted", res.Created, res.Updated, res.Unchanged, res.Converted), nil
			},
		})
	}
	if err := p.measure(ctx); err != nil {
		return nil, err
	}
	return p, nil
}

// overwriteGate lists the objects changed since the backup, which the
// restore step would overwrite; they block the plan unless
// opts.OverwriteChanged.
func (p *Plan) overwriteGate(ctx context.Context, crdName string) Gate {
	g := Gate{Name: "no object changed since the backup is overwritten", State: GatePass}
	changed, err := ChangedSince(ctx, p.client, p.opts.Backup, CompareOptions{CRD: crdName, Converter: p.opts.Converter, Prober: p.opts.Prober, Definition: p.opts.Definition})
	if err != nil {
		g.State, g.Detail = GateFail, err.Error()
		return g
	}
	if len(changed) == 0 {
		g.Detail = fmt.Sprintf("none of the %d objects changed", len(p.opts.Backup.Objects))
		return g
	}
	var keys []string
	for i, c := range changed {
		if i < MaxReasons {
			keys = append(keys, c.Key)
			g.Reasons = append(g.Reasons, c.String())
		}
	}
	list := strings.Join(keys, ", ")
	if len(changed) > len(keys) {
		list += fmt.Sprintf(" and %d more", len(changed)-len(keys))
	}
	if p.opts.OverwriteChanged {
		g.Detail = fmt.Sprintf("%d changed since the backup will be overwritten (allowed): %s", len(changed), list)
		return g
	}
	g.State = GateFail
	g.Detail = fmt.Sprintf("%d changed since the backup would be overwritten: %s; allow it explicitly to restore them", len(changed), list)
	return g
}

// rolledBack is live once version is served again (from def when live no
// longer defines it) and is the storage version.
func rolledBack(live *apiextensionsv1.CustomResourceDefinition, version string, def *apiextensionsv1.CustomResourceDefinitionVersion) *apiextensionsv1.CustomResourceDefinition {
	after := live.DeepCopy()
	if findVersion(after, version) == nil && def != nil {
		d := *def.DeepCopy()
		after.Spec.Versions = append(after.Spec.Versions, d)
	}
	for i := range after.Spec.Versions {
		v := &after.Spec.Versions[i]
		v.Storage = v.Name == version
		if v.Name == version {
			v.Served = true
		}
	}
	return after
}

func backupDefinition(b *Backup) *apiextensionsv1.CustomResourceDefinition {
	if b == nil || len(b.Header.Definition) == 0 {
		return nil
	}
	var u unstructured.Unstructured
	if err := u.UnmarshalJSON(b.Header.Definition); err != nil {
		return nil
	}
	crd, err := fromUnstructured(&u)
	if err != nil {
		return nil
	}
	return crd
}

// addStorageSteps appends: switch storage to v, migrate, prune.
func (p *Plan) addStorageSteps(v string) {
	p.Steps = append(p.Steps, &Step{
		Name: "switch the storage version to " + v,
		done: func(live *apiextensionsv1.CustomResourceDefinition) bool {
			s, err := storageVersion(live)
			return err == nil && s == v
		},
		gates: func(ctx context.Context, live *apiextensionsv1.CustomResourceDefinition) []Gate {
			g := Gate{Name: v + " served", State: GatePass}
			if !isServed(live, v) {
				g.State, g.Detail = GatePending, v+" is not served yet (an earlier step serves it)"
			}
			return []Gate{g, oneStorageGate(live)}
		},
		run: func(ctx context.Context, live *apiextensionsv1.CustomResourceDefinition) (string, error) {
			_, err := editCRD(ctx, p.client, live, func(next *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinition {
				for i := range next.Spec.Versions {
					next.Spec.Versions[i].Storage = next.Spec.Versions[i].Name == v
				}
				return next
			})
			if err != nil {
				return "", err
			}
			settle := p.opts.Settle
			if settle <= 0 {
				settle = DefaultSettle
			}
			if err := realSleep(ctx, settle); err != nil {
				return "", err
			}
			return fmt.Sprintf("storage: %s (waited %v for every API server to see it)", v, settle), nil
		},
	})
	p.Steps = append(p.Steps, &Step{
		Name: "migrate every object to " + v,
		done: func(live *apiextensionsv1.CustomResourceDefinition) bool {
			return slices.Equal(live.Status.StoredVersions, []string{v})
		},
		gates: func(ctx context.Context, live *apiextensionsv1.CustomResourceDefinition) []Gate {
			return []Gate{storageIsGate(live, v)}
		},
		run: func(ctx context.Context, live *apiextensionsv1.CustomResourceDefinition) (string, error) {
			res, err := p.migrate(ctx, nil)
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("%d objects: %d rewritten, %d already at %s, %d gone", res.Done, res.Rewritten, res.Unchanged, v, res.Skipped), nil
		},
	})
	p.Steps = append(p.Steps, &Step{
		Name: fmt.Sprintf("prune storedVersions to [%s]", v),
		done: func(live *apiextensionsv1.CustomResourceDefinition) bool {
			return slices.Equal(live.Status.StoredVersions, []string{v})
		},
		gates: func(ctx context.Context, live *apiextensionsv1.CustomResourceDefinition) []Gate {
			g := Gate{Name: "every object rewritten at " + v, State: GatePass, Detail: "by the migration step"}
			if p.seen == nil {
				g.State, g.Detail = GatePending, "after the migration step"
			}
			return []Gate{storageIsGate(live, v), g}
		},
		run: func(ctx context.Context, live *apiextensionsv1.CustomResourceDefinition) (string, error) {
			pr, err := Prune(ctx, p.client, p.seen)
			if err != nil {
				return "", err
			}
			if !pr.Pruned {
				return "", errors.New(pr.Message)
			}
			return pr.Message, nil
		},
	})
}

func (p *Plan) migrate(ctx context.Context, drop []string) (*Result, error) {
	o := p.opts.Migrate
	o.CRD, o.Client, o.Prune, o.DryRun = p.CRD, p.client, false, false
	o.DropManagedFields = append(slices.Clone(o.DropManagedFields), drop...)
	res, err := Migrate(ctx, o)
	if err != nil {
		return nil, err
	}
	seen, err := GetCRD(ctx, p.client, p.CRD)
	if err != nil {
		return nil, err
	}
	// Its status may change (the cluster's migrator's condition); its
	// spec and storage version must not have.
	if s, _ := storageVersion(seen); seen.Generation != res.CRDGeneration || s != res.StorageVersion {
		p.seen = nil
		return nil, fmt.Errorf("crd %s changed during the migration (generation %d then, %d now; storage version %s then, %s now): run the plan again", p.CRD, res.CRDGeneration, seen.Generation, res.StorageVersion, s)
	}
	p.seen = seen
	return res, nil
}

// measure evaluates every step against the live CRD.
func (p *Plan) measure(ctx context.Context) error {
	live, err := GetCRD(ctx, p.client, p.CRD)
	if err != nil {
		return fmt.Errorf("plan: %w", err)
	}
	for _, s := range p.Steps {
		s.Done = s.done(live)
		s.Gates = nil
		if !s.Done {
			s.Gates = p.stepGates(ctx, s, live)
		}
	}
	return nil
}

// stepGates measures a step's gates; a step that changes the cluster also
// has the gate that no storage migration is under way.
func (p *Plan) stepGates(ctx context.Context, s *Step, live *apiextensionsv1.CustomResourceDefinition) []Gate {
	gates := s.gates(ctx, live)
	if s.run != nil {
		gates = append(gates, p.notBusyGate(ctx, live))
	}
	return gates
}

// notBusyGate fails while a storage migration of the CRD's resource is
// under way: a StorageVersionMigration not finished, or the CRD's
// StorageMigrating condition (Kubernetes' own migrator, 1.37).
func (p *Plan) notBusyGate(ctx context.Context, live *apiextensionsv1.CustomResourceDefinition) Gate {
	g := Gate{Name: "no storage migration under way", State: GatePass}
	note, err := checkNotBusy(ctx, p.client, live)
	switch {
	case err != nil:
		failGate(&g, err)
	case note != "":
		g.Detail = note
	}
	return g
}

// Execute runs the steps in order. First, before anything changes, every
// gate of every step not done yet is measured: if one fails (a gate that
// does not depend on an earlier step), nothing is run and the *StepError
// says so (BeforeStart). Then each step already done is skipped; the
// others have their gates measured live again once an earlier step has
// changed the cluster, and the run stops at the first step with a gate
// that does not pass (a pending one included). Each step is reported to w.
func (p *Plan) Execute(ctx context.Context, w io.Writer) error {
	if err := p.measure(ctx); err != nil {
		return err
	}
	for i, s := range p.Steps {
		s.Result = ""
		if failing := gatesIn(s.Gates, GateFail); !s.Done && len(failing) > 0 {
			return &StepError{Step: i + 1, Name: s.Name, Gates: failing, BeforeStart: true}
		}
	}
	changed := false
	for i, s := range p.Steps {
		live, err := GetCRD(ctx, p.client, p.CRD)
		if err != nil {
			return fmt.Errorf("plan: %w", err)
		}
		if s.done(live) {
			s.Done, s.Result = true, "already done"
			fmt.Fprintf(w, "%d. %s: already done\n", i+1, s.Name)
			continue
		}
		if changed {
			s.Gates = p.stepGates(ctx, s, live)
		}
		if failing := append(gatesIn(s.Gates, GateFail), gatesIn(s.Gates, GatePending)...); len(failing) > 0 {
			return &StepError{Step: i + 1, Name: s.Name, Gates: failing}
		}
		if s.run == nil {
			s.Result = "ok"
			fmt.Fprintf(w, "%d. %s: ok\n", i+1, s.Name)
			continue
		}
		changed = true
		msg, err := s.run(ctx, live)
		if err != nil {
			return &StepError{Step: i + 1, Name: s.Name, Err: err}
		}
		s.Done, s.Result = true, "done: "+msg
		fmt.Fprintf(w, "%d. %s: done (%s)\n", i+1, s.Name, msg)
	}
	return nil
}

// gatesIn returns the gates in state.
func gatesIn(gates []Gate, state GateState) []Gate {
	var out []Gate
	for _, g := range gates {
		if g.State == state {
			out = append(out, g)
		}
	}
	return out
}

// WriteText prints the plan, one step per line with its gates below.
func (p *Plan) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s plan for %s: %d steps\n", p.Kind, p.CRD, len(p.Steps))
	for i, s := range p.Steps {
		state := ""
		if s.Done {
			state = " [done]"
		}
		fmt.Fprintf(&b, "%d. %s%s\n", i+1, s.Name, state)
		for _, g := range s.Gates {
			fmt.Fprintf(&b, "   [%s] %s", g.State, g.Name)
			if g.Detail != "" {
				fmt.Fprintf(&b, ": %s", g.Detail)
			}
			b.WriteByte('\n')
			for _, r := range g.Reasons {
				fmt.Fprintf(&b, "       - %s\n", r)
			}
		}
	}
	for _, n := range p.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Blocked returns the first step not done whose gates do not all pass, or
// nil when every gate passes (pending gates count as blocking only when no
// earlier step could resolve them).
func (p *Plan) Blocked() *Step {
	for _, s := range p.Steps {
		if s.Done {
			continue
		}
		for _, g := range s.Gates {
			if g.State == GateFail {
				return s
			}
		}
	}
	return nil
}

// serveTarget is the CRD the step "serve the target's versions" writes:
// live with target's conversion and versions, every version live serves
// still served, live's versions target drops still there, and storage
// still liveStorage.
func serveTarget(live, target *apiextensionsv1.CustomResourceDefinition, liveStorage string) *apiextensionsv1.CustomResourceDefinition {
	next := live.DeepCopy()
	next.Spec.Conversion = target.Spec.Conversion.DeepCopy()
	if next.Spec.Conversion != nil && next.Spec.Conversion.Webhook != nil && next.Spec.Conversion.Webhook.ClientConfig != nil &&
		len(next.Spec.Conversion.Webhook.ClientConfig.CABundle) == 0 && live.Spec.Conversion != nil && live.Spec.Conversion.Webhook != nil &&
		live.Spec.Conversion.Webhook.ClientConfig != nil {
		// Keep an injected caBundle.
		next.Spec.Conversion.Webhook.ClientConfig.CABundle = live.Spec.Conversion.Webhook.ClientConfig.CABundle
	}
	var versions []apiextensionsv1.CustomResourceDefinitionVersion
	for _, v := range target.Spec.Versions {
		v := *v.DeepCopy()
		v.Storage = v.Name == liveStorage
		if isServed(live, v.Name) {
			v.Served = true // unserving comes later
		}
		versions = append(versions, v)
	}
	for _, v := range live.Spec.Versions {
		if findVersion(target, v.Name) == nil {
			versions = append(versions, *v.DeepCopy())
		}
	}
	next.Spec.Versions = versions
	return next
}

// acceptedGate asks the API server, with a server-side dry run, whether it
// would take the CRD changed by edit (as editCRD writes it) in place of
// the live one: a CRD it refuses (a default its schema rejects, a CEL rule
// over its cost budget) is found before the plan changes anything, with
// the API server's own judgement (ratcheting against the live CRD
// included).
func (p *Plan) acceptedGate(ctx context.Context, live *apiextensionsv1.CustomResourceDefinition, edit func(*apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinition) Gate {
	g := Gate{Name: "the API server accepts the updated crd (server dry run)", State: GatePass}
	if _, err := editCRD(ctx, p.client, live, edit, metav1.DryRunAll); err != nil {
		failGate(&g, err)
	}
	return g
}

func oneStorageGate(live *apiextensionsv1.CustomResourceDefinition) Gate {
	g := Gate{Name: "exactly one storage version", State: GatePass}
	if s, err := storageVersion(live); err != nil {
		g.State, g.Detail = GateFail, err.Error()
	} else {
		g.Detail = s
	}
	return g
}

func storageIsGate(live *apiextensionsv1.CustomResourceDefinition, v string) Gate {
	g := Gate{Name: "storage version is " + v, State: GatePass}
	if s, _ := storageVersion(live); s != v {
		g.State, g.Detail = GatePending, fmt.Sprintf("it is %s (an earlier step switches it)", s)
	}
	return g
}

func notStoredGate(name string, live *apiextensionsv1.CustomResourceDefinition, versions []string) Gate {
	g := Gate{Name: name, State: GatePass, Detail: fmt.Sprintf("storedVersions %v", live.Status.StoredVersions)}
	var still []string
	for _, v := range versions {
		if inStoredVersions(live, v) {
			still = append(still, v)
		}
	}
	if len(still) > 0 {
		g.State = GatePending
		g.Detail = fmt.Sprintf("%v still in storedVersions %v: objects may be stored in them until the migration and the prune", still, live.Status.StoredVersions)
	}
	return g
}

// checkGate runs PlanOptions.Check on crd, the CRD the upgrade serves
// while it migrates.
func (p *Plan) checkGate(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) Gate {
	g := Gate{Name: "hubspoke check passes for the crd the upgrade serves", State: GatePass, Detail: fmt.Sprintf("versions %v", versionNames(crd))}
	if p.opts.Check == nil {
		g.State, g.Detail = GateFail, "not run: give the conversion rules (--rules) so that hubspoke check can run"
		return g
	}
	if err := p.opts.Check(ctx, crd); err != nil {
		failGate(&g, err)
	}
	return g
}

func versionNames(crd *apiextensionsv1.CustomResourceDefinition) []string {
	var out []string
	for _, v := range crd.Spec.Versions {
		out = append(out, v.Name)
	}
	return out
}

// probeGate converts a sample object between every ordered pair of the
// versions target serves: straight through the webhook with a Prober, else
// through the API server for the pairs the live CRD serves.
func (p *Plan) probeGate(ctx context.Context, live, target *apiextensionsv1.CustomResourceDefinition) Gate {
	g := Gate{Name: "webhook answers every served pair (live probe)", State: GatePass}
	if live.Spec.Conversion == nil || live.Spec.Conversion.Strategy != apiextensionsv1.WebhookConverter {
		if target.Spec.Conversion == nil || target.Spec.Conversion.Strategy != apiextensionsv1.WebhookConverter {
			g.Detail = "conversion strategy None: no webhook to probe"
			return g
		}
	}
	versions := servedVersions(target)
	for _, v := range servedVersions(live) {
		if !slices.Contains(versions, v) {
			versions = append(versions, v) // served along the way
		}
	}
	probeCRD := target.DeepCopy()
	if c := probeCRD.Spec.Conversion; c != nil && c.Webhook != nil && c.Webhook.ClientConfig != nil && len(c.Webhook.ClientConfig.CABundle) == 0 &&
		live.Spec.Conversion != nil && live.Spec.Conversion.Webhook != nil && live.Spec.Conversion.Webhook.ClientConfig != nil {
		// A target file usually leaves the caBundle to an injector.
		c.Webhook.ClientConfig.CABundle = live.Spec.Conversion.Webhook.ClientConfig.CABundle
	}
	pairs, err := p.probe(ctx, live, probeCRD, versions)
	if err != nil {
		g.State, g.Detail = GateFail, err.Error()
		return g
	}
	g.Detail = fmt.Sprintf("%d pairs of %v answered", pairs, versions)
	return g
}

func (p *Plan) probe(ctx context.Context, live, target *apiextensionsv1.CustomResourceDefinition, versions []string) (int, error) {
	group := live.Spec.Group
	liveStorage, err := storageVersion(live)
	if err != nil {
		return 0, err
	}
	// A sample: the first object, read at the storage version.
	sample, err := sampleObject(ctx, p.client, live, liveStorage)
	if err != nil {
		return 0, err
	}
	if p.opts.Prober == nil {
		pairs := 0
		for _, v := range versions {
			if !isServed(live, v) {
				return pairs, fmt.Errorf("%s is not served yet, so only a direct probe of the webhook can test it: give the webhook's URL", v)
			}
		}
		if sample == nil {
			return 0, nil
		}
		for _, v := range versions {
			c := objectClient(p.client, live, v, sample.GetNamespace())
			if _, err := c.Get(ctx, sample.GetName(), metav1.GetOptions{}); err != nil {
				return pairs, fmt.Errorf("read %s at %s through the api server: %w", objectKey(sample), v, err)
			}
			pairs++
		}
		return pairs * max(len(versions)-1, 0), nil
	}
	var raw []byte
	if sample != nil {
		if raw, err = json.Marshal(sample.Object); err != nil {
			return 0, err
		}
	} else {
		obj := map[string]any{"apiVersion": group + "/" + liveStorage, "kind": live.Spec.Names.Kind,
			"metadata": map[string]any{"name": "hubspoke-probe", "uid": "00000000-0000-0000-0000-000000000000"}}
		if namespaced(live) {
			obj["metadata"].(map[string]any)["namespace"] = "default"
		}
		if raw, err = json.Marshal(obj); err != nil {
			return 0, err
		}
	}
	// Storage -> every version, then every version -> every other.
	at := map[string][]byte{liveStorage: raw}
	pairs := 0
	for _, v := range versions {
		if v == liveStorage {
			continue
		}
		out, err := p.opts.Prober.Probe(ctx, target, raw, group+"/"+v)
		if err != nil {
			return pairs, fmt.Errorf("%s -> %s: %w", liveStorage, v, err)
		}
		at[v] = out
		pairs++
	}
	for _, a := range versions {
		if at[a] == nil {
			continue
		}
		for _, b := range versions {
			if a == b || a == liveStorage {
				continue
			}
			if _, err := p.opts.Prober.Probe(ctx, target, at[a], group+"/"+b); err != nil {
				return pairs, fmt.Errorf("%s -> %s: %w", a, b, err)
			}
			pairs++
		}
	}
	return pairs, nil
}

func sampleObject(ctx context.Context, dyn dynamic.Interface, crd *apiextensionsv1.CustomResourceDefinition, version string) (*unstructured.Unstructured, error) {
	list, err := dyn.Resource(resourceFor(crd, version)).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return nil, fmt.Errorf("list a sample at %s: %w", version, err)
	}
	if len(list.Items) == 0 {
		return nil, nil
	}
	return &list.Items[0], nil
}
