package yamljson

import (
	"errors"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func TestToJSON(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"literals and order kept", "spec:\n  big: 123456789012345678901234567890\n  ratio: 0.1000\n  a: 1\n", `{"spec":{"big":123456789012345678901234567890,"ratio":0.1000,"a":1}}`},
		{"exponent kept", "x: 1.5e+3\n", `{"x":1.5e+3}`},
		{"kubectl's yaml 1.1 booleans", "a: yes\nb: off\n", `{"a":true,"b":false}`},
		{"octal as kubectl reads it", "mode: 0777\n", `{"mode":511}`},
		{"hexadecimal as kubectl reads it", "x: 0x1F\n", `{"x":31}`},
		{"quoted numbers are strings", "x: \"0.1000\"\n", `{"x":"0.1000"}`},
		{"aliases", "a: &n 0.50\nb: *n\n", `{"a":0.50,"b":0.50}`},
		{"merge key: kubectl's keys, the rest sorted", "base: &b {q: 2.0, p: 1.0}\nd:\n  <<: *b\n  z: 3.0\n", `{"base":{"q":2.0,"p":1.0},"d":{"z":3.0,"p":1,"q":2}}`},
		{"key y is kubectl's true", "y: 1\n", `{"true":1}`},
		{"duplicate key: the last", "a: 1.0\na: 2.50\n", `{"a":2.50}`},
		{"empty document", "", `null`},
		{"list", "- 1.10\n- x\n- null\n- {}\n", `[1.10,"x",null,{}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ToJSON([]byte(tt.yaml))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("ToJSON(%q) = %s, want %s", tt.yaml, got, tt.want)
			}
		})
	}
}

func TestFromJSON(t *testing.T) {
	tests := []struct {
		name, json, want string
	}{
		{"literals and order kept", `{"spec":{"big":123456789012345678901234567890,"ratio":0.1000,"a":1}}`, "spec:\n  big: 123456789012345678901234567890\n  ratio: 0.1000\n  a: 1\n"},
		{"strings a yaml 1.1 reader would misread are quoted", `{"a":"yes","b":"0777","c":"1.0","d":"null","e":"on","f":"1:20","g":"y","h":"no way"}`, "a: \"yes\"\nb: \"0777\"\nc: \"1.0\"\nd: \"null\"\ne: \"on\"\nf: \"1:20\"\ng: \"y\"\nh: no way\n"},
		// Issue 27, bug 8: what a YAML 1.1 reader of the whole type
		// repository (PyYAML) reads as something else: base 60 numbers,
		// timestamps, the value and merge keys; and what none misreads.
		{"base 60, timestamps, = and << are quoted", `{"a":"22:00","b":"1:30:00.5","c":"=","d":"<<","e":"2001-12-14","f":"1_000","g":"-.inf","h":"22:00 UTC","i":"a=b","j":"60:00"}`, "a: \"22:00\"\nb: \"1:30:00.5\"\nc: \"=\"\nd: \"<<\"\ne: \"2001-12-14\"\nf: \"1_000\"\ng: \"-.inf\"\nh: 22:00 UTC\ni: a=b\nj: \"60:00\"\n"},
		{"lists in kubectl's layout", `{"items":[{"a":1},{"b":[]}],"m":{}}`, "items:\n- a: 1\n- b: []\nm: {}\n"},
		{"scalars", `[true,null,-0.0e-0,"x y"]`, "- true\n- null\n- -0.0e-0\n- x y\n"},
		{"integers of every size", `[9223372036854775807,12345678901234567890,123456789012345678901234567890,-9223372036854775809]`,
			"- 9223372036854775807\n- 12345678901234567890\n- 123456789012345678901234567890\n- -9223372036854775809\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := FromJSON([]byte(tt.json))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("FromJSON(%s) =\n%s\nwant\n%s", tt.json, got, tt.want)
			}
			// kubectl reads back the same values.
			back, err := yaml.YAMLToJSON(got)
			if err != nil {
				t.Fatal(err)
			}
			ref, _ := yaml.YAMLToJSON([]byte(tt.json))
			if string(back) != string(ref) {
				t.Errorf("kubectl reads %s back, want %s", back, ref)
			}
		})
	}
}

// FuzzRoundTrip: whatever kubectl reads from a YAML document, ToJSON gives
// the same values (literals aside), and FromJSON writes YAML kubectl reads
// back the same.
func FuzzRoundTrip(f *testing.F) {
	for _, s := range []string{"a: 1.0\n", "- 0777\n- yes\n", "a: &x {b: 1}\nc: *x\n", "x: 1e400\n", "k: [1, 2.50, {z: 0x10}]\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		ref, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			return
		}
		got, err := ToJSON([]byte(doc))
		if err != nil {
			t.Fatalf("ToJSON(%q): %v (kubectl reads %s)", doc, err, ref)
		}
		a, err1 := yaml.YAMLToJSON(got)
		b, err2 := yaml.YAMLToJSON(ref)
		if err1 != nil || err2 != nil || string(a) != string(b) {
			t.Fatalf("ToJSON(%q) = %s, kubectl reads %s", doc, got, ref)
		}
		y, err := FromJSON(got)
		if err != nil {
			t.Fatalf("FromJSON(%s): %v", got, err)
		}
		c, err := yaml.YAMLToJSON(y)
		if err != nil || string(c) != string(b) {
			t.Fatalf("FromJSON(%s) = %q, kubectl reads %s, want %s", got, y, c, b)
		}
	})
}

// TestLocate holds Locate to the line and column of the offending token,
// where kubectl's reader (sigs.k8s.io/yaml) names another line.
func TestLocate(t *testing.T) {
	tests := []struct {
		name, doc             string
		line, col, readerLine int
		msg                   string // in goccy's message
	}{
		{
			name: "flow sequence left open",
			doc:  "a: 1\nb:\n  c: [1, 2,\n    3,\n    4\n  d: 4\n",
			line: 6, col: 3, readerLine: 5, msg: "',' or ']' must be specified",
		},
		{
			name: "flow mapping left open",
			doc:  "a: 1\nb: {c: 1,\n  d: 2\ne: 3\n",
			line: 4, col: 1, readerLine: 3, msg: "',' or '}' must be specified",
		},
		{
			name: "bad indent",
			doc:  "metadata:\n  name: a\n   bad: indent\nspec: {}\n",
			line: 2, col: 9, readerLine: 3, msg: "mapping value is not allowed",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ToJSON([]byte(tc.doc))
			if err == nil {
				t.Fatal("ToJSON accepted the document")
			}
			l := Locate([]byte(tc.doc), err)
			if l.Line != tc.line || l.Column != tc.col || l.ReaderLine != tc.readerLine || !strings.Contains(l.Message, tc.msg) {
				t.Errorf("Locate = %+v, want %d:%d, reader's line %d, and %q (reader: %v)", l, tc.line, tc.col, tc.readerLine, tc.msg, err)
			}
			if strings.Contains(l.ReaderMessage, "line ") || strings.Contains(l.ReaderMessage, "yaml: ") {
				t.Errorf("reader's message %q keeps its prefixes", l.ReaderMessage)
			}
		})
	}
	// Invalid UTF-8: the place of the byte, which the readers do not name.
	doc := "a: 1\nb:\n  c: \"x\xffy\"\n"
	_, err0 := ToJSON([]byte(doc))
	if err0 == nil {
		t.Fatal("ToJSON accepted invalid UTF-8")
	}
	if l := Locate([]byte(doc), err0); l.Line != 3 || l.Column != 8 || l.Message != "invalid UTF-8 (byte 0xff)" {
		t.Errorf("Locate of invalid UTF-8 = %+v, want 3:8", l)
	}
	// A document only the reader refuses (goccy's parser takes it) has no
	// position, and the reader's message.
	err := errors.New("error converting YAML to JSON: yaml: line 2: something only this reader minds")
	if l := Locate([]byte("a: 1\nb: 2\n"), err); l.Line != 0 || l.ReaderLine != 2 || l.ReaderMessage != "something only this reader minds" {
		t.Errorf("Locate of a document the parser takes = %+v", l)
	}
}
