package celenv

import (
	"testing"

	"github.com/google/cel-go/cel"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/library"
)

func BenchmarkExp(b *testing.B) {
	shared.init()
	src := `{?"group": self.?group.orValue("") != "" ? self.?group : optional.none()}`
	ast, iss := shared.env.Compile(src)
	if iss.Err() != nil {
		b.Fatal(iss.Err())
	}
	tracked, _ := shared.env.Program(ast, cel.CostLimit(PerCallLimit), cel.CostTracking(&library.CostEstimator{}), cel.InterruptCheckFrequency(celconfig.CheckFrequency))
	plain, _ := shared.env.Program(ast)
	self := []byte(`{"group":"g"}`)
	xt := &expression{src: src, prog: tracked}
	xp := &expression{src: src, prog: plain}
	var dst []byte
	for range 3 {
		b.Run("tracked", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				dst, _ = xt.AppendEval(dst[:0], self, nil)
			}
		})
		b.Run("plain", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				dst, _ = xp.AppendEval(dst[:0], self, nil)
			}
		})
	}
}
