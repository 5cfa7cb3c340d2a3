package deploy_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"

	"github.com/hubspoke/hubspoke/deploy"
)

// The Helm chart charts/hubspoke is generated from deploy.RenderPlatform:
// `go test ./deploy -run TestChart -update` writes it, and TestChart fails
// when the checked-in chart differs from what deploy renders (an edit of
// deploy not regenerated, or an edit of the chart by hand). test/e2e
// renders the chart with helm and compares it with RenderPlatform for the
// same choices.
//
// How: RenderPlatform renders a template configuration in which every
// choice a value makes is marked (tokens in names, every optional object
// and field present); each object is turned into YAML with the marks
// replaced by template expressions, and wrapped in the condition of its
// value.

const chartDir = "../charts/hubspoke"

// Tokens for the names the values choose.
const (
	nsToken     = "hsns0tmpl"
	prefixToken = "hspfx0tmpl"
)

// A hole is a field of one object that a value decides.
type hole struct {
	kind, name string // the object (name with the prefix token)
	path       []any  // keys and list indexes; a string key "args=--addr=" picks the list item with that prefix
	expr       string // the field's value, a template expression (empty: keep the value)
	cond       string // the field only when this holds (empty: always)
}

func chartConfig() deploy.PlatformOptions {
	return deploy.PlatformOptions{
		Namespace: nsToken, Prefix: prefixToken,
		WebhookImage: "webhook-image-token", OperatorImage: "operator-image-token",
		HostNetwork: true, PriorityClassName: "priority-token", Certs: deploy.CertManager,
		NetworkPolicy: true, ServiceMonitor: true, PrometheusRule: true, GrafanaDashboard: true,
		NoNamespace: true,
	}
}

func chartHoles() []hole {
	hook := prefixToken + "-webhook"
	op := prefixToken + "-operator"
	pod := []any{"spec", "template", "spec"}
	c0 := append(append([]any{}, pod...), "containers", 0)
	at := func(base []any, more ...any) []any { return append(append([]any{}, base...), more...) }
	const certManager = `eq .Values.certs.mode "cert-manager"`
	return []hole{
		{kind: "Deployment", name: hook, path: []any{"spec", "replicas"}, expr: "{{ .Values.replicas }}"},
		{kind: "Deployment", name: hook, path: at(c0, "image"), expr: "{{ .Values.image.webhook | quote }}"},
		{kind: "Deployment", name: hook, path: at(c0, "args=--addr"), expr: `"--addr=:{{ .Values.port }}"`},
		{kind: "Deployment", name: hook, path: at(c0, "args=--max-request-bytes"), expr: `"--max-request-bytes={{ include "hubspoke.sizing" (list . "bytes") }}"`},
		{kind: "Deployment", name: hook, path: at(c0, "args=--selector"), expr: `"--selector={{ .Values.selector }}"`},
		{kind: "Deployment", name: hook, path: at(c0, "ports", 0, "containerPort"), expr: "{{ .Values.port }}"},
		{kind: "Deployment", name: hook, path: at(c0, "resources", "requests", "memory"), expr: `{{ include "hubspoke.sizing" (list . "request") }}`},
		{kind: "Deployment", name: hook, path: at(c0, "resources", "limits", "memory"), expr: `{{ include "hubspoke.sizing" (list . "limit") }}`},
		{kind: "Deployment", name: hook, path: at(c0, "env", 0, "value"), expr: `{{ include "hubspoke.sizing" (list . "gomemlimit") | quote }}`},
		{kind: "Deployment", name: hook, path: at(pod, "hostNetwork"), cond: ".Values.hostNetwork"},
		{kind: "Deployment", name: hook, path: at(pod, "dnsPolicy"), cond: ".Values.hostNetwork"},
		{kind: "Deployment", name: hook, path: at(pod, "priorityClassName"), expr: "{{ .Values.priorityClassName | quote }}", cond: ".Values.priorityClassName"},
		{kind: "Service", name: hook, path: []any{"spec", "ports", 0, "targetPort"}, expr: "{{ .Values.port }}"},
		{kind: "NetworkPolicy", name: hook, path: []any{"spec", "ingress", 0, "ports", 0, "port"}, expr: "{{ .Values.port }}"},
		{kind: "Deployment", name: op, path: at(c0, "image"), expr: "{{ .Values.image.operator | quote }}"},
		{kind: "Deployment", name: op, path: at(c0, "args=--selector"), expr: `"--selector={{ .Values.selector }}"`},
		{kind: "Deployment", name: op, path: at(c0, "args=--inject-ca-from"), cond: certManager},
		{kind: "ValidatingWebhookConfiguration", name: op, path: []any{"metadata", "annotations"}, cond: certManager},
		{kind: "ValidatingWebhookConfiguration", name: op, path: []any{"webhooks", 0, "clientConfig", "caBundle"}, expr: "{{ .Values.certs.caBundle | b64enc | quote }}", cond: `eq .Values.certs.mode "hubspoke"`},
	}
}

// objectCond is the condition of a whole object.
func objectCond(kind, name string) string {
	switch {
	case strings.HasPrefix(kind, "cert-manager.io/"):
		return `eq .Values.certs.mode "cert-manager"`
	case kind == "networking.k8s.io/NetworkPolicy":
		return ".Values.networkPolicy.enabled"
	case kind == "monitoring.coreos.com/ServiceMonitor":
		return ".Values.serviceMonitor.enabled"
	case kind == "monitoring.coreos.com/PrometheusRule":
		return ".Values.prometheusRule.enabled"
	case kind == "ConfigMap" && strings.HasSuffix(name, "-dashboard"):
		return ".Values.grafanaDashboard.enabled"
	}
	return ""
}

// generateChart returns the chart's files, by path under the chart.
func generateChart(t *testing.T) map[string][]byte {
	t.Helper()
	objs, err := deploy.RenderPlatform(chartConfig())
	if err != nil {
		t.Fatal(err)
	}
	ms, err := deploy.Unstructured(objs)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	holes := chartHoles()
	used := make([]bool, len(holes))
	for i, m := range ms {
		kind := m["kind"].(string)
		if g := strings.Split(m["apiVersion"].(string), "/"); len(g) == 2 && strings.Contains(g[0], ".") {
			kind = g[0] + "/" + kind
		}
		meta := m["metadata"].(map[string]any)
		name := meta["name"].(string)
		short := kind[strings.LastIndex(kind, "/")+1:]
		marks := map[string]hole{}
		for j, h := range holes {
			if h.kind == short && h.name == name {
				mark := fmt.Sprintf("HSMARK%d", j)
				if !setMark(m, h.path, mark, h.expr != "") {
					t.Fatalf("%s %s: no field at %v", kind, name, h.path)
				}
				marks[mark] = h
				used[j] = true
			}
		}
		y, err := yaml.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		// Prometheus' and Grafana's own {{ }} are text to helm.
		text := helmEscape.Replace(string(y))
		text = applyMarks(t, text, marks)
		text = strings.ReplaceAll(text, nsToken, "{{ .Release.Namespace }}")
		text = strings.ReplaceAll(text, prefixToken, "{{ .Values.prefix }}")
		if c := objectCond(kind, name); c != "" {
			text = "{{- if " + c + " }}\n" + text + "{{- end }}\n"
		}
		file := fmt.Sprintf("templates/%02d-%s-%s.yaml", i+1, strings.ToLower(short), strings.TrimPrefix(strings.TrimPrefix(name, prefixToken), "-"))
		file = strings.ReplaceAll(strings.ReplaceAll(file, "--", "-"), "-.yaml", ".yaml")
		files[file] = []byte(generatedHeader + text)
	}
	for j, u := range used {
		if !u {
			t.Fatalf("hole %d (%s %s) matched no object", j, holes[j].kind, holes[j].name)
		}
	}
	files["templates/_helpers.tpl"] = []byte(helpers())
	files["values.yaml"] = []byte(values())
	files["values.schema.json"] = valuesSchema(t)
	files["Chart.yaml"] = []byte(generatedHeader + `apiVersion: v2
name: hubspoke
description: hubspoke's conversion webhook serving Conversion objects live, and its operator (admission, rollout, CRDs switched when safe). The same objects as hubspoke deploy --operator.
type: application
version: 0.1.0
appVersion: "latest"
kubeVersion: ">=1.30.0-0"
home: https://github.com/hubspoke/hubspoke
`)
	return files
}

const generatedHeader = "# Generated by `go test ./deploy -run TestChart -update` from deploy.RenderPlatform; do not edit.\n"

// setMark replaces the field at path with mark (a value mark when value,
// else a key mark on the field's key, keeping its value).
func setMark(root any, path []any, mark string, value bool) bool {
	cur := root
	for i, p := range path {
		last := i == len(path)-1
		switch k := p.(type) {
		case int:
			l, ok := cur.([]any)
			if !ok || k >= len(l) {
				return false
			}
			if last {
				l[k] = mark
				return true
			}
			cur = l[k]
		case string:
			m, ok := cur.(map[string]any)
			if !ok {
				return false
			}
			if key, prefix, isItem := strings.Cut(k, "="); isItem {
				l, ok := m[key].([]any)
				if !ok {
					return false
				}
				for j, it := range l {
					if s, ok := it.(string); ok && strings.HasPrefix(s, prefix+"=") {
						if value {
							l[j] = mark
						} else {
							l[j] = mark + "|" + s
						}
						return true
					}
				}
				return false
			}
			v, ok := m[k]
			if last {
				if !ok {
					v = "" // a field added by the template, only when its condition holds
				}
				if value {
					delete(m, k)
					m[mark+"|"+k] = mark
				} else {
					delete(m, k)
					m[mark+"|"+k] = v
				}
				return true
			}
			if !ok {
				return false
			}
			cur = v
		}
	}
	return false
}

var helmEscape = strings.NewReplacer("{{", `{{ "{{" }}`, "}}", `{{ "}}" }}`)

var markRE = regexp.MustCompile(`HSMARK\d+`)

// applyMarks turns the marks in the YAML into template expressions and
// conditions.
func applyMarks(t *testing.T, y string, marks map[string]hole) string {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(y, "\n"), "\n")
	var out []string
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		mark := markRE.FindString(line)
		if mark == "" {
			out = append(out, line)
			continue
		}
		h := marks[mark]
		indent := len(line) - len(strings.TrimLeft(line, " "))
		// key marks: "MARK|key: value"; item marks: "- MARK|item" or "- MARK".
		line = strings.Replace(line, mark+"|", "", 1)
		if h.expr != "" {
			line = strings.Replace(line, mark, h.expr, 1)
			line = strings.Replace(line, "'"+h.expr+"'", h.expr, 1)
		}
		// The field's block: the lines after it that are more indented.
		end := i + 1
		for end < len(lines) && (len(lines[end])-len(strings.TrimLeft(lines[end], " ")) > indent) && !strings.HasPrefix(strings.TrimLeft(lines[end], " "), "- ") {
			end++
		}
		block := append([]string{line}, lines[i+1:end]...)
		if h.cond != "" {
			out = append(out, "{{- if "+h.cond+" }}")
			out = append(out, block...)
			out = append(out, "{{- end }}")
		} else {
			out = append(out, block...)
		}
		i = end - 1
	}
	text := strings.Join(out, "\n") + "\n"
	if m := markRE.FindString(text); m != "" {
		t.Fatalf("mark %s left in:\n%s", m, text)
	}
	return text
}

// helpers returns _helpers.tpl: the memory sizing of every chart size,
// computed by deploy.Resources.
func helpers() string {
	var b strings.Builder
	b.WriteString(generatedHeader)
	b.WriteString(`{{- /* hubspoke.sizing: (list . "bytes"|"request"|"limit"|"gomemlimit") for .Values.maxRequestBytes, from deploy.Resources. */ -}}
{{- define "hubspoke.sizing" -}}
{{- $root := index . 0 -}}
{{- $what := index . 1 -}}
{{- $sizes := dict -}}
`)
	for _, s := range deploy.ChartSizes {
		r := deploy.Resources(s.Bytes)
		fmt.Fprintf(&b, "{{- $_ := set $sizes %q (dict \"bytes\" %q \"request\" %q \"limit\" %q \"gomemlimit\" %q) -}}\n",
			s.Name, strconv.FormatInt(s.Bytes, 10),
			resource.NewQuantity(r.MemoryRequest, resource.BinarySI).String(),
			resource.NewQuantity(r.MemoryLimit, resource.BinarySI).String(),
			strconv.FormatInt(r.GoMemLimit, 10))
	}
	b.WriteString(`{{- $size := get $sizes (toString $root.Values.maxRequestBytes) -}}
{{- if not $size -}}
{{- fail (printf "maxRequestBytes %v: want one of %s" $root.Values.maxRequestBytes (keys $sizes | sortAlpha | join ", ")) -}}
{{- end -}}
{{- get $size $what -}}
{{- end -}}
`)
	return b.String()
}

func values() string {
	def := deploy.PlatformOptions{}
	_ = def
	return generatedHeader + fmt.Sprintf(`# The values of hubspoke's chart: the choices of hubspoke deploy --operator
# (docs/production.md). Objects go into the release's namespace.

# prefix names the objects: PREFIX-webhook, PREFIX-operator.
prefix: %s
image:
  # The slim webhook image (cmd/hubspoke-webhook), or your own built with webhookmain.
  webhook: %s
  # The hubspoke image, for the operator.
  operator: %s
# Webhook replicas: at least 2.
replicas: %d
# The largest ConversionReview accepted; the pods' memory is sized from it.
# One of %s.
maxRequestBytes: 32Mi
# The webhook's port in its pod: 10250 for clusters whose control plane
# reaches nodes only on 443 and 10250 (the Service's port stays 443).
port: %d
# Run the webhook in the nodes' network (control planes that cannot reach
# pod addresses); port must then be free on every node (not 10250).
hostNetwork: false
priorityClassName: ""
# Serve only the Conversions matching this label selector.
selector: ""
certs:
  # cert-manager: Issuers and Certificates, cainjector fills the caBundles.
  # hubspoke: the Secrets PREFIX-webhook-ca, PREFIX-webhook-serving-tls and
  # PREFIX-operator-serving-tls exist (hubspoke deploy --operator --certs
  # hubspoke renders them); caBundle is their CA, in PEM.
  mode: cert-manager
  caBundle: ""
networkPolicy:
  enabled: false
serviceMonitor:
  enabled: false
prometheusRule:
  enabled: false
grafanaDashboard:
  enabled: false
`, deploy.DefaultPrefix, deploy.DefaultImage, deploy.DefaultOperatorImage, deploy.DefaultReplicas, sizeNames(), deploy.ContainerPort)
}

func sizeNames() string {
	var n []string
	for _, s := range deploy.ChartSizes {
		n = append(n, s.Name)
	}
	return strings.Join(n, ", ")
}

func valuesSchema(t *testing.T) []byte {
	var sizes []string
	for _, s := range deploy.ChartSizes {
		sizes = append(sizes, s.Name)
	}
	enabled := map[string]any{"type": "object", "additionalProperties": false, "properties": map[string]any{"enabled": map[string]any{"type": "boolean"}}}
	schema := map[string]any{
		"$schema":              "https://json-schema.org/draft-07/schema#",
		"type":                 "object",
		"additionalProperties": false,
		"properties": map[string]any{
			"prefix": map[string]any{"type": "string", "pattern": "^[a-z]([-a-z0-9]*[a-z0-9])?$", "maxLength": deploy.MaxPrefixLength},
			"image": map[string]any{"type": "object", "additionalProperties": false, "properties": map[string]any{
				"webhook": map[string]any{"type": "string", "minLength": 1}, "operator": map[string]any{"type": "string", "minLength": 1}}},
			"replicas":          map[string]any{"type": "integer", "minimum": 2},
			"maxRequestBytes":   map[string]any{"enum": sizes},
			"port":              map[string]any{"type": "integer", "minimum": 1024, "maximum": 65535},
			"hostNetwork":       map[string]any{"type": "boolean"},
			"priorityClassName": map[string]any{"type": "string"},
			"selector":          map[string]any{"type": "string"},
			"certs": map[string]any{"type": "object", "additionalProperties": false, "properties": map[string]any{
				"mode": map[string]any{"enum": []string{string(deploy.CertManager), string(deploy.Hubspoke)}}, "caBundle": map[string]any{"type": "string"}},
				"if":   map[string]any{"properties": map[string]any{"mode": map[string]any{"const": string(deploy.Hubspoke)}}},
				"then": map[string]any{"properties": map[string]any{"caBundle": map[string]any{"minLength": 1}}}},
			"networkPolicy":    enabled,
			"serviceMonitor":   enabled,
			"prometheusRule":   enabled,
			"grafanaDashboard": enabled,
		},
		// 10250 is the kubelet's port on every node.
		"if":   map[string]any{"properties": map[string]any{"hostNetwork": map[string]any{"const": true}}},
		"then": map[string]any{"properties": map[string]any{"port": map[string]any{"not": map[string]any{"const": 10250}}}},
	}
	b, err := json.MarshalIndent(schema, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// TestChart: the checked-in chart is what deploy renders.
func TestChart(t *testing.T) {
	files := generateChart(t)
	if *update {
		if err := os.RemoveAll(filepath.Join(chartDir, "templates")); err != nil {
			t.Fatal(err)
		}
		for name, data := range files {
			p := filepath.Join(chartDir, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	var have []string
	err := filepath.WalkDir(chartDir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(chartDir, p)
		if rel != "README.md" && rel != ".helmignore" {
			have = append(have, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%v (go test ./deploy -run TestChart -update writes the chart)", err)
	}
	var want []string
	for name := range files {
		want = append(want, name)
	}
	sort.Strings(have)
	sort.Strings(want)
	if strings.Join(have, "\n") != strings.Join(want, "\n") {
		t.Errorf("the chart's files:\n%s\nwant:\n%s\n(go test ./deploy -run TestChart -update regenerates it)", strings.Join(have, "\n"), strings.Join(want, "\n"))
	}
	for _, name := range want {
		got, err := os.ReadFile(filepath.Join(chartDir, name))
		if err != nil {
			continue
		}
		if !bytes.Equal(got, files[name]) {
			t.Errorf("%s differs from what deploy renders (go test ./deploy -run TestChart -update regenerates it)", name)
		}
	}
}
