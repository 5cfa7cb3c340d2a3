package convert

import (
	"errors"
	"fmt"
	"strings"
)

// ErrUnknownVersion is wrapped by errors for an apiVersion the converter does
// not declare.
var ErrUnknownVersion = errors.New("unknown version")

// Error is a conversion failure of one object. It says which object (Index,
// Namespace, Name), where in it (Pointer, an RFC 6901 JSON pointer), which
// rule failed (Rule) and why (Err), so that one message tells a user what to
// fix.
type Error struct {
	// Index of the object in its batch; -1 when it was converted alone.
	Index int
	// Namespace and Name of the object, when it has them.
	Namespace, Name string
	// From and To are the apiVersions of the conversion step that failed.
	From, To string
	// Pointer is the JSON pointer of the offending value ("" for the whole
	// object).
	Pointer string
	// Rule names the rule that failed, e.g. "enum spec.mode" ("" when no
	// rule was involved, such as invalid JSON).
	Rule string
	// Err is the reason.
	Err error

	// abs marks a pointer that is absolute even when the error comes from
	// a rule running on one item of a list (the preserved annotation).
	abs bool
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("object")
	if e.Index >= 0 {
		fmt.Fprintf(&b, " [%d]", e.Index)
	}
	if e.Name != "" {
		b.WriteByte(' ')
		if e.Namespace != "" {
			b.WriteString(e.Namespace)
			b.WriteByte('/')
		}
		b.WriteString(e.Name)
	}
	switch {
	case e.From != "" && e.To != "":
		fmt.Fprintf(&b, " (%s -> %s)", e.From, e.To)
	case e.To != "":
		fmt.Fprintf(&b, " (to %s)", e.To)
	case e.From != "":
		fmt.Fprintf(&b, " (from %s)", e.From)
	}
	if e.Pointer != "" {
		fmt.Fprintf(&b, " at %s", e.Pointer)
	}
	if e.Rule != "" {
		fmt.Fprintf(&b, ": rule %s", e.Rule)
	}
	b.WriteString(": ")
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// BatchError holds the failures of a batch conversion, in object order.
type BatchError struct {
	Errors []*Error
}

func (e *BatchError) Error() string {
	if len(e.Errors) == 1 {
		return e.Errors[0].Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d objects failed to convert: ", len(e.Errors))
	for i, err := range e.Errors {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(err.Error())
	}
	return b.String()
}

// Unwrap returns the individual errors, so errors.Is and errors.As see them.
func (e *BatchError) Unwrap() []error {
	errs := make([]error, len(e.Errors))
	for i, err := range e.Errors {
		errs[i] = err
	}
	return errs
}
