package sandbox

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
)

// dataDirPattern names the data directories of sandboxes (os.MkdirTemp's
// pattern).
const dataDirPattern = "hubspoke-sandbox-*"

// ownerFile is the file in a data directory that names the process that
// owns it. Stop removes the directory; a process killed before it could
// stop leaves it, and the next New in the same directory removes it once
// the file proves the owner dead.
const ownerFile = "owner.json"

// owner identifies a process across PID reuse and PID namespaces (see
// ownerDead).
type owner struct {
	PID int `json:"pid"`
	// Start is when the process started, as the system counts it (on
	// Linux, field 22 of /proc/PID/stat, clock ticks since boot).
	Start string `json:"start,omitempty"`
	// Boot identifies the system's boot (on Linux, its boot_id).
	Boot string `json:"boot,omitempty"`
	// PIDNamespace identifies the namespace PID is counted in.
	PIDNamespace string `json:"pidNamespace,omitempty"`
}

// newDataDir creates a data directory in tempDir (os.TempDir() if empty)
// and writes its owner file, naming this process.
func newDataDir(tempDir string) (string, error) {
	dir, err := os.MkdirTemp(tempDir, dataDirPattern)
	if err != nil {
		return "", fmt.Errorf("sandbox: create data directory: %w", err)
	}
	data, err := json.Marshal(self())
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, ownerFile), append(data, '\n'), 0o600)
	}
	if err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("sandbox: create data directory: %w", err)
	}
	return dir, nil
}

// removeDeadDataDirs removes the data directories in tempDir (os.TempDir()
// if empty) whose owner file proves their process dead: this user's,
// written by a process of this system's current boot and PID namespace
// that no longer runs. A directory without an owner file, or whose owner
// cannot be proved dead, is left alone. Failures are logged, not returned:
// a start does not depend on them.
func removeDeadDataDirs(tempDir string, log *slog.Logger) {
	if tempDir == "" {
		tempDir = os.TempDir()
	}
	dirs, _ := filepath.Glob(filepath.Join(tempDir, dataDirPattern))
	for _, dir := range dirs {
		if !ownedDir(dir) {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err != nil {
			continue
		}
		var o owner
		if err := json.Unmarshal(data, &o); err != nil || o.PID <= 0 || !ownerDead(o) {
			continue
		}
		// The egress proxy's socket may live in a directory of its own
		// (see socketPath), linked from the data directory.
		if short, err := os.Readlink(filepath.Join(dir, "egress-dir")); err == nil &&
			filepath.Dir(short) == filepath.Clean(os.TempDir()) && strings.HasPrefix(filepath.Base(short), "hs-") && ownedDir(short) {
			if err := os.RemoveAll(short); err != nil {
				log.Debug("sandbox: remove a dead sandbox's socket directory", "dir", short, "err", err)
			}
		}
		if err := os.RemoveAll(dir); err != nil {
			log.Debug("sandbox: remove a dead sandbox's data directory", "dir", dir, "err", err)
			continue
		}
		log.Debug("sandbox: removed the data directory of a sandbox whose process died", "dir", dir, "pid", o.PID)
	}
}

// ownedDir reports whether path is a directory (not a symbolic link) of
// this user.
func ownedDir(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && fi.IsDir() && ownedByMe(fi)
}
