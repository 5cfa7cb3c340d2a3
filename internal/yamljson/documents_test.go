package yamljson

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRead(t *testing.T) {
	tests := []struct {
		name, data string
		want       []string // each document: "String() JSON"
		err        string   // the whole error, when it fails
	}{
		{name: "yaml documents", data: "# a comment\na: 1\n---\n# only a comment\n---\nb: 0.1000\n---\nnull\n",
			want: []string{`f: document 1 (line 1) {"a":1}`, `f: document 3 (line 6) {"b":0.1000}`}},
		{name: "json values and an array", data: " {\"a\":1}\n[{\"b\":2}, {\"c\":123456789012345678901234567890}]\n",
			want: []string{`f: value 1 {"a":1}`, `f: value 2[0] {"b":2}`, `f: value 2[1] {"c":123456789012345678901234567890}`}},
		{name: "flow yaml that looks like json", data: "{apiVersion: x/v1, kind: K, r: 0.50}\n",
			want: []string{`f: document 1 (line 1) {"apiVersion":"x/v1","kind":"K","r":0.50}`}},
		{name: "invalid utf-8 in yaml", data: "a: 1\nb:\n  c: \"x\xffy\"\n", err: "f:3:8: invalid UTF-8 (byte 0xff)"},
		{name: "invalid utf-8 in json", data: "{\"a\":\n\"\xfe\"}", err: "f:2:2: invalid UTF-8 (byte 0xfe)"},
		{name: "invalid yaml", data: "a: 1\n---\nb: {c: 1,\n  d: 2\ne: 3\n", err: "f:5:1: document 2: not valid YAML: "},
		{name: "invalid json", data: "{\"a\":1}\n{\"b\":\n  tru}", err: "f:3:6: value 2: not valid JSON: invalid character"},
		{name: "json number out of range", data: "{\"a\":1e400}", err: "f:1:6: value 1: not valid JSON: number 1e400 is out of range"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			docs, err := Read("f", []byte(tc.data))
			if tc.err != "" {
				var e *Error
				if err == nil || !strings.HasPrefix(err.Error(), tc.err) || !errors.As(err, &e) {
					t.Fatalf("err = %v, want an *Error starting %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, d := range docs {
				got = append(got, d.String()+" "+string(d.JSON))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("documents (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPositions(t *testing.T) {
	yamlFile := "a: 1\n---\nmetadata:\n  name: x\nspec:\n  list:\n  - 1\n  -   k: 1e300\n"
	jsonFile := "{\"a\":1}\n{\"metadata\":{\"name\":\"x\"},\n \"spec\":{\"list\":[1, {\"k\":1e300}]}}"
	for _, tc := range []struct {
		name, file string
		ptr        string
		want       Position
		exact      bool
	}{
		{"yaml member: its key", yamlFile, "/metadata/name", Position{4, 3}, true},
		{"yaml item", yamlFile, "/spec/list/0", Position{7, 5}, true},
		{"yaml nested", yamlFile, "/spec/list/1/k", Position{8, 7}, true},
		{"yaml missing: the ancestor", yamlFile, "/spec/list/1/nope", Position{8, 7}, false},
		{"json member: its value", jsonFile, "/metadata/name", Position{2, 21}, true},
		{"json nested", jsonFile, "/spec/list/1/k", Position{3, 26}, true},
		{"json root", jsonFile, "", Position{2, 1}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			docs, err := Read("f", []byte(tc.file))
			if err != nil {
				t.Fatal(err)
			}
			d := docs[1]
			got, exact := d.Position(tc.ptr)
			if got != tc.want || exact != tc.exact {
				t.Errorf("Position(%q) = %v, %v; want %v, %v", tc.ptr, got, exact, tc.want, tc.exact)
			}
			// The offset of the number in the document's JSON lands on
			// the number's place.
			off := strings.Index(string(d.JSON), "1e300")
			if got, want := d.OffsetPosition(off), map[bool]Position{true: {8, 7}, false: {3, 26}}[d.yaml != nil]; got != want {
				t.Errorf("OffsetPosition(%d) = %v, want %v", off, got, want)
			}
		})
	}
}

func TestPointerAt(t *testing.T) {
	data := `{"a":{"b":[1,{"c":"x"}]},"d":2}`
	for _, tc := range []struct {
		at   string
		want string
	}{{`"x"`, "/a/b/1/c"}, {`1,`, "/a/b/0"}, {`2}`, "/d"}, {`{"a"`, ""}} {
		if got := PointerAt([]byte(data), strings.Index(data, tc.at)); got != tc.want {
			t.Errorf("PointerAt(%s) = %q, want %q", tc.at, got, tc.want)
		}
	}
}

func TestLines(t *testing.T) {
	docs, err := Read("f", []byte("---\nspec:\n  versions:\n  - name: v1\n    served: true\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"": 2, "/spec": 2, "/spec/versions": 3, "/spec/versions/0": 4, "/spec/versions/0/name": 4, "/spec/versions/0/served": 5}
	if diff := cmp.Diff(want, docs[0].Lines()); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}
}
