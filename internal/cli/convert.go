package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/util/jsonpath"

	"github.com/hubspoke/hubspoke/apirules"
	"github.com/hubspoke/hubspoke/convert"
	"github.com/hubspoke/hubspoke/convert/rules"
	"github.com/hubspoke/hubspoke/internal/jsonscan"
	"github.com/hubspoke/hubspoke/internal/yamljson"
)

type convertOptions struct {
	files     []string
	recursive bool
	to        string
	// outputVersion is kubectl convert's name of --to.
	outputVersion string
	rules         []string
	output        string
}

func newConvertCmd() *cobra.Command {
	o := &convertOptions{}
	cmd := &cobra.Command{
		Use:   "convert -f FILE|DIR|- --to GROUP/VERSION --rules RULES.yaml [-o yaml|json]",
		Short: "Convert objects between versions offline, as kubectl convert would",
		Long: `Convert reads objects (YAML or JSON, several documents, or a List) and
writes them converted to the --to version with the given rule files.

One object comes out as that object, and one List as that List; several
documents come out as one List, the items of Lists among them in it, as
kubectl convert does. -f DIR reads the directory's .json, .yaml and .yml
files in name order (-R: and those of its subdirectories), as kubectl does.
Number literals and key order come out as they went in, for YAML as for
JSON. If any object fails, nothing is written and every failure is
reported with its document, object and JSON pointer.`,
		Example: `  hubspoke convert -f examples/widget/widget-v1alpha1.yaml --to example.com/v1 \
      --rules examples/widget/conversion.yaml
  kubectl get widgets -o json | hubspoke convert -f - --to v1alpha1 --rules conversion.yaml -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	cmd.Flags().StringArrayVarP(&o.files, "filename", "f", nil, "file or directory to convert, or - for standard input (repeatable)")
	cmd.Flags().BoolVarP(&o.recursive, "recursive", "R", false, "read the directories given with -f recursively")
	cmd.Flags().StringVar(&o.to, "to", "", "target GROUP/VERSION (or VERSION when the rule files share one group)")
	cmd.Flags().StringVar(&o.outputVersion, "output-version", "", "the same as --to, as kubectl convert names it")
	cmd.Flags().StringArrayVar(&o.rules, "rules", nil, "rule file (repeatable, one per kind)")
	cmd.Flags().StringVarP(&o.output, "output", "o", "yaml", "output format: yaml, json, name, jsonpath=TEMPLATE or jsonpath-as-json=TEMPLATE")
	return cmd
}

func (o *convertOptions) run(cmd *cobra.Command) error {
	if len(o.files) == 0 {
		return usagef("no input: give -f FILE or -f -")
	}
	if len(o.rules) == 0 {
		return usagef("no rules: give --rules FILE")
	}
	if o.outputVersion != "" {
		if o.to != "" {
			return usagef("--to and --output-version are the same flag: give one")
		}
		o.to = o.outputVersion
	}
	if o.to == "" {
		return usagef("no target version: give --to GROUP/VERSION")
	}
	jp, err := o.jsonPath()
	if err != nil {
		return err
	}
	convs := map[string]*convert.Converter{} // by group/kind
	from := map[string]string{}              // group/kind -> rule file
	groups := map[string]bool{}
	for _, f := range o.rules {
		c, err := rules.LoadFile(f)
		if err != nil {
			return err
		}
		gk := c.Group() + "/" + c.Kind()
		if prev, ok := from[gk]; ok {
			return usagef("--rules %s and --rules %s both define conversions of %s.%s: give one rule file per kind", prev, f, c.Kind(), c.Group())
		}
		convs[gk], from[gk] = c, f
		groups[c.Group()] = true
	}
	to := o.to
	if !strings.Contains(to, "/") {
		if len(groups) != 1 {
			return usagef("--to %s has no group and the rule files name several; write GROUP/VERSION", to)
		}
		for g := range groups {
			to = g + "/" + to
		}
	}
	if err := checkTarget(to, convs); err != nil {
		return err
	}
	files, err := expandFiles(o.files, o.recursive)
	if err != nil {
		return err
	}
	var docs []yamljson.Document
	for _, f := range files {
		d, err := readDocuments(f, cmd.InOrStdin())
		if err != nil {
			return err
		}
		docs = append(docs, d...)
	}
	if len(docs) == 0 {
		return fmt.Errorf("no objects in the input")
	}
	// out holds the converted objects, the items of Lists among several
	// documents flattened into it, as kubectl convert does; one document
	// that is a List comes out as that List.
	var out []json.RawMessage
	var errs []string
	var single json.RawMessage
	for i := range docs {
		conv, items, err := convertDocument(&docs[i], convs, to)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		if items == nil {
			items = []json.RawMessage{conv}
		}
		out, single = append(out, items...), conv
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "\n"))
	}
	if out == nil {
		out = []json.RawMessage{} // "items": [], not null
	}
	var result []byte
	if len(docs) == 1 {
		result = single
	} else {
		list, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "metadata": map[string]any{}, "items": out})
		if err != nil {
			return err
		}
		result = list
	}
	w := cmd.OutOrStdout()
	if jp != nil {
		return writeJSONPath(w, jp, result)
	}
	if o.output == "name" {
		return writeNames(w, out)
	}
	if o.output == "json" {
		var buf bytes.Buffer
		if err := json.Indent(&buf, result, "", "    "); err != nil {
			return err
		}
		buf.WriteByte('\n')
		_, err := w.Write(buf.Bytes())
		return err
	}
	y, err := yamljson.FromJSON(result)
	if err != nil {
		return fmt.Errorf("write yaml: %w", err)
	}
	_, err = w.Write(y)
	return err
}

// jsonPath checks -o and, for jsonpath=TEMPLATE or
// jsonpath-as-json=TEMPLATE, parses the template as kubectl does (missing
// keys print nothing, as with kubectl's default
// --allow-missing-template-keys).
func (o *convertOptions) jsonPath() (*jsonpath.JSONPath, error) {
	switch o.output {
	case "yaml", "json", "name":
		return nil, nil
	}
	format, tmpl, ok := strings.Cut(o.output, "=")
	if !ok || (format != "jsonpath" && format != "jsonpath-as-json") {
		return nil, usagef("unknown output format %q (want yaml, json, name, jsonpath=TEMPLATE or jsonpath-as-json=TEMPLATE)", o.output)
	}
	if tmpl == "" {
		return nil, usagef("-o %s: template format specified but no template given", format)
	}
	jp := jsonpath.New("output").AllowMissingKeys(true)
	jp.EnableJSONOutput(format == "jsonpath-as-json")
	if err := jp.Parse(tmpl); err != nil {
		return nil, usagef("-o %s: error parsing jsonpath %s, %v", format, tmpl, err)
	}
	return jp, nil
}

// writeJSONPath runs the template on the output (the object, or the List
// of several), decoded as kubectl decodes an object for its printers.
func writeJSONPath(w io.Writer, jp *jsonpath.JSONPath, result []byte) error {
	var obj any
	if err := utiljson.Unmarshal(result, &obj); err != nil {
		return err
	}
	var b bytes.Buffer
	if err := jp.Execute(&b, obj); err != nil {
		return fmt.Errorf("error executing jsonpath: %w", err)
	}
	_, err := w.Write(b.Bytes())
	return err
}

// writeNames writes each object as kind.group/name, one a line, as
// kubectl's name printer (-o name) does.
func writeNames(w io.Writer, objs []json.RawMessage) error {
	var b bytes.Buffer
	for _, obj := range objs {
		h, err := apirules.ReadHead(obj)
		if err != nil {
			return err
		}
		resource := strings.ToLower(string(h.Kind))
		if group, _, ok := strings.Cut(string(h.APIVersion), "/"); ok {
			resource += "." + group
		}
		fmt.Fprintf(&b, "%s/%s\n", resource, h.Name)
	}
	_, err := w.Write(b.Bytes())
	return err
}

// checkTarget makes an unknown --to one usage error, before any object is
// read: the group must be one the rule files convert, and the version one
// they declare for it.
func checkTarget(to string, convs map[string]*convert.Converter) error {
	group, version, _ := strings.Cut(to, "/")
	var known []string
	seen := map[string]bool{}
	var groups []string
	for _, c := range convs {
		if !seen[c.Group()] {
			seen[c.Group()] = true
			groups = append(groups, c.Group())
		}
		if c.Group() != group {
			continue
		}
		for _, v := range c.Versions() {
			if v == version {
				return nil
			}
			if !slices.Contains(known, v) {
				known = append(known, v)
			}
		}
	}
	if known == nil {
		sort.Strings(groups)
		return usagef("--to %s: the rule files convert group %s, not %q", to, strings.Join(groups, ", "), group)
	}
	sort.Strings(known)
	return usagef("--to %s: %s is not a version of the rule files, which declare versions %s", to, version, strings.Join(known, ", "))
}

// expandFiles replaces each directory among names by its .json, .yaml and
// .yml files in name order, and those of its subdirectories when
// recursive, as kubectl -f DIR [-R] does.
func expandFiles(names []string, recursive bool) ([]string, error) {
	var out []string
	for _, name := range names {
		if name == "-" {
			out = append(out, name)
			continue
		}
		fi, err := os.Stat(name)
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() {
			out = append(out, name)
			continue
		}
		n := len(out)
		err = filepath.WalkDir(name, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if path != name && !recursive {
					return filepath.SkipDir
				}
				return nil
			}
			switch filepath.Ext(path) {
			case ".json", ".yaml", ".yml":
				out = append(out, path)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		if len(out) == n {
			return nil, fmt.Errorf("%s: no .json, .yaml or .yml files in the directory", name)
		}
	}
	return out, nil
}

// convertDocument converts one object, or every item of a List: then it
// returns the List (its other bytes as they were) and, apart, its items.
// Errors name the document's file, line and column and the object.
func convertDocument(d *yamljson.Document, convs map[string]*convert.Converter, to string) (json.RawMessage, []json.RawMessage, error) {
	head, err := apirules.ReadHead(d.JSON)
	if err != nil {
		return nil, nil, docError(d, -1, 0, err)
	}
	items, span, isList := listItems(d.JSON, head)
	if !isList {
		obj, err := convertObject(d.JSON, head, convs, to)
		if err != nil {
			return nil, nil, docError(d, -1, 0, err)
		}
		return obj, nil, nil
	}
	var errs []string
	out := make([]json.RawMessage, len(items))
	var s jsonscan.Scanner
	for i, it := range items {
		h, err := apirules.ReadHeadWith(&s, it.data, fmt.Sprintf("items[%d]", i))
		if err == nil {
			out[i], err = convertObject(it.data, h, convs, to)
		}
		if err != nil {
			errs = append(errs, docError(d, i, it.off, err).Error())
		}
	}
	if len(errs) > 0 {
		return nil, nil, errors.New(strings.Join(errs, "\n"))
	}
	// The List as it came, its items replaced.
	list := append([]byte(nil), d.JSON[:span[0]]...)
	list = append(list, '[')
	for i, it := range out {
		if i > 0 {
			list = append(list, ',')
		}
		list = append(list, it...)
	}
	list = append(list, ']')
	list = append(list, d.JSON[span[1]:]...)
	return list, out, nil
}

// docError places err, the failure of d's object or (item >= 0) of its
// List's item at offset off of d.JSON, in d's file: a syntax error at its
// line and column, a conversion error at those of its pointer.
func docError(d *yamljson.Document, item, off int, err error) error {
	var se *jsonscan.SyntaxError
	if errors.As(err, &se) {
		pos := d.OffsetPosition(off + se.Off)
		return fmt.Errorf("%s:%d:%d: %s: %s", d.File, pos.Line, pos.Column, d.Label(), se.Msg)
	}
	ptr, label := "", d.Label()
	var ce *convert.Error
	isConv := errors.As(err, &ce)
	if item >= 0 {
		ptr = fmt.Sprintf("/items/%d", item)
		if isConv {
			label += fmt.Sprintf(": items[%d]", item) // the error's pointer is the item's
		}
	}
	if isConv {
		ptr += ce.Pointer
	}
	if ptr == "" {
		return fmt.Errorf("%s: %w", d, err)
	}
	pos, _ := d.Position(ptr) // or its nearest ancestor's: a pointer a rule would write
	return fmt.Errorf("%s:%d:%d: %s: %w", d.File, pos.Line, pos.Column, label, err)
}

// listItem is an item of a List: its JSON and its offset in the List's.
type listItem struct {
	data []byte
	off  int
}

// listItems returns the items of doc, a checked JSON object whose head is
// head, when it is a List (a kind ending in List, with an items array), and
// the span of its items array.
func listItems(doc []byte, head apirules.Head) ([]listItem, [2]int, bool) {
	if !strings.HasSuffix(string(head.Kind), "List") {
		return nil, [2]int{}, false
	}
	var s jsonscan.Scanner
	s.Reset(doc)
	var items []listItem
	var span [2]int
	found := false
	_, _ = s.Object(jsonscan.SkipSpace(doc, 0), 1, func(key []byte, v int) (int, error) {
		if string(key) != "items" || doc[v] != '[' {
			if string(key) == "items" {
				found, items = false, nil // the last of duplicates wins
			}
			return s.Value(v, 1)
		}
		found, items = true, items[:0]
		end, err := s.Array(v, 2, func(_, i int) (int, error) {
			end, err := s.Value(i, 2)
			items = append(items, listItem{data: doc[i:end], off: i})
			return end, err
		})
		span = [2]int{v, end}
		return end, err
	})
	return items, span, found
}

// convertObject converts obj, whose head is already read, with the
// converter of its group and kind.
func convertObject(obj []byte, head apirules.Head, convs map[string]*convert.Converter, to string) (json.RawMessage, error) {
	group, _, found := strings.Cut(string(head.APIVersion), "/")
	if !found {
		group = ""
	}
	c := convs[group+"/"+string(head.Kind)]
	if c == nil {
		known := make([]string, 0, len(convs))
		for k := range convs {
			known = append(known, k)
		}
		sort.Strings(known)
		return nil, fmt.Errorf("no rules for kind %q in group %q (rules loaded for %s)", head.Kind, group, strings.Join(known, ", "))
	}
	return c.Convert(nil, obj, to)
}

// readDocuments reads every document of a YAML or JSON file ("-" is
// stdin).
func readDocuments(name string, stdin io.Reader) ([]yamljson.Document, error) {
	var data []byte
	var err error
	if name == "-" {
		data, err = io.ReadAll(stdin)
		name = "<stdin>"
	} else {
		data, err = os.ReadFile(name)
	}
	if err != nil {
		return nil, err
	}
	return yamljson.Read(name, data)
}
