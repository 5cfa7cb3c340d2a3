package schema

import (
	"strings"

	"github.com/hubspoke/hubspoke/convert"
)

// FieldPointer turns a field path in the API server's notation
// (spec.a[0].b, metadata.labels[x/y], properties[spec]) into a JSON
// pointer (/spec/a/0/b). A key in brackets is taken up to the first "]".
func FieldPointer(p string) string {
	if p == "" || p == "<nil>" {
		return ""
	}
	var segs []string
	i := 0
	for i < len(p) {
		switch p[i] {
		case '.':
			i++
		case '[':
			j := strings.IndexByte(p[i:], ']')
			if j < 0 {
				j = len(p) - i
			}
			segs = append(segs, strings.Trim(p[i+1:i+j], `"`))
			i += j + 1
		default:
			j := strings.IndexAny(p[i:], ".[")
			if j < 0 {
				j = len(p) - i
			}
			segs = append(segs, p[i:i+j])
			i += j
		}
	}
	return convert.PathOf(segs...).Pointer()
}
