// Package check proves a hub-and-spoke conversion before it ships.
//
// It runs these checks against a CustomResourceDefinition and a converter
// (the engine, or a running webhook through package check/webhook):
//
//   - static checks of the CRD and the rule file (Static): one storage
//     version, structural schemas, the conversion stanza (strategy None is
//     correct when every version has the same schema), rule paths that
//     exist, domain containment of every mapped field, lossy fields and
//     differing defaults; the rule file is the parsed model of
//     convert/rules, the one parser of the rule language;
//   - laws on objects generated from each version's schema with rapid's
//     generators and validated with the API server's own validators,
//     schema and CEL rules (Laws): spoke->hub->spoke and hub->spoke->hub
//     identity, agreement of every conversion path, determinism; every
//     conversion step checked against the API server's rules for a
//     converted object and the target schema, after the API server's own
//     coercion (Coerce). Every distinct failure is reported with the number
//     of objects that showed it and a minimised counterexample;
//   - rolling-update safety between two conversions (Rollout), breaking
//     changes between two revisions of a CRD (Evolution), and golden
//     fixtures (Fixtures).
//
// Every check appends Findings to a Report, which prints as text for people
// or JSON for CI. The package imports no client-go, no net/http, no testing
// and no flag; the converter is any value implementing Converter.
package check

import (
	"fmt"
	"strings"
)

// Converter converts objects of one group and kind between versions. The
// engine's *convert.Converter satisfies it, and so can a client of a running
// conversion webhook.
type Converter interface {
	Group() string
	Kind() string
	// Hub returns the hub version, e.g. "v1".
	Hub() string
	// Versions returns every version, hub first.
	Versions() []string
	// Convert appends to dst the JSON of obj converted to toAPIVersion
	// ("group/version").
	Convert(dst, obj []byte, toAPIVersion string) ([]byte, error)
}

// Severity of a finding.
type Severity string

// Severities. Only errors make the command exit 1.
const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
)

// Check names, the Check field of a Finding.
const (
	CheckCRDValidation = "crd-validation"
	CheckStorage       = "storage-version"
	CheckStructural    = "structural-schema"
	CheckVersions      = "rule-versions"
	CheckHubServed     = "hub-served"
	CheckStrategy      = "conversion-strategy"
	CheckRulePath      = "rule-path"
	CheckDomain        = "domain"
	CheckLossy         = "lossy-field"
	CheckDefault       = "default"
	LawSpokeRoundTrip  = "spoke-hub-spoke"
	LawHubRoundTrip    = "hub-spoke-hub"
	LawPathAgreement   = "path-agreement"
	LawDeterminism     = "determinism"
	LawValidOutput     = "valid-output"
	LawConvertible     = "convertible"
	LawRefused         = "refused"
	LawConvertBack     = "convert-back"
	LawRollout         = "rollout-agreement"
	CheckCoerced       = "api-server-coerced"
	CheckFixture       = "fixture"
	CheckGeneratorNote = "generator"
)

// Finding is one problem found.
type Finding struct {
	// Check names the check or law (the Check* and Law* constants).
	Check string `json:"check"`
	// Severity is error or warning.
	Severity Severity `json:"severity"`
	// From and To are the versions involved (To empty for one-version
	// findings, both empty for CRD-wide ones).
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
	// Path is the JSON pointer of the field in From; ToPath the pointer of
	// the corresponding field in To, when it differs.
	Path   string `json:"path,omitempty"`
	ToPath string `json:"toPath,omitempty"`
	// FromConstraint and ToConstraint are the two constraints in conflict,
	// for domain findings ("minimum 0" against "minimum 1").
	FromConstraint string `json:"fromConstraint,omitempty"`
	ToConstraint   string `json:"toConstraint,omitempty"`
	// Message says what is wrong.
	Message string `json:"message"`
	// Pos is "file:line" of the CRD or rule entry concerned, when known.
	Pos string `json:"pos,omitempty"`
	// Input is the minimal counterexample (law findings), Output what the
	// conversion produced, and Expected what it should have produced.
	Input    any `json:"input,omitempty"`
	Output   any `json:"output,omitempty"`
	Expected any `json:"expected,omitempty"`
	// Count is how many distinct objects showed this failure (law
	// findings): generated objects, or for a step's findings the objects
	// that step converted; Input is the smallest of them, minimised.
	Count int `json:"count,omitempty"`
	// Objects names the live objects that showed this failure (Live):
	// "namespace/name", or "name" for a cluster-scoped resource; the
	// first 100, Count counts them all.
	Objects []string `json:"objects,omitempty"`

	size  int     // size of Input's JSON, to keep the smallest example
	group string  // Path folded by schemaPointer (findings are grouped by it)
	objID string  // digest of the object that showed it (counted once)
	input *sample // Input as a sample, while shrinking
	job   job     // the law that found it, while shrinking
}

// pair returns the group key "from -> to" (or "from", or "crd").
func (f Finding) pair() string {
	switch {
	case f.From != "" && f.To != "":
		return f.From + " -> " + f.To
	case f.From != "":
		return f.From
	case f.To != "":
		return f.To
	}
	return "crd"
}

// Line renders the finding on one line, without its version pair.
func (f Finding) Line() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-7s %s", f.Severity, f.Check)
	if f.Path != "" {
		fmt.Fprintf(&b, " %s", f.Path)
		if f.ToPath != "" && f.ToPath != f.Path {
			fmt.Fprintf(&b, " -> %s", f.ToPath)
		}
	}
	b.WriteString(": ")
	b.WriteString(f.Message)
	if f.FromConstraint != "" || f.ToConstraint != "" {
		fmt.Fprintf(&b, " (%s: %s; %s: %s)", orDash(f.From), orDash(f.FromConstraint), orDash(f.To), orDash(f.ToConstraint))
	}
	if f.Pos != "" {
		fmt.Fprintf(&b, " [%s]", f.Pos)
	}
	switch {
	case len(f.Objects) > 0:
		b.WriteString(objectList(f.Objects, f.Count))
	case f.Count > 1:
		fmt.Fprintf(&b, " (%d objects)", f.Count)
	}
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// objectList renders the objects of a Live finding: the first five, and
// how many more of count.
func objectList(objs []string, count int) string {
	const shown = 5
	n := min(len(objs), shown)
	s := " (objects: " + strings.Join(objs[:n], ", ")
	if more := max(count, len(objs)) - n; more > 0 {
		s += fmt.Sprintf(" and %d more", more)
	}
	return s + ")"
}
