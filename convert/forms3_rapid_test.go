package convert_test

import (
	"testing"

	"pgregory.net/rapid"

	"github.com/hubspoke/hubspoke/convert"
)

// v3Converter uses the forms of rules v3 that need no CEL at once.
func v3Converter(t testing.TB) *convert.Converter {
	kept := must(convert.HubOnly(p("spec.paused"), nil))
	kept, err := convert.Modify(kept, p("spec.paused"), p("spec.paused"), convert.Modifiers{KeptWins: true})
	if err != nil {
		t.Fatal(err)
	}
	cel := must(convert.ListToItem(p("spec.pools"), p("spec.pool"), convert.OtherwiseKeep))
	dropped, err := convert.Modify(must(convert.Rename(p("spec.ref"), p("spec.reference"))), p("spec.ref"), p("spec.reference"), convert.Modifiers{DropIfEmpty: true})
	if err != nil {
		t.Fatal(err)
	}
	rules := []convert.Rule{
		must(convert.Missing(p("spec.enabled"), []byte("false"), nil)),
		must(convert.EnumWith(p("spec.level"), p("spec.level"), convert.EnumValues{Typed: true,
			Pairs: []convert.EnumPair{{Spoke: "0", Hub: `"Low"`}, {Spoke: "1", Hub: `"Medium"`}, {Spoke: "2", Hub: `"High"`}}})),
		must(convert.Quantity(convert.QuantitySpec{From: p("spec.memory"), To: p("spec.memoryBytes"), Spoke: convert.QuantityString, Hub: convert.QuantityInteger, Otherwise: convert.OtherwiseKeep})),
		must(convert.Quantity(convert.QuantitySpec{From: p("spec.size"), To: p("spec.size"), Spoke: convert.QuantityString, Hub: convert.QuantityObject, Otherwise: convert.OtherwiseKeep})),
		must(convert.ScaleRound(p("spec.bytes"), p("spec.kib"), 0, 1024, convert.RoundHalf)),
		must(convert.ListToItemEmpty(p("spec.homes"), p("spec.home"), convert.OtherwiseKeep, convert.EmptyAbsent)),
		must(convert.Rename(p("spec.routes[**].t"), p("spec.routes[**].timeout"))),
		must(convert.Rename(p(`metadata.labels["example.com/cluster"]`), p("spec.clusterName"))),
		must(convert.OnlyOn(convert.OnlySide{Path: p("spec.format"), InHub: true, Default: []byte(`"v2"`), Constant: true})),
		must(convert.OnlyOn(convert.OnlySide{Path: p("spec.debug"), Drop: true})),
		kept, cel, dropped,
	}
	c, err := convert.New(convert.Definition{Group: "example.com", Kind: "Widget", Hub: "v1",
		Spokes: []convert.Spoke{{Version: "v1alpha1", Rules: rules}}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var (
	quantities = rapid.SampledFrom([]any{"50Gi", "1024Mi", "1500m", "1G", "0", "1.50Gi", "+5", "1e3", 7, "12345"})
	labelVal   = rapid.SampledFrom([]string{"c1", "c2", "a.b-c_d", ""})
)

// tree draws a tree of routes (key is the field each route holds).
func tree(t *rapid.T, key string, depth int) []any {
	n := rapid.IntRange(0, 2).Draw(t, "routes")
	out := make([]any, n)
	for i := range out {
		r := map[string]any{}
		if maybe(t, key+"?") {
			r[key] = rapid.IntRange(0, 9).Draw(t, key)
		}
		if depth < 3 && maybe(t, "children?") {
			r["routes"] = tree(t, key, depth+1)
		}
		out[i] = r
	}
	return out
}

func v3Spoke(t *rapid.T) map[string]any {
	spec := map[string]any{}
	o := wrap("example.com/v1alpha1", spec)
	if maybe(t, "enabled?") {
		spec["enabled"] = maybe(t, "enabled")
	}
	if maybe(t, "level?") {
		spec["level"] = rapid.IntRange(0, 2).Draw(t, "level")
	}
	if maybe(t, "memory?") {
		spec["memory"] = quantities.Draw(t, "memory")
	}
	if maybe(t, "size?") {
		spec["size"] = quantities.Draw(t, "size")
	}
	if maybe(t, "bytes?") {
		spec["bytes"] = rapid.IntRange(0, 1<<20).Draw(t, "bytes")
	}
	if maybe(t, "homes?") {
		homes := make([]any, rapid.IntRange(0, 2).Draw(t, "homes"))
		for i := range homes {
			homes[i] = map[string]any{"city": text.Draw(t, "city")}
		}
		spec["homes"] = homes
	}
	if maybe(t, "routes?") {
		spec["routes"] = tree(t, "t", 0)
	}
	if maybe(t, "debug?") {
		spec["debug"] = map[string]any{"trace": maybe(t, "trace")}
	}
	if maybe(t, "pools?") {
		spec["pools"] = rapid.SliceOfN(rapid.IntRange(0, 9), 0, 2).Draw(t, "pools")
	}
	if maybe(t, "ref?") {
		ref := map[string]any{}
		if maybe(t, "group?") {
			ref["group"] = text.Draw(t, "group")
		}
		spec["ref"] = ref
	}
	if maybe(t, "label?") {
		o["metadata"].(map[string]any)["labels"] = map[string]any{"example.com/cluster": labelVal.Draw(t, "label"), "app": "x"}
	}
	return o
}

func v3Hub(t *rapid.T) map[string]any {
	spec := map[string]any{}
	o := wrap("example.com/v1", spec)
	if maybe(t, "enabled?") {
		spec["enabled"] = maybe(t, "enabled")
	}
	if maybe(t, "level?") {
		spec["level"] = rapid.SampledFrom([]string{"Low", "Medium", "High"}).Draw(t, "level")
	}
	if maybe(t, "memoryBytes?") {
		spec["memoryBytes"] = rapid.Int64Range(0, 1<<40).Draw(t, "memoryBytes")
	}
	if maybe(t, "size?") {
		s := map[string]any{"value": rapid.SampledFrom([]any{0, 5, 1.5, 1000}).Draw(t, "value")}
		if maybe(t, "unit?") {
			s["unit"] = rapid.SampledFrom([]string{"Gi", "m", "k", "e3"}).Draw(t, "unit")
		}
		spec["size"] = s
	}
	if maybe(t, "kib?") {
		spec["kib"] = rapid.IntRange(0, 1<<20).Draw(t, "kib")
	}
	if maybe(t, "home?") {
		spec["home"] = map[string]any{"city": text.Draw(t, "city")}
	}
	if maybe(t, "routes?") {
		spec["routes"] = tree(t, "timeout", 0)
	}
	if maybe(t, "clusterName?") {
		spec["clusterName"] = labelVal.Draw(t, "clusterName")
	}
	if maybe(t, "format?") {
		spec["format"] = rapid.SampledFrom([]string{"v2", "v3"}).Draw(t, "format")
	}
	if maybe(t, "paused?") {
		spec["paused"] = maybe(t, "paused")
	}
	if maybe(t, "pool?") {
		spec["pool"] = rapid.IntRange(0, 9).Draw(t, "pool")
	}
	if maybe(t, "reference?") {
		ref := map[string]any{}
		if maybe(t, "group?") {
			ref["group"] = text.Draw(t, "group")
		}
		spec["reference"] = ref
	}
	if maybe(t, "label?") {
		o["metadata"].(map[string]any)["labels"] = map[string]any{"example.com/cluster": labelVal.Draw(t, "label")}
	}
	return o
}

// TestRulesV3RoundTrip: the round-trip laws hold for the forms of rules
// v3, through JSON as the API server stores it, both ways.
func TestRulesV3RoundTrip(t *testing.T) {
	c := v3Converter(t)
	t.Run("spoke-hub-spoke", func(t *testing.T) {
		rapid.Check(t, func(t *rapid.T) {
			roundTrip(t, c, v3Spoke(t), "example.com/v1", "example.com/v1alpha1")
		})
	})
	t.Run("hub-spoke-hub", func(t *testing.T) {
		rapid.Check(t, func(t *rapid.T) {
			roundTrip(t, c, v3Hub(t), "example.com/v1alpha1", "example.com/v1")
		})
	})
}
