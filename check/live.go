package check

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hubspoke/hubspoke/schema"
)

// Live check names.
const (
	// CheckLiveObject: an object read from the cluster is not what the
	// CRD describes (not a JSON object, another apiVersion or kind), or
	// does not validate against the schema of the version it was read at
	// (a warning: its conversions are checked all the same).
	CheckLiveObject = "live-object"
	// LawRoundTrip: A -> B -> A is the identity, for two spokes A and B
	// (with the hub on one side, the laws are spoke-hub-spoke and
	// hub-spoke-hub).
	LawRoundTrip = "round-trip"
)

// liveObjectNames caps the objects a Live finding lists.
const liveObjectNames = 100

// Live checks the objects that exist in a cluster, before a rollout of
// new rules or a new CRD: each object, as read at its stored version, is
// converted to every served version and back, through every pair of
// versions, and every step is judged as the laws judge it (the API
// server's rules for a converted object, its coercion, the target
// schema, round trips, path agreement, determinism). A refusal is an
// error here: an existing object that cannot be read through a served
// version breaks every client of that version.
//
// Objects are fed one at a time (Check), as a paged LIST reads them, so
// memory stays bounded: the report keeps one finding per distinct failure
// (with the first objects that showed it and their count) and one Case
// per object. The caller reads the cluster; the package imports no
// client.
type Live struct {
	e       *lawEnv
	version string
	report  *Report
	byKey   map[string]*Finding
	order   []string
}

// NewLive returns a Live check of conv's conversions of the objects of
// crd read at version (the storage version of the CRD in the cluster).
// The versions checked are those of conv that crd serves, and version.
func NewLive(crd *schema.CRD, conv Converter, version string) (*Live, error) {
	if !slices.Contains(conv.Versions(), version) {
		return nil, fmt.Errorf("the objects are read at version %s, which the conversion does not know (it converts %s)", version, strings.Join(conv.Versions(), ", "))
	}
	if crd.Version(version) == nil {
		return nil, fmt.Errorf("the objects are read at version %s, which the CRD checked does not have (it has %s)", version, strings.Join(crd.VersionNames(), ", "))
	}
	e := newLawEnv(crd, conv, Options{})
	e.versions = []string{version}
	for _, v := range conv.Versions() {
		if ver := crd.Version(v); v != version && ver != nil && ver.Served {
			e.versions = append(e.versions, v)
		}
	}
	return &Live{e: e, version: version, report: &Report{}, byKey: map[string]*Finding{}}, nil
}

// Versions returns the versions each object is converted through, the
// version it is read at first.
func (l *Live) Versions() []string { return slices.Clone(l.e.versions) }

// Check converts one object (its JSON, as read at the Live's version)
// through every pair of versions and returns its findings, each once.
// They are added to the report too.
func (l *Live) Check(data []byte) []Finding {
	e := l.e
	defer clear(e.steps) // every object is converted once: keep no cache
	name := "(unnamed)"
	var fs []*Finding
	obj, err := decodeObject(data)
	if err == nil {
		name = objectName(obj)
		if av, kind := obj["apiVersion"], obj["kind"]; av != e.av(l.version) || kind != e.conv.Kind() {
			err = fmt.Errorf("it is %v %v, want %s %s", av, kind, e.av(l.version), e.conv.Kind())
		}
	}
	if err != nil {
		fs = append(fs, &Finding{Check: CheckLiveObject, From: l.version, Message: fmt.Sprintf("the object read cannot be checked: %v", err)})
		return l.record(name, fs)
	}
	in := &sample{obj: obj, data: data}
	invalid := false
	if ver := e.crd.Version(l.version); ver.Structural != nil {
		if probs := e.vals.validate(ver, deepCopy(obj)); len(probs) > 0 {
			invalid = true
			msgs := make([]string, len(probs))
			for i, p := range probs {
				msgs[i] = p.String()
			}
			fs = append(fs, &Finding{Check: CheckLiveObject, Severity: SeverityWarning, From: l.version, Path: schema.FieldPointer(probs[0].Path),
				Message: fmt.Sprintf("the object does not validate against the %s schema of the CRD checked: %s; it cannot be written back unchanged (its conversions are checked all the same)", l.version, strings.Join(msgs, "; "))})
		}
	}
	// The object in every version it converts to.
	forms := map[string]*sample{l.version: in}
	for _, v := range e.versions[1:] {
		out, notes := e.step(in, l.version, v)
		fs = append(fs, notes...)
		if out != nil {
			forms[v] = out
		}
	}
	for _, a := range e.versions {
		for _, b := range e.versions {
			if a == b || forms[a] == nil {
				continue
			}
			law := LawRoundTrip
			switch e.hub {
			case b:
				law = LawSpokeRoundTrip
			case a:
				law = LawHubRoundTrip
			}
			for _, f := range e.roundTrip(a, b, law)(forms[a]) {
				if f.Input == nil {
					f.Input = forms[a].obj
				}
				fs = append(fs, f)
			}
		}
	}
	for _, b := range e.versions[1:] {
		if len(e.versions) > 2 {
			fs = append(fs, e.pathAgreement(l.version, b)(in)...)
		}
		fs = append(fs, e.determinism(l.version, b)(in)...)
	}
	for _, f := range fs {
		if f.Input == nil {
			f.Input = obj
		}
		if invalid && f.Check == LawValidOutput {
			// Its other forms inherit what its own version refuses; the
			// API server's validation ratcheting lets unchanged invalid
			// values be written back.
			f.Severity = SeverityWarning
			f.Message += " (the object read does not validate against its own version's schema either)"
		}
	}
	return l.record(name, fs)
}

// record keeps each distinct finding of one object once, as a live
// finding (a refusal is an error), adds it to the report's findings and
// the object's case, and returns them.
func (l *Live) record(name string, fs []*Finding) []Finding {
	l.report.LiveObjects++
	seen := map[string]bool{}
	var mine []Finding
	for _, f := range fs {
		if f.Severity == "" {
			f.Severity = SeverityError
		}
		if f.Check == LawRefused {
			f.Severity = SeverityError
		}
		for _, v := range l.e.versions {
			f.Message = strings.ReplaceAll(f.Message, "a valid "+v+" object", "the object as "+v)
		}
		k := findingKey(f)
		if seen[k] {
			continue
		}
		seen[k] = true
		mine = append(mine, *f)
		if g, ok := l.byKey[k]; ok {
			g.Count++
			if len(g.Objects) < liveObjectNames {
				g.Objects = append(g.Objects, name)
			}
			continue
		}
		g := *f
		g.Input, g.Output, g.Expected = shown(g.Input), shown(g.Output), shown(g.Expected)
		g.Count, g.Objects = 1, []string{name}
		g.size, g.objID, g.input, g.job = 0, "", nil, job{}
		l.byKey[k] = &g
		l.order = append(l.order, k)
	}
	c := Case{Suite: "live", Name: name, findings: make([]Finding, len(mine))}
	for i, f := range mine {
		f.Input, f.Output, f.Expected = nil, nil, nil // the report's finding has the first object's
		f.group, f.objID, f.input, f.job = "", "", nil, job{}
		c.findings[i] = f
		mine[i].group, mine[i].objID, mine[i].input, mine[i].job = "", "", nil, job{}
	}
	l.report.Cases = append(l.report.Cases, c)
	return mine
}

// Report returns what Check found so far: one finding per distinct
// failure (check, versions, field), with the first objects that showed it
// and how many did, in the order first seen; and one Case per object.
func (l *Live) Report() *Report {
	r := &Report{LiveObjects: l.report.LiveObjects, Cases: slices.Clone(l.report.Cases)}
	for _, k := range l.order {
		f := *l.byKey[k]
		f.Objects = slices.Clone(f.Objects)
		r.Add(f)
	}
	return r
}

// shown is an object as a finding shows it: without its managedFields,
// which a cluster's objects carry and which say nothing about a
// conversion.
func shown(v any) any {
	obj, ok := v.(map[string]any)
	if !ok {
		return v
	}
	md, ok := obj["metadata"].(map[string]any)
	if !ok || md["managedFields"] == nil {
		return v
	}
	out := maps.Clone(obj)
	md = maps.Clone(md)
	delete(md, "managedFields")
	out["metadata"] = md
	return out
}

// objectName is "namespace/name", or "name" without a namespace.
func objectName(obj map[string]any) string {
	md, _ := obj["metadata"].(map[string]any)
	name, _ := md["name"].(string)
	if name == "" {
		name = "(unnamed)"
	}
	if ns, _ := md["namespace"].(string); ns != "" {
		return ns + "/" + name
	}
	return name
}
