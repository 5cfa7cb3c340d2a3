package convert_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/hubspoke/hubspoke/apirules"
	"github.com/hubspoke/hubspoke/convert"
)

func TestPointerToken(t *testing.T) {
	for key, token := range map[string]string{"a": "a", "~": "~0", "/": "~1", "a/b~c": "a~1b~0c", "~1": "~01", "": ""} {
		if got := convert.EscapePointerToken(key); got != token {
			t.Errorf("EscapePointerToken(%q) = %q, want %q", key, got, token)
		}
		if got, err := convert.UnescapePointerToken(token); err != nil || got != key {
			t.Errorf("UnescapePointerToken(%q) = %q, %v, want %q", token, got, err, key)
		}
	}
	for _, bad := range []string{"~", "a~2", "~~1"} {
		if _, err := convert.UnescapePointerToken(bad); err == nil {
			t.Errorf("UnescapePointerToken(%q) accepted", bad)
		}
	}
}

// TestUnusualTopLevelKeys: keys holding a JSON pointer's special characters
// pass through the engine untouched, and a rule can name them by pointer.
func TestUnusualTopLevelKeys(t *testing.T) {
	rename, err := convert.Rename(convert.MustPath("/a~1b"), convert.MustPath("/c~0d"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := convert.New(convert.Definition{Group: "example.com", Kind: "Widget", Hub: "v1",
		Spokes: []convert.Spoke{{Version: "v1alpha1", Rules: []convert.Rule{rename}}}})
	if err != nil {
		t.Fatal(err)
	}
	in := `{"apiVersion":"example.com/v1alpha1","kind":"Widget","metadata":{"name":"w"},"~":1,"/":2,"a/b":3,"~1":4}`
	hub, err := c.Convert(nil, []byte(in), "example.com/v1")
	if err != nil {
		t.Fatal(err)
	}
	want := `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"~":1,"/":2,"c~d":3,"~1":4}`
	if string(hub) != want {
		t.Errorf("got  %s\nwant %s", hub, want)
	}
	back, err := c.Convert(nil, hub, "example.com/v1alpha1")
	if err != nil {
		t.Fatal(err)
	}
	if string(back) != in {
		t.Errorf("round trip %s\nwant       %s", back, in)
	}
}

// TestStringToIntBeyondTheAPIServer: a decimal string too long for the API
// server's decoder fails the conversion, naming the rule and the reason,
// instead of producing an object the API server rejects.
func TestStringToIntBeyondTheAPIServer(t *testing.T) {
	rule, err := convert.StringToInt(convert.MustPath("spec.port"), convert.MustPath("spec.port"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := convert.New(convert.Definition{Group: "example.com", Kind: "Widget", Hub: "v1",
		Spokes: []convert.Spoke{{Version: "v1alpha1", Rules: []convert.Rule{rule}}}})
	if err != nil {
		t.Fatal(err)
	}
	obj := func(port string) []byte {
		return []byte(`{"apiVersion":"example.com/v1alpha1","kind":"Widget","metadata":{"name":"w"},"spec":{"port":"` + port + `"}}`)
	}
	big := strings.Repeat("9", 308) // about 1e308: still a float64
	if out, err := c.Convert(nil, obj(big), "example.com/v1"); err != nil || !strings.Contains(string(out), `"port":`+big+`}`) {
		t.Fatalf("308 digits: %s, %v", out, err)
	}
	_, err = c.Convert(nil, obj(strings.Repeat("9", 400)), "example.com/v1")
	want := `object w (example.com/v1alpha1 -> example.com/v1) at /spec/port: rule stringToInt spec.port: the string cannot become a number: number 99999999999999999999...9999999999 (400 characters) is out of range`
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("error %v\nwant   %s...", err, want)
	}
}

// metadataRules are rules that change metadata: hubOnly writes the
// preserved annotation (of spec.paused), and a Funcs rule adds a label when
// spec.label is set.
func metadataRules(tb testing.TB) []convert.Rule {
	tb.Helper()
	hubOnly, err := convert.HubOnly(convert.MustPath("spec.paused"), nil)
	if err != nil {
		tb.Fatal(err)
	}
	addLabel := func(o *convert.Object) error {
		if _, ok, _ := o.Get(convert.MustPath("spec.label")); ok {
			return o.Set(convert.MustPath("metadata.labels.added"), []byte(`"yes"`))
		}
		return nil
	}
	funcs, err := convert.Funcs("label", addLabel, addLabel)
	if err != nil {
		tb.Fatal(err)
	}
	return []convert.Rule{hubOnly, funcs}
}

// FuzzConvertHead holds ConvertHead to what it writes: the head it reports
// is the head apirules reads from the output, whatever the metadata, and
// whether rules changed it (a preserved annotation, a label a Funcs rule
// adds) or not.
func FuzzConvertHead(f *testing.F) {
	for _, m := range []string{`{"name":"w"}`, `{"name":"w","namespace":"","uid":"\u0075","labels":{"a":"b"},"annotations":null}`,
		`null`, `[]`, `{}`, `{"labels":"x"}`, `{"name":1,"annotations":{"k":"v"}}`, `{"name":"a\"b","labels":{}}`} {
		f.Add(m, true)
		f.Add(m, false)
	}
	c, err := convert.New(convert.Definition{Group: "example.com", Kind: "Widget", Hub: "v1",
		Spokes: []convert.Spoke{{Version: "v1alpha1", Rules: metadataRules(f)}}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, meta string, label bool) {
		spec := `{"paused":true}`
		if label {
			spec = `{"label":1}`
		}
		for _, to := range []string{"example.com/v1alpha1", "example.com/v1"} {
			from := "example.com/v1"
			if to == from {
				from = "example.com/v1alpha1"
			}
			in := `{"apiVersion":"` + from + `","kind":"Widget","metadata":` + meta + `,"spec":` + spec + `}`
			head := apirules.Head{Name: []byte("stale")}
			out, err := c.ConvertHead(nil, []byte(in), to, &head)
			if err != nil {
				return
			}
			want, err := apirules.ReadHead(out)
			if err != nil {
				t.Fatalf("%s -> %s: output the API server cannot decode: %v", in, out, err)
			}
			if !reflect.DeepEqual(head, want) {
				t.Fatalf("%s -> %s:\nConvertHead %+v\noutput      %+v", in, out, head, want)
			}
		}
	})
}
