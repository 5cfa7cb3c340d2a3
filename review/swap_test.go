package review

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/hubspoke/hubspoke/convert/rules"
)

func TestReplaceable(t *testing.T) {
	h, _ := newTestHandler(t, Options{Converters: []Converter{}, Replaceable: true})
	body := reviewBody(v1, "u", "example.com/v1", widget("v1alpha1", "a", ""))
	_, out := post(t, h, body)
	rr := decodeResponse(t, out)
	if want := "this webhook converts no kinds"; rr.Response.Result.Status != "Failure" || !strings.Contains(rr.Response.Result.Message, want) {
		t.Fatalf("with no converters: %s %q, want a failure saying %q", rr.Response.Result.Status, rr.Response.Result.Message, want)
	}
	if err := h.SetConverters([]Converter{widgets()}); err != nil {
		t.Fatal(err)
	}
	if _, out = post(t, h, body); decodeResponse(t, out).Response.Result.Status != "Success" {
		t.Fatalf("after SetConverters: %s", out)
	}
	err := h.SetConverters([]Converter{widgets(), widgets()})
	if err == nil || err.Error() != "review: two converters for kind Widget in group example.com" {
		t.Fatalf("duplicate: err = %v", err)
	}
	if _, out = post(t, h, body); decodeResponse(t, out).Response.Result.Status != "Success" {
		t.Fatalf("a refused SetConverters changed what is served: %s", out)
	}
	if _, err := NewHandler(Options{}); err == nil {
		t.Error("NewHandler with no converters and not Replaceable: want an error")
	}
}

// TestSetConvertersWhileServing swaps two rule sets while reviews of many
// objects are served: every review must succeed and be converted by one
// set from its first object to its last.
func TestSetConvertersWhileServing(t *testing.T) {
	load := func(to string) Converter {
		doc := fmt.Sprintf(`apiVersion: hubspoke.dev/v1alpha1
kind: Conversion
metadata: {name: widgets.example.com}
spec:
  group: example.com
  kind: Widget
  hub: v1
  spokes:
  - version: v1alpha1
    rules:
    - rename: {from: spec.size, to: spec.%s}
`, to)
		c, err := rules.Load("r.yaml", []byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	sets := [][]Converter{{load("a")}, {load("b")}}
	h, _ := newTestHandler(t, Options{Converters: sets[0]})
	objs := make([]string, 50)
	for i := range objs {
		objs[i] = widget("v1alpha1", fmt.Sprintf("w%d", i), "")
	}
	body := reviewBody(v1, "u", "example.com/v1", objs...)

	stop := make(chan struct{})
	var swaps sync.WaitGroup
	swaps.Add(1)
	go func() {
		defer swaps.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := h.SetConverters(sets[i%2]); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	var wg sync.WaitGroup
	var mu sync.Mutex
	seen := map[string]int{}
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				code, out := post(t, h, body)
				s := string(out)
				a, b := strings.Count(s, `"a":3`), strings.Count(s, `"b":3`)
				if code != 200 || !strings.Contains(s, `"status":"Success"`) || (a != len(objs) && b != len(objs)) {
					t.Errorf("a review saw a half-swapped state (%d by one set, %d by the other): %d %.300s", a, b, code, s)
					return
				}
				mu.Lock()
				seen[map[bool]string{true: "a", false: "b"}[a > 0]]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(stop)
	swaps.Wait()
	if seen["a"] == 0 || seen["b"] == 0 {
		t.Logf("reviews by set: %v (the swaps did not interleave with the reviews this run)", seen)
	}
}
