package convert

import (
	"bytes"

	"github.com/hubspoke/hubspoke/apirules"
	"github.com/hubspoke/hubspoke/internal/jsonscan"
)

// headKeys are the members of an object the API server compares or takes
// from a conversion webhook's answer. They are on every converter's trie:
// an object holding one twice is refused (the engine and the API server
// would read different copies), and ConvertHead reads them from the
// converted tree.
var headKeys = [][]string{
	{"apiVersion"}, {"kind"}, {"metadata"},
	{"metadata", "name"}, {"metadata", "namespace"}, {"metadata", "uid"},
	{"metadata", "labels"}, {"metadata", "annotations"},
}

// ConvertHead is Convert that also fills h with the head (apirules.Head)
// of the object it writes, read from the converted object as it is
// written, so that a caller checking the answer against package apirules
// (the webhook's self-check) need not scan the output again. h's fields
// are copied into their own memory, reusing its capacity: reuse one Head
// for many calls and the steady state allocates nothing. On an error h is
// left as it was.
func (c *Converter) ConvertHead(dst, obj []byte, to string, h *apirules.Head) ([]byte, error) {
	st := getState()
	defer putState(st)
	out, err := c.convert(st, dst, obj, to)
	if err != nil {
		return dst, err
	}
	st.obj.head(h)
	return out, nil
}

// head fills h from the converted tree.
func (o *Object) head(h *apirules.Head) {
	root := o.root.obj
	h.APIVersion = stringMember(h.APIVersion, root, "apiVersion")
	h.Kind = stringMember(h.Kind, root, "kind")
	h.Metadata, h.MetadataNotObject = false, false
	name, ns, uid, labels, ann := h.Name, h.Namespace, h.UID, h.Labels, h.Annotations
	h.Name, h.Namespace, h.UID, h.Labels, h.Annotations = nil, nil, nil, nil, nil
	i := root.find("metadata")
	if i < 0 {
		return
	}
	md := &root.members[i].val
	switch {
	case md.isNull():
		return
	case md.obj == nil:
		h.Metadata, h.MetadataNotObject = true, true
		return
	}
	h.Metadata = true
	h.Name = stringMember(name, md.obj, "name")
	h.Namespace = stringMember(ns, md.obj, "namespace")
	h.UID = stringMember(uid, md.obj, "uid")
	raw := func(dst []byte, k string) []byte {
		j := md.obj.find(k)
		if j < 0 {
			return nil
		}
		v := o.rawOf(&md.obj.members[j].val)
		if string(v) == "null" {
			return nil
		}
		return append(dst[:0], v...)
	}
	h.Labels = raw(labels, "labels")
	h.Annotations = raw(ann, "annotations")
}

// stringMember returns, copied into dst's memory, the decoded string of
// member k of o; nil when it is absent or not a string, never nil when it
// is one.
func stringMember(dst []byte, o *objNode, k string) []byte {
	i := o.find(k)
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
