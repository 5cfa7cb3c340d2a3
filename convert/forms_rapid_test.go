package convert_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/hubspoke/hubspoke/convert"
)

// formsConverter uses every new form at once.
func formsConverter(t testing.TB) *convert.Converter {
	rules := []convert.Rule{
		must(convert.Rename(p("spec.items[name=*].img"), p("spec.items[name=*].image"))),
		must(convert.EnumWith(p("spec.items[*].mode"), p("spec.items[*].mode"), convert.EnumValues{
			Pairs:   []convert.EnumPair{{"Fast", "Performance"}, {"Quick", "Performance"}, {"Slow", "Economy"}},
			HubOnly: []convert.EnumPair{{Hub: "Balanced", Spoke: "Slow"}},
		})),
		must(convert.HubOnly(p("spec.items[name=*].paused"), nil)),
		must(convert.DurationToInt(p("spec.timeout"), p("spec.timeoutSeconds"), time.Second, convert.RoundCeil)),
		must(convert.MapToList(p("spec.ports"), p("spec.ports"), "name", convert.KeyString, convert.OrderKeep)),
		must(convert.Scale(p("spec.backends.*.weight"), p("spec.backends.*.weight"), 100, 0)),
		must(convert.ListToItem(p("spec.volumes"), p("spec.volume"), convert.OtherwiseKeep)),
		must(convert.Split(p("spec.schedule"), p("spec.schedule"), pat(cron), map[string]string{"dayOfWeek": "*"}, convert.OtherwiseKeep)),
		must(convert.Join(p("spec.image"), p("spec.image"), pat("{repository}:{tag:[^:/]+}"), map[string]string{"tag": "latest"}, convert.OtherwiseKeep)),
	}
	c, err := convert.New(convert.Definition{Group: "example.com", Kind: "Widget", Hub: "v1",
		Spokes: []convert.Spoke{{Version: "v1alpha1", Rules: rules}}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var (
	names     = rapid.SampledFrom([]string{"a", "b", "web", "db", "x.y", "s/t", "~"})
	cronField = rapid.SampledFrom([]string{"*", "0", "30", "1-5", "*/2", "1,2"})
	text      = rapid.SampledFrom([]string{"", "a", "nginx", "registry:5000/nginx", "x:y", "1.2"})
)

func uniqueNames(t *rapid.T, label string) []string {
	return rapid.SliceOfNDistinct(names, 0, 4, rapid.ID).Draw(t, label)
}

func maybe(t *rapid.T, label string) bool { return rapid.Bool().Draw(t, label) }

func spokeObject(t *rapid.T) map[string]any {
	spec := map[string]any{}
	if maybe(t, "items?") {
		var items []any
		for _, n := range uniqueNames(t, "items") {
			it := map[string]any{"name": n}
			if maybe(t, "img?") {
				it["img"] = text.Draw(t, "img")
			}
			if maybe(t, "mode?") {
				it["mode"] = rapid.SampledFrom([]string{"Fast", "Quick", "Slow"}).Draw(t, "mode")
			}
			items = append(items, it)
		}
		spec["items"] = items
	}
	if maybe(t, "timeout?") {
		spec["timeout"] = rapid.SampledFrom([]string{"0s", "30s", "1m30s", "90s", "1.5s", "2h", "1h0m0s", "250ms"}).Draw(t, "timeout")
	}
	if maybe(t, "ports?") {
		ports := map[string]any{}
		for _, n := range uniqueNames(t, "ports") {
			ports[n] = map[string]any{"port": rapid.IntRange(1, 65535).Draw(t, "port")}
		}
		spec["ports"] = ports
	}
	if maybe(t, "backends?") {
		b := map[string]any{}
		for _, n := range uniqueNames(t, "backends") {
			b[n] = map[string]any{"weight": rapid.IntRange(-1000, 1000).Draw(t, "weight")}
		}
		spec["backends"] = b
	}
	if maybe(t, "volumes?") {
		spec["volumes"] = rapid.SliceOfN(rapid.IntRange(0, 9), 0, 3).Draw(t, "volumes")
	}
	if maybe(t, "schedule?") {
		if maybe(t, "cron?") {
			f := make([]any, 5)
			for i := range f {
				f[i] = cronField.Draw(t, "field")
			}
			spec["schedule"] = fmt.Sprintf("%s %s %s %s %s", f...)
		} else {
			spec["schedule"] = rapid.SampledFrom([]string{"@daily", "", "1 2 3"}).Draw(t, "schedule")
		}
	}
	if maybe(t, "image?") {
		im := map[string]any{}
		if maybe(t, "repo?") {
			im["repository"] = text.Draw(t, "repository")
		}
		if maybe(t, "tag?") {
			im["tag"] = text.Draw(t, "tag")
		}
		spec["image"] = im
	}
	return wrap("example.com/v1alpha1", spec)
}

func hubObject(t *rapid.T) map[string]any {
	spec := map[string]any{}
	if maybe(t, "items?") {
		var items []any
		for _, n := range uniqueNames(t, "items") {
			it := map[string]any{"name": n}
			if maybe(t, "image?") {
				it["image"] = text.Draw(t, "image")
			}
			if maybe(t, "mode?") {
				it["mode"] = rapid.SampledFrom([]string{"Performance", "Economy", "Balanced"}).Draw(t, "mode")
			}
			if maybe(t, "paused?") {
				it["paused"] = maybe(t, "paused")
			}
			items = append(items, it)
		}
		spec["items"] = items
	}
	if maybe(t, "timeoutSeconds?") {
		spec["timeoutSeconds"] = rapid.IntRange(-100000, 100000).Draw(t, "timeoutSeconds")
	}
	if maybe(t, "ports?") {
		var ports []any
		for _, n := range uniqueNames(t, "ports") {
			ports = append(ports, map[string]any{"name": n, "port": rapid.IntRange(1, 65535).Draw(t, "port")})
		}
		spec["ports"] = ports
	}
	if maybe(t, "backends?") {
		b := map[string]any{}
		for _, n := range uniqueNames(t, "backends") {
			b[n] = map[string]any{"weight": 100 * rapid.IntRange(-1000, 1000).Draw(t, "weight")}
		}
		spec["backends"] = b
	}
	if maybe(t, "volume?") {
		spec["volume"] = rapid.IntRange(0, 9).Draw(t, "volume")
	}
	if maybe(t, "schedule?") {
		s := map[string]any{}
		for _, f := range []string{"minute", "hour", "dayOfMonth", "month", "dayOfWeek"} {
			if f == "dayOfWeek" && !maybe(t, "dow?") {
				continue
			}
			s[f] = cronField.Draw(t, f)
		}
		spec["schedule"] = s
	}
	if maybe(t, "image?") {
		spec["image"] = rapid.SampledFrom([]string{"nginx:1.2", "registry:5000/nginx:latest", "nginx", "a:b:c"}).Draw(t, "image")
	}
	return wrap("example.com/v1", spec)
}

func wrap(apiVersion string, spec map[string]any) map[string]any {
	return map[string]any{"apiVersion": apiVersion, "kind": "Widget",
		"metadata": map[string]any{"name": "w", "namespace": "ns"}, "spec": spec}
}

// roundTrip converts in to the other version and back, through JSON as the
// API server stores it (keys sorted), and compares.
func roundTrip(t *rapid.T, c *convert.Converter, in map[string]any, there, back string) {
	raw, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	mid, err := c.Convert(nil, raw, there)
	if err != nil {
		t.Fatalf("to %s: %v\n%s", there, err, raw)
	}
	var stored any
	if err := json.Unmarshal(mid, &stored); err != nil {
		t.Fatalf("to %s: invalid JSON: %v", there, err)
	}
	mid, _ = json.Marshal(stored) // what the API server would store
	out, err := c.Convert(nil, mid, back)
	if err != nil {
		t.Fatalf("back to %s: %v\nvia %s", back, err, mid)
	}
	var got, want any
	json.Unmarshal(out, &got)
	json.Unmarshal(raw, &want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("round trip through %s (-want +got):\n%s\nvia %s", there, diff, mid)
	}
}

func TestFormsRoundTripSpokeHubSpoke(t *testing.T) {
	c := formsConverter(t)
	rapid.Check(t, func(t *rapid.T) {
		roundTrip(t, c, spokeObject(t), "example.com/v1", "example.com/v1alpha1")
	})
}

func TestFormsRoundTripHubSpokeHub(t *testing.T) {
	c := formsConverter(t)
	rapid.Check(t, func(t *rapid.T) {
		roundTrip(t, c, hubObject(t), "example.com/v1alpha1", "example.com/v1")
	})
}

// TestPlainPatternMatchesRegexp: the literal search used for patterns whose
// fields take any text finds what the regexp finds.
func TestPlainPatternMatchesRegexp(t *testing.T) {
	patterns := []string{"{a} {b} {c}", "{a}:{b}", "x{a}-{b}-", "{a}::{b}", "<{a}>"}
	rapid.Check(t, func(t *rapid.T) {
		src := rapid.SampledFrom(patterns).Draw(t, "pattern")
		s := rapid.StringOf(rapid.SampledFrom([]rune{'a', ' ', ':', '-', 'x', '<', '>'})).Draw(t, "s")
		plain := pat(src)
		withRE := pat(strings.ReplaceAll(src, "}", ":.*?}"))
		got, okP := plain.Split(s)
		want, okR := withRE.Split(s)
		if okP != okR || !slices.Equal(got, want) {
			t.Fatalf("pattern %q on %q: literal search %q %v, regexp %q %v", src, s, got, okP, want, okR)
		}
	})
}
