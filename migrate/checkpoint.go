package migrate

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Checkpoint is the progress of a run, saved after every page. A run
// resumes from it only when the CRD is as it was when the first run began
// (same uid, storage version and generation: a spec unchanged; its status
// may have changed); otherwise it starts over, since the earlier writes may
// have gone to another storage version.
type Checkpoint struct {
	CRD                string `json:"crd"`
	Namespace          string `json:"namespace,omitempty"`
	LabelSelector      string `json:"labelSelector,omitempty"`
	UID                string `json:"uid"`
	StorageVersion     string `json:"storageVersion"`
	CRDResourceVersion string `json:"crdResourceVersion"`
	CRDGeneration      int64  `json:"crdGeneration"`
	// Continue is the LIST continue token after the last completed page;
	// LastKey the namespace/name of its last object. When the token has
	// expired, the run lists from the start and skips keys up to LastKey.
	Continue string `json:"continue,omitempty"`
	LastKey  string `json:"lastKey,omitempty"`
	// Done counts the objects handled so far.
	Done int `json:"done"`
	// Complete is set once every object was rewritten.
	Complete bool `json:"complete"`
}

// LoadCheckpoint reads the checkpoint at path; it returns nil, nil when the
// file does not exist.
func LoadCheckpoint(path string) (*Checkpoint, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read checkpoint: %w", err)
	}
	var cp Checkpoint
	if err := json.Unmarshal(data, &cp); err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	return &cp, nil
}

// Save writes the checkpoint to path atomically (a temporary file renamed).
func (cp *Checkpoint) Save(path string) error {
	data, err := json.MarshalIndent(cp, "", "  ")
	if err != nil {
		return fmt.Errorf("encode checkpoint: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("write checkpoint: %w", err)
	}
	_, werr := tmp.Write(append(data, '\n'))
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write checkpoint %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write checkpoint: %w", err)
	}
	return nil
}

// checkWritable tells whether Save can write path: a file can be created
// in its directory (Save writes a temporary file there, then renames it)
// and path is not a directory.
func checkWritable(path string) error {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("checkpoint %s is a directory", path)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("checkpoint %s cannot be written: %w", path, err)
	}
	name := tmp.Name()
	cerr := tmp.Close()
	rerr := os.Remove(name)
	if err := errors.Join(cerr, rerr); err != nil {
		return fmt.Errorf("checkpoint %s cannot be written: %w", path, err)
	}
	return nil
}

func removeCheckpoint(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove checkpoint: %w", err)
	}
	return nil
}

func isGoneOrExpired(err error) bool {
	return apierrors.IsResourceExpired(err) || apierrors.IsGone(err)
}
