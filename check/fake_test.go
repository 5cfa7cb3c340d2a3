package check

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/hubspoke/hubspoke/convert"
)

// fakeConverter converts Gadgets (testdata/crd.yaml) between v1alpha1,
// v1beta1 (the hub's twin) and v1 (the hub) by hand, the way the rules in
// testdata/rules.yaml describe. Its knobs break it the way real conversions
// break, for the laws to catch.
type fakeConverter struct {
	oneWay           bool // v1 -> v1alpha1 only rewrites apiVersion
	dropHubOnly      bool // spec.paused is not preserved going to v1alpha1
	overwriteDups    bool // listToMap keeps the last of duplicate names (instead of failing)
	nondeterministic bool
	calls            int
}

const preservedKey = "hubspoke.dev/preserved"

func (f *fakeConverter) Group() string      { return "example.com" }
func (f *fakeConverter) Kind() string       { return "Gadget" }
func (f *fakeConverter) Hub() string        { return "v1" }
func (f *fakeConverter) Versions() []string { return []string{"v1", "v1alpha1", "v1beta1"} }

func (f *fakeConverter) Convert(dst, obj []byte, toAPIVersion string) ([]byte, error) {
	v, err := decodeJSON(obj)
	if err != nil {
		return nil, &convert.Error{Index: -1, Err: err}
	}
	m, _ := v.(map[string]any)
	from, _ := m["apiVersion"].(string)
	fromV := strings.TrimPrefix(from, "example.com/")
	toV, ok := strings.CutPrefix(toAPIVersion, "example.com/")
	if !ok || (toV != "v1" && toV != "v1alpha1" && toV != "v1beta1") {
		return nil, &convert.Error{Index: -1, Err: fmt.Errorf("%w: %s", convert.ErrUnknownVersion, toAPIVersion)}
	}
	if fromV == toV {
		return append(dst, obj...), nil
	}
	if fromV == "v1alpha1" {
		if err = f.alphaToHub(m); err != nil {
			return nil, err
		}
	}
	if toV == "v1alpha1" {
		f.hubToAlpha(m)
	}
	m["apiVersion"] = toAPIVersion
	if f.nondeterministic {
		f.calls++
		if f.calls%2 == 0 {
			md := m["metadata"].(map[string]any)
			ann, _ := md["annotations"].(map[string]any)
			if ann == nil {
				ann = map[string]any{}
				md["annotations"] = ann
			}
			ann["example.com/call"] = "even"
		}
	}
	out, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return append(dst, out...), nil
}

func sub(m map[string]any, k string) map[string]any {
	s, _ := m[k].(map[string]any)
	return s
}

func preserved(m map[string]any) map[string]any {
	md := sub(m, "metadata")
	ann := sub(md, "annotations")
	p := map[string]any{}
	if s, ok := ann[preservedKey].(string); ok {
		if v, err := decodeJSON([]byte(s)); err == nil {
			p, _ = v.(map[string]any)
		}
	}
	return p
}

func setPreserved(m map[string]any, p map[string]any) {
	md := sub(m, "metadata")
	ann := sub(md, "annotations")
	if len(p) == 0 {
		if ann != nil {
			delete(ann, preservedKey)
			if len(ann) == 0 {
				delete(md, "annotations")
			}
		}
		return
	}
	if ann == nil {
		ann = map[string]any{}
		md["annotations"] = ann
	}
	b, _ := json.Marshal(p)
	ann[preservedKey] = string(b)
}

var modeToHub = map[string]string{"Fast": "Performance", "Slow": "Economy"}

func (f *fakeConverter) alphaToHub(m map[string]any) error {
	spec := sub(m, "spec")
	p := preserved(m)
	hubData, _ := p["v1"].(map[string]any)
	delete(p, "v1")
	alpha := map[string]any{}
	if spec != nil {
		if v, ok := spec["replicas"]; ok {
			spec["size"] = v
			delete(spec, "replicas")
		}
		if v, ok := spec["mode"].(string); ok {
			spec["mode"] = modeToHub[v]
		}
		if v, ok := spec["legacy"]; ok {
			alpha["legacy"] = v
			delete(spec, "legacy")
		}
		if list, ok := spec["endpoints"].([]any); ok {
			out := map[string]any{}
			var order []any
			for i, it := range list {
				item, _ := it.(map[string]any)
				name, _ := item["name"].(string)
				if _, dup := out[name]; dup && !f.overwriteDups {
					return &convert.Error{Index: -1, Pointer: fmt.Sprintf("/spec/endpoints/%d/name", i), Rule: "listToMap spec.endpoints", Err: fmt.Errorf("duplicate name %q", name)}
				}
				v := map[string]any{}
				for k, x := range item {
					if k != "name" {
						v[k] = x
					}
				}
				out[name] = v
				order = append(order, name)
			}
			spec["endpoints"] = out
			if !sort.SliceIsSorted(order, func(i, j int) bool { return order[i].(string) < order[j].(string) }) {
				alpha["endpointOrder"] = order
			}
		}
		for _, k := range []string{"paused", "extra"} {
			if v, ok := hubData[k]; ok {
				spec[k] = v
			}
		}
	}
	if len(alpha) > 0 {
		p["v1alpha1"] = alpha
	}
	setPreserved(m, p)
	return nil
}

var modeFromHub = map[string]string{"Performance": "Fast", "Economy": "Slow"}

func (f *fakeConverter) hubToAlpha(m map[string]any) {
	if f.oneWay {
		return
	}
	spec := sub(m, "spec")
	p := preserved(m)
	alpha, _ := p["v1alpha1"].(map[string]any)
	delete(p, "v1alpha1")
	hubData := map[string]any{}
	if spec != nil {
		if v, ok := spec["size"]; ok {
			spec["replicas"] = v
			delete(spec, "size")
		}
		if v, ok := spec["mode"].(string); ok {
			spec["mode"] = modeFromHub[v]
		}
		for _, k := range []string{"paused", "extra"} {
			if v, ok := spec[k]; ok {
				if !(f.dropHubOnly && k == "paused") {
					hubData[k] = v
				}
				delete(spec, k)
			}
		}
		if v, ok := alpha["legacy"]; ok {
			spec["legacy"] = v
		}
		if mp, ok := spec["endpoints"].(map[string]any); ok {
			var names []string
			if order, ok := alpha["endpointOrder"].([]any); ok {
				for _, n := range order {
					if s, ok := n.(string); ok {
						if _, ok := mp[s]; ok {
							names = append(names, s)
						}
					}
				}
			}
			if len(names) != len(mp) {
				names = names[:0]
				for k := range mp {
					names = append(names, k)
				}
				sort.Strings(names)
			}
			list := make([]any, 0, len(names))
			for _, n := range names {
				item := map[string]any{"name": n}
				for k, x := range mp[n].(map[string]any) {
					item[k] = x
				}
				list = append(list, item)
			}
			spec["endpoints"] = list
		}
	}
	if len(hubData) > 0 {
		p["v1"] = hubData
	}
	setPreserved(m, p)
}
