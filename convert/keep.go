package convert

// The preserved annotation for Go funcs: the same store, keyed the same
// way, that hubOnly, spokeOnly, duration and cel use. A step converts from
// one version to another (FromVersion, ToVersion); what the from version
// cannot leave in the object is kept under its name, and taken back by the
// step that converts to it again.

// Keep stores raw (valid JSON), the value of field p that the target
// version cannot hold, in the preserved annotation. It is owned by the
// version the object is converted from, and Restore in the step that
// converts back to that version returns it.
func (o *Object) Keep(p Path, raw []byte) error {
	if err := plainOnly(p); err != nil {
		return err
	}
	if err := o.checkJSON(p, raw); err != nil {
		return err
	}
	return o.keepField(o.from, p, raw)
}

// Restore removes and returns the value of field p that the version the
// object is converted to kept with Keep when the object left it, and
// whether there was one. Restore before writing the field: a value the
// object already holds there (an edit made through the other version)
// should win over the kept one, as it does for hubOnly and spokeOnly.
func (o *Object) Restore(p Path) ([]byte, bool, error) {
	if err := plainOnly(p); err != nil {
		return nil, false, err
	}
	return o.takeField(o.to, p)
}

// KeepExact records that field p, converted to as (JSON) in the target
// version, was exactly raw (JSON) in the version the object is converted
// from: a value the conversion could only approximate (rounded, re-spelled).
func (o *Object) KeepExact(p Path, raw, as []byte) error {
	if err := plainOnly(p); err != nil {
		return err
	}
	if err := o.checkJSON(p, raw); err != nil {
		return err
	}
	if err := o.checkJSON(p, as); err != nil {
		return err
	}
	return o.keepExact(o.from, p, raw, as)
}

// RestoreExact removes the exact value the version the object is converted
// to kept for field p with KeepExact, and returns it if the field was
// converted to as and has not changed since (else an edit made through the
// other version wins and ok is false).
func (o *Object) RestoreExact(p Path, as []byte) (raw []byte, ok bool, err error) {
	if err := plainOnly(p); err != nil {
		return nil, false, err
	}
	return o.takeExact(o.to, p, as)
}

func (o *Object) checkJSON(p Path, raw []byte) error {
	sp := o.st.subParser(raw)
	_, err := sp.parseDocument(nil)
	o.st.done(&sp)
	if err != nil {
		return &Error{Index: -1, Pointer: p.Pointer(), Err: err}
	}
	return nil
}

// CheckRulePath reports why a rule may not name p, or nil: a rule cannot
// name the whole object, apiVersion or kind (the engine sets them), nor
// anything in metadata (the API server restores it from the original
// object). The rule loader applies it to the fields a funcs rule declares.
func CheckRulePath(p Path) error { return checkRulePath(p) }
