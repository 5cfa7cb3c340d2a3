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
	if err := st.obj.head(h, nil, nil); err != nil {
		return dst, &Error{Index: -1, To: to, Err: err}
	}
	return out, nil
}

// ConvertAt is ConvertHead for an object inside a larger document, such as
// the body of a ConversionReview: s holds the document and its stop bits
// (s.Reset), and the object's value starts at s.Data[i]. It validates and
// converts the object in one pass over its bytes, without copying it or
// computing its stop bits again, and returns the extended dst and the
// offset just after the object. Nesting counts from a review's envelope,
// as for Convert.
//
// It fills in with the head of the object as read (the API server's view:
// the last of duplicate keys) and out with the head of the object it
// wrote, both for package apirules' CheckHead. Metadata's head is read
// while metadata is validated; when no rule changed metadata, out's
// metadata fields are in's. in's and out's fields may point into s.Data
// and into each other; they are valid while s.Data is. out reuses the
// memory of its apiVersion and kind. On an error (whose byte offsets are
// offsets in s.Data) dst comes back as it was and in and out hold nothing
// useful. s is only read; it may be shared by sequential calls. Its
// scanner type is internal: ConvertAt is for hubspoke's own packages (the
// webhook's handler, package review).
func (c *Converter) ConvertAt(dst []byte, s *jsonscan.Scanner, i int, to string, in, out *apirules.Head) ([]byte, int, error) {
	st := getState()
	own := st.p.marks
	defer func() {
		st.p.marks, st.p.meta = own, nil // s's marks are the caller's
		putState(st)
	}()
	p := &st.p
	p.data, p.pos, p.depth, p.marks = s.Data, i, baseDepth, s.Marks
	p.fused, p.fusedDone, p.fusedChanged = nil, 0, 0 // no renames in the scan (see fusedList)
	*in = apirules.Head{}
	p.head, p.meta = in, nil
	root, err := p.value(c.trie)
	p.head = nil
	end := p.pos
	if err != nil {
		return dst, end, &Error{Index: -1, To: to, Err: err}
	}
	if root.obj != nil {
		av, kind, k := headMembers(root.obj)
		in.APIVersion = stringAt(root.obj, av)
		in.Kind = stringAt(root.obj, kind)
		if k >= 0 && p.meta == nil {
			// Metadata is on the trie (a rule reads annotations), so the
			// scan expanded it instead of reading its head: read the head
			// from its bytes, already validated.
			p.meta = root.obj.members[k].val.raw
			off, _ := p.offsetIn(p.meta)
			ms := p.scanner()
			_, err := apirules.ScanMetadata(&ms, off, 1+baseDepth, in, true)
			p.done(&ms)
			if err != nil {
				return dst, end, &Error{Index: -1, To: to, Err: err}
			}
		}
	}
	res, err := c.convertTree(st, root, dst, s.Data[i:end], to)
	if err != nil {
		return dst, end, err
	}
	if err := st.obj.head(out, in, p.meta); err != nil {
		return dst, end, &Error{Index: -1, To: to, Err: err}
	}
	return res, end, nil
}

// stringAt returns the decoded string of the member i of o, a part of
// o's bytes when it holds no escape; nil when i is -1 or the value is not
// a string, never nil when it is one.
func stringAt(o *objNode, i int) []byte {
	if i < 0 {
		return nil
	}
	v := o.members[i].val
	if v.obj != nil || v.kind() != '"' {
		return nil
	}
	inner := v.raw[1 : len(v.raw)-1 : len(v.raw)-1]
	if bytes.IndexByte(inner, '\\') >= 0 {
		return jsonscan.Unquote(make([]byte, 0, len(inner)), inner)
	}
	return inner
}

// head fills h from the converted object. When in is not nil it is the
// head of the object as read, whose metadata was read from the bytes
// inMeta: if the converted object's metadata is still those bytes, h's
// metadata fields are in's.
func (o *Object) head(h, in *apirules.Head, inMeta []byte) error {
	root := o.root.obj
	av, kind, i := headMembers(root)
	h.APIVersion = stringMember(h.APIVersion, root, av)
	h.Kind = stringMember(h.Kind, root, kind)
	name, ns, uid, labels, ann := h.Name, h.Namespace, h.UID, h.Labels, h.Annotations
	h.Metadata, h.MetadataNotObject = false, false
	h.Name, h.Namespace, h.UID, h.Labels, h.Annotations = nil, nil, nil, nil, nil
	if i < 0 {
		return nil
	}
	md := &root.members[i].val
	if in != nil && (md.obj == nil || !md.obj.modified) && sameBytes(md.raw, inMeta) {
		h.Metadata, h.MetadataNotObject = in.Metadata, in.MetadataNotObject
		h.Name, h.Namespace, h.UID, h.Labels, h.Annotations = in.Name, in.Namespace, in.UID, in.Labels, in.Annotations
		return nil
	}
	// The metadata's bytes: a part of the original, scanned with its stop
	// bits, or written out when a rule changed it.
	s := jsonscan.Scanner{Data: o.st.p.data, Marks: o.st.p.marks, Stack: o.st.p.kinds}
	off, inDoc := o.st.p.offsetIn(md.raw)
	fromDoc := !(md.obj != nil && md.obj.modified || !inDoc)
	if !fromDoc {
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
	if in != nil {
		// ConvertAt: h's metadata fields may point into the document, so
		// their memory is not reused; bytes of the document need no copy.
		if fromDoc {
			h.Name, h.Namespace, h.UID, h.Labels, h.Annotations = got.Name, got.Namespace, got.UID, got.Labels, got.Annotations
			return nil
		}
		name, ns, uid, labels, ann = nil, nil, nil, nil, nil
	}
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

// sameBytes reports whether a and b are the same non-empty memory.
func sameBytes(a, b []byte) bool {
	return len(a) > 0 && len(a) == len(b) && &a[0] == &b[0]
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

// headMembers returns the indexes of the last live members apiVersion,
// kind and metadata of o, -1 for those absent, in one pass.
func headMembers(o *objNode) (av, kind, md int) {
	av, kind, md = -1, -1, -1
	for i := range o.members {
		m := &o.members[i]
		if m.deleted {
			continue
		}
		k := m.rawKey[1 : len(m.rawKey)-1]
		if !m.plain {
			k = []byte(decodeKey(m.rawKey))
		}
		switch string(k) {
		case "apiVersion":
			av = i
		case "kind":
			kind = i
		case "metadata":
			md = i
		}
	}
	return av, kind, md
}

// lastMember returns the index of the last live member k of o, or -1.
func lastMember(o *objNode, k string) int {
	last := -1
	for i := range o.members {
		m := &o.members[i]
		if m.deleted {
			continue
		}
		if m.plain {
			if len(m.rawKey) == len(k)+2 && string(m.rawKey[1:len(m.rawKey)-1]) == k {
				last = i
			}
		} else if keyIs(m.rawKey, k) {
			last = i
		}
	}
	return last
}

// stringMember returns, copied into dst's memory, the decoded string of
// the member i of o; nil when i is -1 or the value is not a string, never
// nil when it is one.
func stringMember(dst []byte, o *objNode, i int) []byte {
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
