// Package convert is hubspoke's hub-and-spoke conversion engine.
//
// A Definition names one group and kind, a hub version and its spokes; each
// spoke carries the rules that map it to the hub, written once in the
// spoke -> hub direction. The engine derives every inverse, and converts any
// version to any other through the hub: A -> hub -> B.
//
// The engine works on the raw JSON of each object. It validates the object in
// one pass (with internal/jsonscan: exactly the JSON the API server's decoder
// takes unchanged — valid UTF-8, numbers within float64, nesting within its
// limit counted from a ConversionReview) and expands only the
// objects that lie on a rule's path; every other byte is copied from the
// input. So metadata, status, unknown fields, key order, number literals,
// string escapes and unicode come out exactly as they went in, and a
// conversion allocates nothing in the steady state, however many fields no
// rule touches.
//
// The scan first marks, 64 bytes at a time, the bytes at which a string can
// end or needs a closer look (package internal/stopbits, AVX2 on amd64);
// a string's end is then found with a shift and a count of trailing zeros,
// however long it is, and the scanner's work is mostly the grammar between
// strings.
//
// Rules: Rename, Enum and EnumWith (many to one, hub-only values, values
// that are numbers or booleans), Duration and DurationToInt, IntToString,
// StringToInt, Scale and ScaleRound, Quantity (Kubernetes quantities as
// strings, integers or objects), ListToMap and MapToList, ListToItem and
// ItemToList (a one-item list and its item; ListToItemEmpty for an empty
// list that is absent), Split and Join (a string and its parts, by a
// Pattern), HubOnly, SpokeOnly and OnlyOn (defaults, derived values,
// constants, deliberate drops), Missing (what an absent field stands for),
// CEL (expressions of a CELCompiler, which package convert/celenv
// provides), and Funcs for Go code on the same raw Object API. Modify adds
// a condition (When), a restore policy and the removal of an empty result
// to any of them. Every rule works through lists and maps: a Path such as
// spec.containers[name=*].image, spec.backends.*.weight or
// spec.routes[**].timeout (a tree of lists, to any depth) runs the rule on
// every item it selects; a Path may also name one label or annotation.
// Data a version cannot hold (a hub-only field, a rounded duration's exact
// value, a list's order, a value with no form there) is kept in the
// PreservedAnnotation and restored on the way back; an edit made through
// the other version since wins over a kept value, unless the rule says
// otherwise.
//
// Errors are *Error values naming the object, the JSON pointer, the rule and
// the reason. Package convert/rules loads Definitions from YAML rule files;
// package convert/crconvert runs existing controller-runtime Hub/Convertible
// code as a rule.
package convert
