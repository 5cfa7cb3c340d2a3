// Package flags is the Go half of the gofuncs example: a conversion the
// rule language does not express. The spoke (v1alpha1) configures a Runner
// with command-line flags, spec.args: ["--level=3", "--verbose"]; the hub
// (v1) with typed options, spec.options: {verbose: true, level: 3}.
// Parsing each flag by its name into a typed field is code.
//
// Neither side can say everything the other can: a flag the hub has no
// option for ("--color"), or flags in another order, have no form in the
// hub; "verbose: false" has none in the spoke (the flag is absent either
// way). The exact value is kept in the preserved annotation with
// Object.KeepExact, the store the built-in rules use, and restored by
// Object.RestoreExact when the object comes back, while the converted value
// is unchanged (an edit made through the other version wins).
package flags

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/hubspoke/hubspoke/convert"
)

// Name is the name the rule file gives the funcs: funcs: {name: args-to-options}.
const Name = "args-to-options"

var (
	argsPath    = convert.MustPath("spec.args")
	optionsPath = convert.MustPath("spec.options")
)

// Rule returns the funcs rule.
func Rule() (convert.Rule, error) { return convert.Funcs(Name, toHub, fromHub) }

// Options are the hub's typed options.
type Options struct {
	Verbose bool   `json:"verbose,omitempty"`
	Level   *int64 `json:"level,omitempty"`
}

// toHub parses spec.args into spec.options.
func toHub(o *convert.Object) error {
	raw, ok, err := o.Get(argsPath)
	if err != nil || !ok {
		return err
	}
	var args []string
	if _, err := o.Decode(argsPath, &args); err != nil {
		return err
	}
	if _, _, err := o.Delete(argsPath); err != nil {
		return err
	}
	// Options the hub kept when the object left it, if the args are still
	// what they became.
	if kept, ok, err := o.RestoreExact(optionsPath, raw); err != nil || ok {
		if err != nil {
			return err
		}
		return o.Set(optionsPath, kept)
	}
	opts, err := parse(args)
	if err != nil {
		return err
	}
	out, err := json.Marshal(opts)
	if err != nil {
		return err
	}
	if !slices.Equal(args, format(opts)) {
		if err := o.KeepExact(argsPath, raw, out); err != nil {
			return err
		}
	}
	return o.Set(optionsPath, out)
}

// fromHub writes spec.options as spec.args.
func fromHub(o *convert.Object) error {
	raw, ok, err := o.Get(optionsPath)
	if err != nil || !ok {
		return err
	}
	var opts Options
	if _, err := o.Decode(optionsPath, &opts); err != nil {
		return err
	}
	if _, _, err := o.Delete(optionsPath); err != nil {
		return err
	}
	if kept, ok, err := o.RestoreExact(argsPath, raw); err != nil || ok {
		if err != nil {
			return err
		}
		return o.Set(argsPath, kept)
	}
	args := format(opts)
	out, err := json.Marshal(args)
	if err != nil {
		return err
	}
	if back, _ := parse(args); !sameJSON(raw, back) {
		if err := o.KeepExact(optionsPath, raw, out); err != nil {
			return err
		}
	}
	return o.Set(argsPath, out)
}

// parse reads flags into options; flags without an option are skipped
// (toHub keeps the exact args for them).
func parse(args []string) (Options, error) {
	var opts Options
	for _, a := range args {
		switch name, value, _ := strings.Cut(a, "="); name {
		case "--verbose":
			opts.Verbose = true
		case "--level":
			n, err := strconv.ParseInt(value, 10, 64)
			if err != nil {
				// A *convert.Error names the field, as the built-in
				// rules' errors do.
				return opts, &convert.Error{Index: -1, Pointer: argsPath.Pointer(), Err: fmt.Errorf("%q: the level is not an integer", a)}
			}
			opts.Level = &n
		}
	}
	return opts, nil
}

// format writes options as flags, sorted.
func format(opts Options) []string {
	args := []string{}
	if opts.Verbose {
		args = append(args, "--verbose")
	}
	if opts.Level != nil {
		args = append(args, "--level="+strconv.FormatInt(*opts.Level, 10))
	}
	slices.Sort(args)
	return args
}

// sameJSON reports whether raw holds the same JSON value as v.
func sameJSON(raw []byte, v any) bool {
	b, err := json.Marshal(v)
	if err != nil {
		return false
	}
	var x, y any
	return json.Unmarshal(raw, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}
