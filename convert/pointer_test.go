package convert_test

import (
	"testing"

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
