// Package widgetgen generates realistic example.com Widget objects for
// hubspoke's benchmarks and equivalence tests.
//
// Objects are about 3 KB of JSON each: metadata with labels, annotations
// (including kubectl.kubernetes.io/last-applied-configuration),
// managedFields, ownerReferences and finalizers; a nested spec of about 1 KB
// (replicas or size, a selector and a pod-template-like structure with
// containers, ports, env and resources); and a status with conditions.
// Generation is deterministic: the same seed gives the same bytes. Keys come
// out in the order an API server writes them, not sorted.
package widgetgen

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// Group is the API group of the generated Widgets.
const Group = "example.com"

// Options tunes Generate. The zero value generates v1alpha1 Widgets from
// seed 0 with no extra fields.
type Options struct {
	// Seed selects the sequence of objects; the same seed gives the same bytes.
	Seed uint64
	// Version is "v1alpha1" (spec.replicas, the default) or "v1" (spec.size).
	Version string
	// ExtraSpecFields adds that many fields no rule touches to each spec,
	// named x0000, x0001, ...
	ExtraSpecFields int
}

// Generate returns n Widget objects as JSON.
func Generate(n int, opts Options) ([][]byte, error) {
	g, err := NewGenerator(opts)
	if err != nil {
		return nil, err
	}
	out := make([][]byte, n)
	for i := range out {
		out[i] = g.Next()
	}
	return out, nil
}

// Generator yields Widgets one at a time. It is not safe for concurrent use.
type Generator struct {
	opts Options
	rnd  *rand.Rand
	seq  int
}

// NewGenerator returns a Generator for opts.
func NewGenerator(opts Options) (*Generator, error) {
	switch opts.Version {
	case "":
		opts.Version = "v1alpha1"
	case "v1alpha1", "v1":
	default:
		return nil, fmt.Errorf("widgetgen: unknown version %q (want v1alpha1 or v1)", opts.Version)
	}
	if opts.ExtraSpecFields < 0 {
		return nil, fmt.Errorf("widgetgen: negative ExtraSpecFields %d", opts.ExtraSpecFields)
	}
	return &Generator{opts: opts, rnd: rand.New(rand.NewPCG(opts.Seed, 0x5eed_b0a7))}, nil
}

// APIVersion returns the apiVersion of the objects g generates.
func (g *Generator) APIVersion() string { return Group + "/" + g.opts.Version }

var (
	words   = []string{"alpha", "bravo", "cedar", "delta", "ember", "fjord", "gamma", "harbor", "indigo", "juniper", "kestrel", "lumen", "maple", "nova", "onyx", "pebble", "quartz", "raven", "sierra", "tundra"}
	teams   = []string{"payments", "search", "storage", "identity", "billing", "ingest", "platform", "edge"}
	envs    = []string{"prod", "staging", "dev", "canary"}
	modes   = []string{"Fast", "Slow", "Balanced"}
	images  = []string{"registry.example.com/widgets/server", "registry.example.com/widgets/worker", "ghcr.io/example/sidecar-proxy", "docker.io/library/nginx"}
	cpus    = []string{"100m", "250m", "500m", "1", "2"}
	mems    = []string{"128Mi", "256Mi", "512Mi", "1Gi", "2Gi"}
	reasons = []string{"MinimumReplicasAvailable", "NewReplicaSetAvailable", "Reconciled", "ProgressDeadlineExceeded"}
)

func (g *Generator) pick(s []string) string { return s[g.rnd.IntN(len(s))] }

func (g *Generator) hex(n int) string {
	const digits = "0123456789abcdef"
	var b strings.Builder
	b.Grow(n)
	for range n {
		b.WriteByte(digits[g.rnd.IntN(16)])
	}
	return b.String()
}

func (g *Generator) uid() string {
	return g.hex(8) + "-" + g.hex(4) + "-" + g.hex(4) + "-" + g.hex(4) + "-" + g.hex(12)
}

func (g *Generator) time() string {
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	return base.Add(time.Duration(g.rnd.IntN(300*24*3600)) * time.Second).Format(time.RFC3339)
}

// Next returns the next Widget.
func (g *Generator) Next() []byte {
	g.seq++
	team := g.pick(teams)
	env := g.pick(envs)
	app := g.pick(words) + "-" + g.pick(words)
	name := fmt.Sprintf("%s-%d-%s", app, g.seq, g.hex(5))
	ns := team + "-" + env
	replicas := 1 + g.rnd.IntN(12)
	apiVersion := g.APIVersion()
	sizeKey := "replicas"
	if g.opts.Version == "v1" {
		sizeKey = "size"
	}
	selector := obj{{"app.kubernetes.io/name", app}, {"app.kubernetes.io/instance", name}}

	lastApplied := obj{
		{"apiVersion", apiVersion},
		{"kind", "Widget"},
		{"metadata", obj{
			{"labels", obj{{"app.kubernetes.io/name", app}, {"team", team}}},
			{"name", name},
			{"namespace", ns},
		}},
		{"spec", obj{
			{sizeKey, replicas},
			{"mode", g.pick(modes)},
			{"template", obj{{"spec", obj{{"containers", []obj{{{"image", g.pick(images) + ":v1." + fmt.Sprint(g.rnd.IntN(40))}, {"name", "server"}}}}}}}},
		}},
	}
	la, err := json.Marshal(lastApplied)
	if err != nil {
		panic(err) // cannot happen: only strings, ints and objects
	}

	containers := []obj{g.container("server", true), g.container("sidecar", false)}
	spec := obj{
		{sizeKey, replicas},
		{"mode", g.pick(modes)},
		{"minReadySeconds", 5 * (1 + g.rnd.IntN(12))},
		{"selector", obj{{"matchLabels", selector}}},
		{"template", obj{
			{"metadata", obj{
				{"labels", obj{{"app.kubernetes.io/name", app}, {"app.kubernetes.io/instance", name}, {"team", team}}},
				{"annotations", obj{{"prometheus.io/scrape", "true"}}},
			}},
			{"spec", obj{
				{"serviceAccountName", app},
				{"containers", containers},
			}},
		}},
	}
	for i := range g.opts.ExtraSpecFields {
		var v any
		switch i % 3 {
		case 0:
			v = g.pick(words)
		case 1:
			v = g.rnd.IntN(100000)
		default:
			v = obj{{"enabled", true}, {"weight", g.rnd.IntN(10)}}
		}
		spec = append(spec, kv{fmt.Sprintf("x%04d", i), v})
	}

	gen := 1 + g.rnd.IntN(20)
	o := obj{
		{"apiVersion", apiVersion},
		{"kind", "Widget"},
		{"metadata", obj{
			{"name", name},
			{"namespace", ns},
			{"uid", g.uid()},
			{"resourceVersion", fmt.Sprint(100000 + g.rnd.IntN(900000))},
			{"generation", gen},
			{"creationTimestamp", g.time()},
			{"labels", obj{
				{"app.kubernetes.io/name", app},
				{"app.kubernetes.io/instance", name},
				{"team", team},
				{"env", env},
			}},
			{"annotations", obj{
				{"kubectl.kubernetes.io/last-applied-configuration", string(la) + "\n"},
			}},
			{"ownerReferences", []obj{{
				{"apiVersion", "example.com/v1"},
				{"kind", "WidgetSet"},
				{"name", app},
				{"uid", g.uid()},
				{"controller", true},
				{"blockOwnerDeletion", true},
			}}},
			{"finalizers", []string{"example.com/cleanup"}},
			{"managedFields", []obj{
				{
					{"manager", "kubectl-client-side-apply"},
					{"operation", "Update"},
					{"apiVersion", apiVersion},
					{"time", g.time()},
					{"fieldsType", "FieldsV1"},
					{"fieldsV1", obj{
						{"f:metadata", obj{{"f:annotations", obj{{".", obj{}}, {"f:kubectl.kubernetes.io/last-applied-configuration", obj{}}}}}},
						{"f:spec", obj{{".", obj{}}, {"f:" + sizeKey, obj{}}, {"f:template", obj{}}}},
					}},
				},
				{
					{"manager", "widget-operator"},
					{"operation", "Update"},
					{"apiVersion", "example.com/v1"},
					{"time", g.time()},
					{"fieldsType", "FieldsV1"},
					{"fieldsV1", obj{{"f:status", obj{{".", obj{}}, {"f:availableReplicas", obj{}}, {"f:conditions", obj{}}}}}},
					{"subresource", "status"},
				},
			}},
		}},
		{"spec", spec},
		{"status", obj{
			{"availableReplicas", 1 + g.rnd.IntN(replicas)},
			{"observedGeneration", gen},
			{"conditions", []obj{g.condition("Available", gen), g.condition("Progressing", gen)}},
		}},
	}
	b, err := json.Marshal(o)
	if err != nil {
		panic(err) // cannot happen: only strings, ints, bools and objects
	}
	return b
}

func (g *Generator) container(name string, main bool) obj {
	c := obj{
		{"name", name},
		{"image", fmt.Sprintf("%s:v1.%d.%d", g.pick(images), g.rnd.IntN(40), g.rnd.IntN(10))},
	}
	if main {
		c = append(c, kv{"args", []string{"--log-level=info", fmt.Sprintf("--workers=%d", 1+g.rnd.IntN(16))}})
	}
	ports := []obj{{{"name", "http"}, {"containerPort", 8000 + g.rnd.IntN(1000)}, {"protocol", "TCP"}}}
	if main {
		ports = append(ports, obj{{"name", "metrics"}, {"containerPort", 9090}, {"protocol", "TCP"}})
	}
	c = append(c,
		kv{"ports", ports},
		kv{"env", []obj{
			{{"name", "LOG_FORMAT"}, {"value", "json"}},
			{{"name", "REGION"}, {"value", g.pick(words)}},
		}},
		kv{"resources", obj{
			{"limits", obj{{"cpu", g.pick(cpus)}, {"memory", g.pick(mems)}}},
			{"requests", obj{{"cpu", g.pick(cpus)}, {"memory", g.pick(mems)}}},
		}},
	)
	return c
}

func (g *Generator) condition(typ string, gen int) obj {
	return obj{
		{"type", typ},
		{"status", "True"},
		{"observedGeneration", gen},
		{"lastTransitionTime", g.time()},
		{"reason", g.pick(reasons)},
		{"message", "Widget is " + strings.ToLower(typ) + "."},
	}
}
