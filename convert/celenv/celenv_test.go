package celenv_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hubspoke/hubspoke/convert"
	"github.com/hubspoke/hubspoke/convert/celenv"
	"github.com/hubspoke/hubspoke/convert/rules"
)

const head = `apiVersion: hubspoke.dev/v1alpha1
kind: Conversion
metadata: {name: jobs.example.com}
spec:
  group: example.com
  kind: Job
  hub: v1
  spokes:
  - version: v1alpha1
    rules:
`

// The kubebuilder CronJob tutorial's schedule: a struct of cron fields in
// the spoke, the cron string in the hub. A missing spoke field is "*" in the
// hub, which comes back as "*": inexact, so the absence is kept.
const cronRule = `    - cel:
        from: spec.schedule
        toHub: >-
          [has(self.minute) ? string(self.minute) : "*",
           has(self.hour) ? string(self.hour) : "*",
           has(self.dayOfMonth) ? string(self.dayOfMonth) : "*",
           has(self.month) ? string(self.month) : "*",
           has(self.dayOfWeek) ? string(self.dayOfWeek) : "*"].join(" ")
        fromHub: >-
          {"minute": self.split(" ")[0], "hour": self.split(" ")[1],
           "dayOfMonth": self.split(" ")[2], "month": self.split(" ")[3],
           "dayOfWeek": self.split(" ")[4]}
        otherwise: keep
`

const percentRule = `    - cel:
        from: spec.ratio
        to: spec.weight
        toHub: string(self) + "%"
        fromHub: int(self.replace("%", ""))
`

// Ed25519 has no spelling in the spoke: fromHub says so with
// optional.none(), and the value is kept aside.
const algoRule = `    - cel:
        from: spec.keyAlgorithm
        to: spec.privateKey.algorithm
        toHub: 'self == "rsa" ? "RSA" : "ECDSA"'
        fromHub: 'self == "RSA" ? optional.of("rsa") : self == "ECDSA" ? optional.of("ecdsa") : optional.none()'
        otherwise: keep
`

func load(t *testing.T, rs string) *convert.Converter {
	t.Helper()
	c, err := rules.Load("f.yaml", []byte(head+rs))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func job(apiVersion, rest string) string {
	return `{"apiVersion":"example.com/` + apiVersion + `","kind":"Job","metadata":{"name":"j"` + rest + `}`
}

func TestConvert(t *testing.T) {
	tests := []struct {
		name, rules string
		in, to      string
		want        string // "" when wantErr
		wantErr     string
	}{
		{"struct to string", cronRule,
			job("v1alpha1", `},"spec":{"schedule":{"minute":"30","hour":"2","dayOfMonth":"*","month":"*","dayOfWeek":"1-5"}}`), "v1",
			job("v1", `},"spec":{"schedule":"30 2 * * 1-5"}`), ""},
		{"string to struct", cronRule,
			job("v1", `},"spec":{"schedule":"*/5 * * * *"}`), "v1alpha1",
			job("v1alpha1", `},"spec":{"schedule":{"dayOfMonth":"*","dayOfWeek":"*","hour":"*","minute":"*/5","month":"*"}}`), ""},
		{"absent spoke field kept", cronRule,
			job("v1alpha1", `},"spec":{"schedule":{"minute":"0"}}`), "v1",
			job("v1", `,"annotations":{"hubspoke.dev/preserved":"{\"v1alpha1\":{\"exact\":{\"/spec/schedule\":{\"value\":{\"minute\":\"0\"},\"as\":\"0 * * * *\"}}}}"}},"spec":{"schedule":"0 * * * *"}`), ""},
		{"kept value restored", cronRule,
			job("v1", `,"annotations":{"hubspoke.dev/preserved":"{\"v1alpha1\":{\"exact\":{\"/spec/schedule\":{\"value\":{\"minute\":\"0\"},\"as\":\"0 * * * *\"}}}}"}},"spec":{"schedule":"0 * * * *"}`), "v1alpha1",
			job("v1alpha1", `},"spec":{"schedule":{"minute":"0"}}`), ""},
		{"edit wins over kept value", cronRule,
			job("v1", `,"annotations":{"hubspoke.dev/preserved":"{\"v1alpha1\":{\"exact\":{\"/spec/schedule\":{\"value\":{\"minute\":\"0\"},\"as\":\"0 * * * *\"}}}}"}},"spec":{"schedule":"0 3 * * *"}`), "v1alpha1",
			job("v1alpha1", `},"spec":{"schedule":{"dayOfMonth":"*","dayOfWeek":"*","hour":"3","minute":"0","month":"*"}}`), ""},
		{"rename with computation", percentRule,
			job("v1alpha1", `},"spec":{"ratio":25,"other":1}`), "v1",
			job("v1", `},"spec":{"weight":"25%","other":1}`), ""},
		{"null moves as null", percentRule,
			job("v1alpha1", `},"spec":{"ratio":null}`), "v1",
			job("v1", `},"spec":{"weight":null}`), ""},
		{"inexact rejected", percentRule,
			job("v1", `},"spec":{"weight":"025%"}`), "v1alpha1", "",
			`at /spec/weight: rule cel spec.ratio -> spec.weight: fromHub turns "025%" into 25, which toHub turns into "25%"; the expressions do not invert each other on this value`},
		{"expression error", percentRule,
			job("v1", `},"spec":{"weight":"half"}`), "v1alpha1", "",
			`fromHub of "half": type conversion error from 'string' to 'int'`},
		{"type error", percentRule,
			job("v1alpha1", `},"spec":{"ratio":{"a":1}}`), "v1", "",
			`toHub of {"a":1}: no such overload`},
		{"cost limit", "    - cel:\n        from: spec.list\n        toHub: self.map(x, self.map(y, self.map(z, x + y + z))).size()\n        fromHub: self\n",
			job("v1alpha1", `},"spec":{"list":[`+strings.Repeat("1,", 299)+`1]}`), "v1", "",
			`: cost limit 1000000 exceeded`},
		{"no form: kept aside", algoRule,
			job("v1", `},"spec":{"privateKey":{"algorithm":"Ed25519","size":256}}`), "v1alpha1",
			job("v1alpha1", `,"annotations":{"hubspoke.dev/preserved":"{\"v1\":{\"fields\":{\"/spec/privateKey/algorithm\":\"Ed25519\"}}}"}},"spec":{"privateKey":{"size":256}}`), ""},
		{"no form: restored", algoRule,
			job("v1alpha1", `,"annotations":{"hubspoke.dev/preserved":"{\"v1\":{\"fields\":{\"/spec/privateKey/algorithm\":\"Ed25519\"}}}"}},"spec":{"privateKey":{"size":256}}`), "v1",
			job("v1", `},"spec":{"privateKey":{"size":256,"algorithm":"Ed25519"}}`), ""},
		{"no form: an edit wins", algoRule,
			job("v1alpha1", `,"annotations":{"hubspoke.dev/preserved":"{\"v1\":{\"fields\":{\"/spec/privateKey/algorithm\":\"Ed25519\"}}}"}},"spec":{"keyAlgorithm":"rsa"}`), "v1",
			job("v1", `},"spec":{"privateKey":{"algorithm":"RSA"}}`), ""},
		{"no form: fail", strings.Replace(algoRule, "otherwise: keep", "otherwise: fail", 1),
			job("v1", `},"spec":{"privateKey":{"algorithm":"Ed25519"}}`), "v1alpha1", "",
			`at /spec/privateKey/algorithm: rule cel spec.keyAlgorithm -> spec.privateKey.algorithm: fromHub of "Ed25519": the value has no form in the other version (otherwise: fail;`},
		{"result without JSON form", "    - cel:\n        from: spec.a\n        toHub: '{1: self}'\n        fromHub: self\n",
			job("v1alpha1", `},"spec":{"a":1}`), "v1", "",
			`map key 1 is int, not a string`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := load(t, tt.rules)
			out, err := c.Convert(nil, []byte(tt.in), "example.com/"+tt.to)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, string(out)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestRoundTrip converts spoke -> hub -> spoke and hub -> spoke -> hub and
// wants every object back (the keys of an object an expression builds come
// out sorted, so objects are compared as JSON values).
func TestRoundTrip(t *testing.T) {
	c := load(t, cronRule+percentRule)
	for _, in := range []string{
		job("v1alpha1", `},"spec":{"schedule":{"minute":"30","hour":"2","dayOfMonth":"*","month":"*","dayOfWeek":"1-5"},"ratio":7}`),
		job("v1alpha1", `},"spec":{"schedule":{"hour":"2"}}`),
		job("v1alpha1", `},"spec":{"schedule":{}}`),
		job("v1", `},"spec":{"schedule":"1 2 3 4 5","weight":"100%"}`),
	} {
		var from, to string
		if strings.Contains(in, "v1alpha1") {
			from, to = "example.com/v1alpha1", "example.com/v1"
		} else {
			from, to = "example.com/v1", "example.com/v1alpha1"
		}
		mid, err := c.Convert(nil, []byte(in), to)
		if err != nil {
			t.Fatal(err)
		}
		back, err := c.Convert(nil, mid, from)
		if err != nil {
			t.Fatal(err)
		}
		var want, got any
		if err := json.Unmarshal([]byte(in), &want); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(back, &got); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("round trip of %s\nvia %s\n(-want +got):\n%s", in, mid, diff)
		}
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct{ name, rules, want string }{
		{"compile error", "    - cel: {from: spec.a, toHub: 'self +', fromHub: self}\n",
			`f.yaml:11:34: spec.spokes[0].rules[0].cel.toHub: compiling "self +": ERROR: <input>:1:7: Syntax error`},
		{"undeclared", "    - cel:\n        from: spec.a\n        toHub: self\n        fromHub: obj.spec\n",
			`f.yaml:14:18: spec.spokes[0].rules[0].cel.fromHub: compiling "obj.spec": ERROR: <input>:1:1: undeclared reference to 'obj'`},
		{"one direction", "    - cel: {from: spec.a, toHub: self}\n", `f.yaml:11:12: spec.spokes[0].rules[0].cel.fromHub: missing; both directions are required`},
		{"bad otherwise", "    - cel: {from: spec.a, toHub: self, fromHub: self, otherwise: drop}\n", `f.yaml:11:66: spec.spokes[0].rules[0].cel.otherwise: cel spec.a: otherwise must be fail or keep, got "drop"`},
		{"metadata", "    - cel: {from: metadata.name, toHub: self, fromHub: self}\n", `spec.spokes[0].rules[0].cel: cel: from: path metadata.name`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := rules.Load("f.yaml", []byte(head+tt.rules))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v\nwant it to contain %q", err, tt.want)
			}
		})
	}
}

func TestCost(t *testing.T) {
	x, err := celenv.Compiler().Compile(`self.map(x, x * 2).size()`)
	if err != nil {
		t.Fatal(err)
	}
	small, err := celenv.Cost(x, []byte(`[1]`))
	if err != nil {
		t.Fatal(err)
	}
	large, err := celenv.Cost(x, []byte(`[1,2,3,4,5,6,7,8,9,10]`))
	if err != nil {
		t.Fatal(err)
	}
	if small == 0 || large <= small {
		t.Errorf("cost of 1 item %d, of 10 items %d; want 0 < small < large", small, large)
	}
}

func TestNotInverseIsMarked(t *testing.T) {
	c := load(t, percentRule)
	_, err := c.Convert(nil, []byte(job("v1", `},"spec":{"weight":"025%"}`)), "example.com/v1alpha1")
	if !errors.Is(err, convert.ErrNotInverse) {
		t.Fatalf("error %v does not wrap convert.ErrNotInverse", err)
	}
	_, err = c.Convert(nil, []byte(job("v1", `},"spec":{"weight":"half"}`)), "example.com/v1alpha1")
	if err == nil || errors.Is(err, convert.ErrNotInverse) {
		t.Fatalf("an expression error %v should fail without convert.ErrNotInverse", err)
	}
}

// TestEvalJSON: values go in as JSON and come out as JSON, scalars (read
// without a decoder) and composites alike.
func TestEvalJSON(t *testing.T) {
	id, err := celenv.Compiler().Compile("self")
	if err != nil {
		t.Fatal(err)
	}
	typ, err := celenv.Compiler().Compile("type(self) == int ? \"int\" : type(self) == double ? \"double\" : type(self) == string ? \"string\" : \"other\"")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ in, out, typ string }{
		{`3`, `3`, `"int"`},
		{`-12`, `-12`, `"int"`},
		{`1.5`, `1.5`, `"double"`},
		{`1e3`, `1000`, `"double"`},
		{`123456789012345678901234567890`, `1.2345678901234568e+29`, `"double"`},
		{`"plain"`, `"plain"`, `"string"`},
		{`"esc\"aped\n"`, `"esc\"aped\n"`, `"string"`},
		{`"\u00e9t\u00e9"`, `"été"`, `"string"`},
		{`""`, `""`, `"string"`},
		{` true `, `true`, `"other"`},
		{`null`, `null`, `"other"`},
		{`[1,"a",{"b":2.5}]`, `[1,"a",{"b":2.5}]`, `"other"`},
		{`{"z":1,"a":[true,null]}`, `{"a":[true,null],"z":1}`, `"other"`},
	} {
		got, err := id.Eval([]byte(tt.in))
		if err != nil || string(got) != tt.out {
			t.Errorf("self of %s = %s, %v; want %s", tt.in, got, err, tt.out)
		}
		got, err = typ.Eval([]byte(tt.in))
		if err != nil || string(got) != tt.typ {
			t.Errorf("type of %s = %s, %v; want %s", tt.in, got, err, tt.typ)
		}
	}
	for _, bad := range []string{``, `"`, `-`, `{`, `"a`} {
		if got, err := id.Eval([]byte(bad)); err == nil {
			t.Errorf("self of %q = %s, want an error", bad, got)
		}
	}
}

// TestDeterministic: iterating over an object of the input gives its keys
// in order, every time (cel-go iterates Go maps in random order).
func TestDeterministic(t *testing.T) {
	x, err := celenv.Compiler().Compile(`self.map(k, k + "=" + string(self[k]))`)
	if err != nil {
		t.Fatal(err)
	}
	in := []byte(`{"m":{"zeta":1,"alpha":2,"mid":3,"beta":4,"omega":5,"gamma":6}}`)
	nested, err := celenv.Compiler().Compile(`self.m.filter(k, self.m[k] > 1)`)
	if err != nil {
		t.Fatal(err)
	}
	for range 50 {
		out, err := x.Eval([]byte(`{"zeta":1,"alpha":2,"mid":3,"beta":4,"omega":5,"gamma":6}`))
		if err != nil || string(out) != `["alpha=2","beta=4","gamma=6","mid=3","omega=5","zeta=1"]` {
			t.Fatalf("got %s, %v", out, err)
		}
		out, err = nested.Eval(in)
		if err != nil || string(out) != `["alpha","beta","gamma","mid","omega"]` {
			t.Fatalf("nested: got %s, %v", out, err)
		}
	}
}

// TestInsideItems: a cel rule on a path through a list runs on every item;
// what it keeps is named by the item.
func TestInsideItems(t *testing.T) {
	c := load(t, `    - cel:
        from: 'spec.items[*].ratio'
        to: 'spec.items[*].weight'
        toHub: string(self) + "%"
        fromHub: 'self == "none" ? optional.none() : optional.of(int(self.replace("%", "")))'
        otherwise: keep
`)
	for _, tt := range []struct{ in, to, want string }{
		{job("v1alpha1", `},"spec":{"items":[{"name":"a","ratio":5},{"name":"b"},{"name":"c","ratio":7}]}`), "v1",
			job("v1", `},"spec":{"items":[{"name":"a","weight":"5%"},{"name":"b"},{"name":"c","weight":"7%"}]}`)},
		{job("v1", `},"spec":{"items":[{"name":"a","weight":"none"},{"name":"b","weight":"007%"}]}`), "v1alpha1",
			job("v1alpha1", `,"annotations":{"hubspoke.dev/preserved":"{\"v1\":{\"fields\":{\"/spec/items/0/weight\":\"none\"},\"exact\":{\"/spec/items/1/weight\":{\"value\":\"007%\",\"as\":7}}}}"}},"spec":{"items":[{"name":"a"},{"name":"b","ratio":7}]}`)},
		{job("v1alpha1", `,"annotations":{"hubspoke.dev/preserved":"{\"v1\":{\"fields\":{\"/spec/items/0/weight\":\"none\"},\"exact\":{\"/spec/items/1/weight\":{\"value\":\"007%\",\"as\":7}}}}"}},"spec":{"items":[{"name":"a"},{"name":"b","ratio":7}]}`), "v1",
			job("v1", `},"spec":{"items":[{"name":"a","weight":"none"},{"name":"b","weight":"007%"}]}`)},
	} {
		out, err := c.Convert(nil, []byte(tt.in), "example.com/"+tt.to)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tt.want, string(out)); diff != "" {
			t.Errorf("%s to %s (-want +got):\n%s", tt.in, tt.to, diff)
		}
	}
}

// TestKeptValueWithNoFormBack (issue 27, bug 1): under otherwise: keep, a
// hub value whose spoke value has no form on the way back (toHub gives
// optional.none() for false) is kept exact in the spoke and restored: the
// hub gets spec.ready: false back, and no spoke entry is left behind.
func TestKeptValueWithNoFormBack(t *testing.T) {
	c := load(t, `    - cel:
        from: spec.enabled
        to: spec.ready
        toHub: 'self ? optional.of(true) : optional.none()'
        fromHub: self
        otherwise: keep
`)
	for _, in := range []string{
		job("v1", `},"spec":{"ready":false}`),
		job("v1", `},"spec":{"ready":true}`),
	} {
		spoke, err := c.Convert(nil, []byte(in), "example.com/v1alpha1")
		if err != nil {
			t.Fatal(err)
		}
		back, err := c.Convert(nil, spoke, "example.com/v1")
		if err != nil {
			t.Fatal(err)
		}
		if string(back) != in {
			t.Errorf("hub -> spoke -> hub:\n got %s\nwant %s\n(spoke %s)", back, in, spoke)
		}
	}
	// A spoke false has no form in the hub: kept aside, and restored.
	in := job("v1alpha1", `},"spec":{"enabled":false}`)
	hub, err := c.Convert(nil, []byte(in), "example.com/v1")
	if err != nil {
		t.Fatal(err)
	}
	back, err := c.Convert(nil, hub, "example.com/v1alpha1")
	if err != nil || string(back) != in {
		t.Errorf("spoke -> hub -> spoke: %s, %v; want %s (hub %s)", back, err, in, hub)
	}
}

// TestNumbersAsTheAPIServerWritesThem (issue 27, bug 2): a double is
// written as the API server's encoder writes it (-6.854534149169922e-7,
// not e-07), so an identity expression gives the value back byte for byte
// and keeps nothing, and a computed value is stored as written.
func TestNumbersAsTheAPIServerWritesThem(t *testing.T) {
	c := load(t, "    - cel: {from: spec.x, toHub: self, fromHub: self}\n    - cel: {from: spec.y, toHub: self * 0.5, fromHub: self * 2.0, otherwise: keep}\n")
	for _, tt := range []struct{ in, want string }{
		{`"x":-6.854534149169922e-7`, `"x":-6.854534149169922e-7`},
		{`"x":1e21`, `"x":1e+21`},
		{`"x":1e+21`, `"x":1e+21`},
		{`"x":0.000001`, `"x":0.000001`},
		{`"x":1e20`, `"x":100000000000000000000`},
		{`"y":0.000001`, `"y":5e-7`},
	} {
		out, err := c.Convert(nil, []byte(job("v1alpha1", `},"spec":{`+tt.in+`}`)), "example.com/v1")
		if err != nil {
			t.Fatal(err)
		}
		if want := job("v1", `},"spec":{`+tt.want+`}`); string(out) != want {
			t.Errorf("%s:\n got %s\nwant %s", tt.in, out, want)
		}
	}
}
