package convert

import (
	"bytes"

	"github.com/hubspoke/hubspoke/apirules"
	"github.com/hubspoke/hubspoke/internal/jsonscan"
)

// ConvertHead is Convert that also fills h with the head (apirules.Head)
// of the object it writes, taken from the converted object as it is
// written — apiVersion and kind from the converted tree, metadata read
// from its bytes (the original's, with their stop bits, when no rule
// changed it) — so that a caller checking the answer against package
// apirules (the webhook's self-check) need not scan the whole output
// again. Like the API server, it reads the last of duplicate keys. h's
// fields are copied into their own memory, reusing its capacity: reuse one
// Head for many calls and the steady state allocates nothing. On an error
// h is left as it was.
func (c *Converter) ConvertHead(dst, obj []byte, to string, h *apirules.Head) ([]byte, error) {
	st := getState()
	defer putState(st)
	out, err := c.convert(st, dst, obj, to)
	if err != nil {
		return dst, err
	}
	if err := st.obj.head(h); err != nil {
		return dst, &Error{Index: -1, To: to, Err: err}
	}
	return out, nil
}

// head fills h from the converted object.
func (o *Object) head(h *apirules.Head) error {
	root := o.root.obj
	h.APIVersion = stringMember(h.APIVersion, root, "apiVersion")
	h.Kind = stringMember(h.Kind, root, "kind")
	name, ns, uid, labels, ann := h.Name, h.Namespace, h.UID, h.Labels, h.Annotations
	h.Metadata, h.MetadataNotObject = false, false
	h.Name, h.Namespace, h.UID, h.Labels, h.Annotations = nil, nil, nil, nil, nil
	i := lastMember(root, "metadata")
	if i < 0 {
		return nil
	}
	// The metadata's bytes: a part of the original, scanned with its stop
	// bits, or written out when a rule changed it.
	md := &root.members[i].val
	s := jsonscan.Scanner{Data: o.st.p.data, Marks: o.st.p.marks, Stack: o.st.p.kinds}
	off, inDoc := o.st.p.offsetIn(md.raw)
	if md.obj != nil && md.obj.modified || !inDoc {
		// With the state's spare stop-bit memory (see subParser).
		s = jsonscan.Scanner{Marks: o.st.marks[:0]}
		s.Reset(o.rawOf(md))
		o.st.marks, off = s.Marks[:0], 0
	}
	var got apirules.Head
	if _, err := apirules.ScanMetadata(&s, off, 1+baseDepth, &got, true); err != nil {
		return err
	}
	h.Metadata, h.MetadataNotObject = got.Metadata, got.MetadataNotObject
	h.Name = copied(name, got.Name)
	h.Namespace = copied(ns, got.Namespace)
	h.UID = copied(uid, got.UID)
	h.Labels = copied(labels, got.Labels)
	h.Annotations = copied(ann, got.Annotations)
	return nil
}

// copied returns src copied into dst's memory; nil for nil.
func copied(dst, src []byte) []byte {
	if src == nil {
		return nil
	}
	if dst == nil {
		dst = make([]byte, 0, len(src))
	}
	return append(dst[:0], src...)
}

// offsetIn returns where b starts in the parser's document, if it is a
// part of it.
func (p *parser) offsetIn(b []byte) (int, bool) {
	if len(b) == 0 || len(p.data) == 0 {
		return 0, false
	}
	off := cap(p.data) - cap(b)
	if off < 0 || off+len(b) > len(p.data) || &p.data[off] != &b[0] {
		return 0, false
	}
	return off, true
}

// lastMember returns the index of the last live member k of o, or -1.
func lastMember(o *objNode, k string) int {
	last := -1
	for i := range o.members {
		m := &o.members[i]
		if !m.deleted && keyIs(m.rawKey, k) {
			last = i
		}
	}
	return last
}

// stringMember returns, copied into dst's memory, the decoded string of
// the last member k of o; nil when it is absent or not a string, never nil
// when it is one.
func stringMember(dst []byte, o *objNode, k string) []byte {
	i := lastMember(o, k)
	if i < 0 {
		return nil
	}
	v := o.members[i].val
	if v.obj != nil || v.kind() != '"' {
		return nil
	}
	if dst == nil {
		dst = make([]byte, 0, len(v.raw))
	}
	inner := v.raw[1 : len(v.raw)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return append(dst[:0], inner...)
	}
	return jsonscan.Unquote(dst[:0], inner)
}
