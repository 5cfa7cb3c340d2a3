package operator

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrladmission "sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/hubspoke/hubspoke/api/v1alpha1"
	"github.com/hubspoke/hubspoke/check"
	"github.com/hubspoke/hubspoke/convert"
	"github.com/hubspoke/hubspoke/convert/rules"
	"github.com/hubspoke/hubspoke/schema"
)

// admission is the validating webhook of Conversion objects.
type admission struct {
	c        client.Reader
	dyn      dynamic.Interface
	opts     Options
	hook     webhookRef
	reps     *replicas
	secretCA func(context.Context) ([]byte, error)
	log      *slog.Logger
}

// verdict is admission's answer: allowed or not, why, and warnings.
type verdict struct {
	allowed  bool
	message  string
	warnings []string
}

func deny(format string, args ...any) verdict {
	return verdict{message: fmt.Sprintf(format, args...)}
}

func (a *admission) Handle(ctx context.Context, req ctrladmission.Request) ctrladmission.Response {
	start := time.Now()
	v := a.review(ctx, req)
	a.log.Info("admission", "conversion", req.Name, "operation", req.Operation, "allowed", v.allowed, "took", time.Since(start).Round(time.Millisecond))
	if !v.allowed {
		return ctrladmission.Denied(v.message).WithWarnings(v.warnings...)
	}
	return ctrladmission.Allowed(v.message).WithWarnings(v.warnings...)
}

func (a *admission) review(ctx context.Context, req ctrladmission.Request) verdict {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return verdict{allowed: true}
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(req.Object.Raw); err != nil {
		return deny("conversion %s: %v", req.Name, err)
	}
	if req.Operation == admissionv1.Update {
		old := &unstructured.Unstructured{}
		if err := old.UnmarshalJSON(req.OldObject.Raw); err == nil && equality.Semantic.DeepEqual(old.Object["spec"], u.Object["spec"]) {
			// Metadata (the operator's finalizer, labels): nothing to check.
			return verdict{allowed: true}
		}
	}
	ctx, cancel := context.WithTimeout(ctx, a.opts.CheckTimeout)
	defer cancel()
	return a.check(ctx, u)
}

// check is the whole judgement of a Conversion, as it is to be stored.
func (a *admission) check(ctx context.Context, u *unstructured.Unstructured) verdict {
	name := u.GetName()
	var warnings []string
	// The CRD it converts: a Conversion is named after it.
	var crd apiextv1.CustomResourceDefinition
	if err := a.c.Get(ctx, client.ObjectKey{Name: name}, &crd); err != nil {
		if apierrors.IsNotFound(err) {
			return deny("conversion %s: no CustomResourceDefinition %s: a Conversion is named after the CRD it converts (plural.group); create the CRD first", name, name)
		}
		return deny("conversion %s: reading CRD %s: %v", name, name, err)
	}
	// What the webhook's replicas serve, and which Go funcs they have.
	ca, caErr := a.secretCA(ctx)
	bundle, _ := chooseBundle(&crd, a.hook, ca, caErr)
	reps, err := a.reps.ask(ctx, bundle, true)
	if err != nil {
		return deny("conversion %s: %v", name, err)
	}
	funcs := standIns(u)
	if len(funcs) > 0 {
		if v, ok := a.funcsPresent(name, funcs, reps); !ok {
			return v
		}
	}
	f, err := v1alpha1.Parse(u, rules.Options{Funcs: funcs})
	if err != nil {
		return deny("%v", err)
	}
	next, err := f.Converter()
	if err != nil {
		return deny("%v", err)
	}
	if f.Group != crd.Spec.Group || f.Kind != crd.Spec.Names.Kind {
		return deny("conversion %s converts %s.%s, but CRD %s is %s.%s: a Conversion is named after the CRD it converts", name, f.Kind, f.Group, name, crd.Spec.Names.Kind, crd.Spec.Group)
	}
	sc, err := asWebhookCRD(&crd, a.hook)
	if err != nil {
		return deny("conversion %s: CRD %s: %v", name, name, err)
	}
	if e := errorLines(check.Static(sc, f), 10); e != "" {
		return deny("conversion %s: check's static checks fail against CRD %s:\n%s", name, name, e)
	}
	if len(funcs) > 0 {
		warnings = append(warnings, fmt.Sprintf("laws and rollout safety not checked: funcs %s run Go code only the webhook has; run your webhook binary's check in CI", strings.Join(sortedKeys(funcs), ", ")))
		return verdict{allowed: true, message: "rules load; static checks pass", warnings: warnings}
	}
	lawOpts := check.Options{Objects: a.opts.CheckObjects, ShrinkTime: time.Second}
	laws := check.Laws(ctx, sc, next, lawOpts)
	if e := errorLines(laws, 10); e != "" {
		return deny("conversion %s: check's laws fail against CRD %s (seed %d; reproduce with hubspoke check --seed %d):\n%s", name, name, laws.Seed, laws.Seed, e)
	}
	if ctx.Err() != nil {
		warnings = append(warnings, fmt.Sprintf("the laws ran out of time (%s) after %d objects: rerun hubspoke check in CI", a.opts.CheckTimeout, laws.Objects))
	}
	// Rollout safety against every generation a replica serves.
	v := a.rollout(ctx, u, f, next, sc, reps)
	v.warnings = append(warnings, v.warnings...)
	return v
}

// funcsPresent refuses funcs that a ready replica does not have.
func (a *admission) funcsPresent(name string, funcs map[string]convert.Rule, reps []replica) (verdict, bool) {
	var readyAsked int
	var missing []string
	for _, r := range reps {
		if !r.ready || r.served == nil {
			continue
		}
		readyAsked++
		for _, fn := range sortedKeys(funcs) {
			if !slices.Contains(r.served.Funcs, fn) {
				have := strings.Join(r.served.Funcs, ", ")
				if have == "" {
					have = "none"
				}
				missing = append(missing, fmt.Sprintf("replica %s has no Go func %q (it has: %s)", r.name, fn, have))
			}
		}
	}
	switch {
	case readyAsked == 0:
		return deny("conversion %s names Go funcs (%s), and no ready replica of service %s/%s could be asked which it has", name, strings.Join(sortedKeys(funcs), ", "), a.hook.namespace, a.hook.name), false
	case len(missing) > 0:
		return deny("conversion %s: funcs rules name Go funcs the webhook was not built with: %s; build the webhook image with them (package webhookmain)", name, strings.Join(missing, "; ")), false
	}
	return verdict{}, true
}

// rollout compares the new rules with each generation a ready replica
// serves: on generated objects (check.Rollout) and on the objects that
// exist (up to Options.LiveObjects).
func (a *admission) rollout(ctx context.Context, u *unstructured.Unstructured, f *rules.File, next *convert.Converter, sc *schema.CRD, reps []replica) verdict {
	name := u.GetName()
	served := map[int64]string{} // generation -> the address of a replica serving it
	for _, r := range reps {
		if !r.ready {
			continue
		}
		if c := r.conversion(name, string(u.GetUID())); c != nil && c.Generation > 0 {
			if _, ok := served[c.Generation]; !ok {
				served[c.Generation] = r.addr
			}
		}
	}
	if len(served) == 0 {
		return verdict{allowed: true, message: "rules load; static checks and laws pass; no replica serves an earlier generation"}
	}
	gens := make([]int64, 0, len(served))
	for g := range served {
		gens = append(gens, g)
	}
	slices.Sort(gens)
	live, liveErr := a.liveObjects(ctx, sc)
	var warnings []string
	if liveErr != nil {
		warnings = append(warnings, fmt.Sprintf("existing objects not compared: %v", liveErr))
	}
	ack := (*rules.Acknowledgement)(nil)
	if f.Rollout != nil {
		ack = f.Rollout.AcknowledgeDifferences
	}
	for _, g := range gens {
		sv, err := a.reps.document(ctx, served[g], name)
		if err != nil {
			return deny("conversion %s: cannot read generation %d from the replica serving it (%s), to compare the new rules with: %v", name, g, served[g], err)
		}
		pf, err := rules.Parse(fmt.Sprintf("%s generation %d", v1alpha1.Source(name), g), sv.Document)
		if err != nil {
			return deny("conversion %s: generation %d, served now, does not load here: %v", name, g, err)
		}
		prev, err := pf.Converter()
		if err != nil {
			return deny("conversion %s: generation %d, served now, does not load here: %v", name, g, err)
		}
		if sameRules(pf, f) {
			continue
		}
		rep := check.Rollout(ctx, sc, next, prev, check.Options{Objects: a.opts.CheckObjects, ShrinkTime: time.Second})
		rep.Merge(asRollout(check.RunFixtures(ctx, liveFixtures(ctx, live, prev, sc), next, sc)))
		e := errorLines(rep, 10)
		if e == "" {
			continue
		}
		if ack != nil && ack.FromGeneration == g {
			warnings = append(warnings, fmt.Sprintf("the new rules answer differently from generation %d, served now, acknowledged: %s", g, ack.Reason))
			continue
		}
		how := fmt.Sprintf("if that is intended, say why in spec.rollout.acknowledgeDifferences: {fromGeneration: %d, reason: ...}", g)
		if ack != nil {
			how = fmt.Sprintf("spec.rollout.acknowledgeDifferences names generation %d, not %d, the one served now", ack.FromGeneration, g)
		}
		return verdict{warnings: warnings, message: fmt.Sprintf(
			"conversion %s: the new rules answer differently from generation %d, which replicas serve now: during the rollout the API server would get either answer for the same object (%s):\n%s",
			name, g, how, e)}
	}
	return verdict{allowed: true, warnings: warnings, message: fmt.Sprintf("rules load; static checks, laws and rollout safety against generation(s) %v pass", gens)}
}

// sameRules says whether two rule files convert alike by construction:
// the same spec but for the operator's fields.
func sameRules(a, b *rules.File) bool {
	type conv struct {
		Group, Kind, Hub string
		Spokes           any
	}
	strip := func(f *rules.File) []byte {
		type rule struct {
			Type, From, To, Func string
			Params               map[string]any
		}
		var spokes []any
		for _, s := range f.Spokes {
			var rs []rule
			for _, r := range s.Rules {
				rs = append(rs, rule{r.Type, r.From.String(), r.To.String(), r.FuncName, r.Params})
			}
			spokes = append(spokes, []any{s.Version, rs})
		}
		b, _ := json.Marshal(conv{f.Group, f.Kind, f.Hub, spokes})
		return b
	}
	return string(strip(a)) == string(strip(b))
}

// liveObjects reads up to LiveObjects objects of the CRD at its storage
// version.
func (a *admission) liveObjects(ctx context.Context, sc *schema.CRD) ([][]byte, error) {
	storage := ""
	for _, v := range sc.Object.Spec.Versions {
		if v.Storage {
			storage = v.Name
		}
	}
	gvr := schemaGVR(sc.Object, storage)
	list, err := a.dyn.Resource(gvr).List(ctx, metav1.ListOptions{Limit: int64(a.opts.LiveObjects)})
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", gvr.Resource+"."+gvr.Group, err)
	}
	out := make([][]byte, 0, len(list.Items))
	for _, it := range list.Items {
		b, err := it.MarshalJSON()
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

// liveFixtures turns existing objects into check fixtures: each object
// converted to every other version, expecting what the served generation
// answers (its failure included).
func liveFixtures(ctx context.Context, objs [][]byte, prev *convert.Converter, sc *schema.CRD) []check.Fixture {
	var out []check.Fixture
	for _, obj := range objs {
		var head struct {
			APIVersion string `json:"apiVersion"`
			Metadata   struct {
				Name, Namespace string
			} `json:"metadata"`
		}
		if json.Unmarshal(obj, &head) != nil {
			continue
		}
		id := head.Metadata.Name
		if head.Metadata.Namespace != "" {
			id = head.Metadata.Namespace + "/" + id
		}
		for _, v := range sc.VersionNames() {
			target := sc.Group() + "/" + v
			if target == head.APIVersion || ctx.Err() != nil {
				continue
			}
			fx := check.Fixture{Name: fmt.Sprintf("existing object %s as %s", id, v), Input: obj, InputFile: "existing object " + id, Target: target, ExpectedFile: "the served generation's answer"}
			want, err := prev.Convert(nil, obj, target)
			if err != nil {
				fx.HasError = true
			} else {
				fx.Expected = want
			}
			out = append(out, fx)
		}
	}
	return out
}

// asRollout words the findings of existing objects as rollout
// disagreements: each names the object, the version and the field.
func asRollout(r *check.Report) *check.Report {
	for i := range r.Findings {
		f := &r.Findings[i]
		if f.Check == check.CheckFixture {
			f.Check, f.Pos = check.LawRollout, ""
			f.Message = strings.TrimPrefix(f.Message, "fixture ")
		}
	}
	return r
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
