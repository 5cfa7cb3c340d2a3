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
	"unicode/utf8"

	"github.com/spf13/cobra"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/util/jsonpath"

	"github.com/hubspoke/hubspoke/convert"
	"github.com/hubspoke/hubspoke/convert/rules"
	"github.com/hubspoke/hubspoke/internal/yamljson"
)

type convertOptions struct {
	files     []string
	recursive bool
	to        string
	rules     []string
	output    string
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
	cmd.Flags().StringArrayVar(&o.rules, "rules", nil, "rule file (repeatable, one per kind)")
	cmd.Flags().StringVarP(&o.output, "output", "o", "yaml", "output format: yaml, json, name, jsonpath=TEMPLATE or jsonpath-as-json=TEMPLATE")
	return cmd
}

// document is one input document with where it came from.
type document struct {
	source string // file name and document number, for errors
	json   []byte
}

func (o *convertOptions) run(cmd *cobra.Command) error {
	if len(o.files) == 0 {
		return usagef("no input: give -f FILE or -f -")
	}
	if len(o.rules) == 0 {
		return usagef("no rules: give --rules FILE")
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
	var docs []document
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
	for _, d := range docs {
		conv, items, err := convertDocument(d, convs, to)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", d.source, err))
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
		h, err := decodeHead(obj)
		if err != nil {
			return err
		}
		resource := strings.ToLower(h.Kind)
		if group, _, ok := strings.Cut(h.APIVersion, "/"); ok {
			resource += "." + group
		}
		fmt.Fprintf(&b, "%s/%s\n", resource, h.Metadata.Name)
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

// objectHead is what convert reads of a document before converting it.
type objectHead struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Items []json.RawMessage `json:"items"`
}

func decodeHead(obj []byte) (objectHead, error) {
	var h objectHead
	if err := json.Unmarshal(obj, &h); err != nil {
		return h, fmt.Errorf("not an object: %w", err)
	}
	return h, nil
}

// convertDocument converts one object, or every item of a List: then it
// returns the List and, apart, its items.
func convertDocument(d document, convs map[string]*convert.Converter, to string) (json.RawMessage, []json.RawMessage, error) {
	head, err := decodeHead(d.json)
	if err != nil {
		return nil, nil, err
	}
	if !strings.HasSuffix(head.Kind, "List") || head.Items == nil {
		obj, err := convertObject(d.json, head, convs, to)
		return obj, nil, err
	}
	var errs []string
	items := make([]json.RawMessage, len(head.Items))
	for i, it := range head.Items {
		h, err := decodeHead(it)
		if err == nil {
			items[i], err = convertObject(it, h, convs, to)
		}
		if err != nil {
			errs = append(errs, fmt.Sprintf("items[%d]: %v", i, err))
		}
	}
	if len(errs) > 0 {
		return nil, nil, errors.New(strings.Join(errs, "; "))
	}
	var list map[string]json.RawMessage
	if err := json.Unmarshal(d.json, &list); err != nil {
		return nil, nil, err
	}
	b, err := json.Marshal(items)
	if err != nil {
		return nil, nil, err
	}
	list["items"] = b
	out, err := json.Marshal(list)
	return out, items, err
}

// convertObject converts obj, whose head is already decoded, with the
// converter of its group and kind.
func convertObject(obj []byte, head objectHead, convs map[string]*convert.Converter, to string) (json.RawMessage, error) {
	group, _, found := strings.Cut(head.APIVersion, "/")
	if !found {
		group = ""
	}
	c := convs[group+"/"+head.Kind]
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

// readDocuments reads every document of a YAML or JSON file ("-" is stdin).
func readDocuments(name string, stdin io.Reader) ([]document, error) {
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
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	var docs []document
	if len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') {
		// JSON: keep each value's bytes exactly (number literals and all).
		dec := json.NewDecoder(bytes.NewReader(data))
		for i := 1; ; i++ {
			var raw json.RawMessage
			if err := dec.Decode(&raw); err == io.EOF {
				break
			} else if err != nil {
				return nil, fmt.Errorf("%s: JSON value %d: %w", jsonPosition(name, data, err), i, err)
			}
			if len(raw) > 0 && raw[0] == '[' {
				var items []json.RawMessage
				if err := json.Unmarshal(raw, &items); err != nil {
					return nil, fmt.Errorf("%s: JSON value %d: %w", name, i, err) // not reached: raw is valid JSON
				}
				for j, it := range items {
					docs = append(docs, document{source: fmt.Sprintf("%s: value %d[%d]", name, i, j), json: it})
				}
				continue
			}
			docs = append(docs, document{source: fmt.Sprintf("%s: value %d", name, i), json: raw})
		}
		return docs, nil
	}
	for i, chunk := range splitYAML(data) {
		if len(bytes.TrimSpace(stripComments(chunk.data))) == 0 {
			continue
		}
		j, err := yamljson.ToJSON(chunk.data)
		if err != nil {
			if l := yamljson.Locate(chunk.data, err); l.Line > 0 {
				// The position in the file, not in the document; the
				// reader's line is left out, which would be the
				// document's, and not the offending token's.
				return nil, fmt.Errorf("%s:%d:%d: document %d: not valid YAML: %s (%s)", name, chunk.line+l.Line-1, l.Column, i+1, l.Message, l.ReaderMessage)
			}
			return nil, fmt.Errorf("%s: document %d (line %d): %w", name, i+1, chunk.line, err)
		}
		if string(j) == "null" {
			continue
		}
		docs = append(docs, document{source: fmt.Sprintf("%s: document %d (line %d)", name, i+1, chunk.line), json: j})
	}
	return docs, nil
}

// jsonPosition names the file and the line and column where decoding data
// failed with err, as name:line:col; name alone when err has no offset.
func jsonPosition(name string, data []byte, err error) string {
	off := len(data) // unexpected end: the end of the data
	var se *json.SyntaxError
	if errors.As(err, &se) {
		off = int(se.Offset) - 1 // the offset is just past the offending byte
	} else if !errors.Is(err, io.ErrUnexpectedEOF) {
		return name
	}
	off = max(0, min(off, len(data)))
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	col := 1 + utf8.RuneCount(data[bytes.LastIndexByte(data[:off], '\n')+1:off])
	return fmt.Sprintf("%s:%d:%d", name, line, col)
}

type yamlChunk struct {
	line int // first line of the document
	data []byte
}

// splitYAML splits a YAML stream at "---" lines, remembering where each
// document starts so errors can name the line.
func splitYAML(data []byte) []yamlChunk {
	var chunks []yamlChunk
	cur := yamlChunk{line: 1}
	lines := bytes.SplitAfter(data, []byte("\n"))
	for n, l := range lines {
		t := bytes.TrimRight(l, " \t\r\n")
		if bytes.Equal(t, []byte("---")) || bytes.HasPrefix(t, []byte("--- ")) {
			chunks = append(chunks, cur)
			cur = yamlChunk{line: n + 2}
			continue
		}
		cur.data = append(cur.data, l...)
	}
	return append(chunks, cur)
}

// stripComments drops YAML comment lines, to spot documents that hold nothing.
func stripComments(b []byte) []byte {
	var out []byte
	for _, l := range bytes.Split(b, []byte("\n")) {
		t := bytes.TrimSpace(l)
		if len(t) == 0 || t[0] == '#' || string(t) == "---" {
			continue
		}
		out = append(out, l...)
		out = append(out, '\n')
	}
	return out
}
