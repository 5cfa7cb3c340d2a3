// Package bench holds hubspoke's benchmarks and the helpers they share. The
// benchmarks compare hubspoke's raw-JSON engine and ConversionReview handler
// with controller-runtime's typed Hub/Convertible conversion and its
// conversion webhook handler, on the same generated Widget objects, in the
// same run. See docs/benchmarks.md for how to run them and for results.
//
// The package's tests are quick equivalence checks (both implementations
// produce the same objects); the benchmarks only run with -bench.
package bench

import (
	"bytes"
	"encoding/json"
)

// ReviewBody returns an apiextensions.k8s.io/v1 ConversionReview request
// asking to convert objs to desiredAPIVersion. The objects are copied into
// the body as they are.
func ReviewBody(uid, desiredAPIVersion string, objs [][]byte) []byte {
	var b bytes.Buffer
	size := 200
	for _, o := range objs {
		size += len(o) + 1
	}
	b.Grow(size)
	b.WriteString(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":`)
	writeString(&b, uid)
	b.WriteString(`,"desiredAPIVersion":`)
	writeString(&b, desiredAPIVersion)
	b.WriteString(`,"objects":[`)
	for i, o := range objs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(o)
	}
	b.WriteString("]}}")
	return b.Bytes()
}

func writeString(b *bytes.Buffer, s string) {
	q, err := json.Marshal(s)
	if err != nil {
		panic(err) // cannot happen for a string
	}
	b.Write(q)
}
