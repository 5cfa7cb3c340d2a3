package convert

import "fmt"

type renameRule struct{ from, to Path }

// Rename moves the spoke field from to the hub field to (any path, nested,
// into or out of objects). Its inverse moves it back. A missing field stays
// missing; null and zero values move unchanged. If both paths are set, the
// conversion fails rather than overwrite one with the other.
func Rename(from, to Path) (Rule, error) {
	f, t, err := checkPair("rename", from, to)
	if err != nil {
		return nil, err
	}
	if from.Equal(to) {
		return nil, fmt.Errorf("rename: from and to are both %s", from)
	}
	return scoped(&renameRule{from: f, to: t}, from), nil
}

func (r *renameRule) String() string          { return fmt.Sprintf("rename %s -> %s", r.from, r.to) }
func (r *renameRule) paths() []Path           { return []Path{r.from, r.to} }
func (r *renameRule) ToHub(o *Object) error   { return move(o, r, r.from, r.to, nil) }
func (r *renameRule) FromHub(o *Object) error { return move(o, r, r.to, r.from, nil) }
