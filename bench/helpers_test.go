package bench_test

import (
	"encoding/json"
	"sync"
	"testing"

	"github.com/hubspoke/hubspoke/bench/widgetgen"
	"github.com/hubspoke/hubspoke/convert"
	"github.com/hubspoke/hubspoke/convert/rules"
	"github.com/hubspoke/hubspoke/internal/crwidget"
)

// widgetRules is the hubspoke rule file the benchmarks use.
const widgetRules = "../examples/widget/conversion.yaml"

// converter is what both implementations offer.
type converter interface {
	Convert(dst, obj []byte, toAPIVersion string) ([]byte, error)
}

func hubspokeConverter(tb testing.TB) *convert.Converter {
	tb.Helper()
	c, err := rules.LoadFile(widgetRules)
	if err != nil {
		tb.Fatalf("load %s: %v", widgetRules, err)
	}
	return c
}

func typedConverter(tb testing.TB) *crwidget.Converter {
	tb.Helper()
	s, err := crwidget.NewScheme()
	if err != nil {
		tb.Fatal(err)
	}
	return crwidget.NewConverter(s)
}

// generated caches generated batches: generation is deterministic, so
// every benchmark and test sees the same objects.
var generated sync.Map // key -> [][]byte

type genKey struct {
	version string
	n       int
	extra   int
}

func widgets(tb testing.TB, version string, n, extra int) [][]byte {
	tb.Helper()
	k := genKey{version, n, extra}
	if v, ok := generated.Load(k); ok {
		return v.([][]byte)
	}
	objs, err := widgetgen.Generate(n, widgetgen.Options{Seed: 1, Version: version, ExtraSpecFields: extra})
	if err != nil {
		tb.Fatal(err)
	}
	generated.Store(k, objs)
	return objs
}

func totalBytes(objs [][]byte) int64 {
	var n int64
	for _, o := range objs {
		n += int64(len(o))
	}
	return n
}

func decodeJSON(tb testing.TB, b []byte) any {
	tb.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		tb.Fatalf("decode %.100s: %v", b, err)
	}
	return v
}
