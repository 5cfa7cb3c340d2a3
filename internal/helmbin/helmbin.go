// Package helmbin builds the helm binary that test/e2e renders the chart
// charts/hubspoke with: go build of helm.sh/helm/v4/cmd/helm from a small
// module of its own (_module: go.mod.in and go.sum, which verifies every
// module), with the go command on PATH, the Go module proxy and the user's
// build cache, into USER_CACHE_DIR/hubspoke/helm/VERSION-HASH, once. The
// main module never requires helm, so no unit package compiles it.
package helmbin

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/hubspoke/hubspoke/internal/embedmod"
)

// Version is the helm release built.
const Version = "v4.3.2"

//go:embed _module
var source embed.FS

// Path returns the helm binary, building it first if it is missing. A
// build from an empty Go build cache takes minutes; progress, when not
// nil, is told before it starts.
func Path(ctx context.Context, progress io.Writer) (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("helm: %w", err)
	}
	dir := filepath.Join(cache, "hubspoke", "helm", Version+"-"+sourceHash())
	bin := filepath.Join(dir, "helm")
	if fi, err := os.Stat(bin); err == nil && fi.Mode().IsRegular() {
		return bin, nil
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("helm %s is not built in %s and building it needs the go command: %w", Version, dir, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("helm: %w", err)
	}
	if progress != nil {
		fmt.Fprintf(progress, "building helm %s into %s (once)\n", Version, dir)
	}
	tmp, err := os.MkdirTemp(dir, ".build-")
	if err != nil {
		return "", fmt.Errorf("helm: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := writeSource(tmp); err != nil {
		return "", err
	}
	out := filepath.Join(tmp, "helm")
	// -trimpath only as the caller builds (embedmod.Env): the build cache
	// entries of the Kubernetes libraries, at the main module's versions,
	// are then the ones go test made.
	cmd := exec.CommandContext(ctx, goCmd, "build", "-ldflags", "-s -w", "-o", out, "helm.sh/helm/v4/cmd/helm")
	cmd.Dir = tmp
	cmd.Env = embedmod.Env()
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("build helm %s: %w\n%s", Version, err, strings.TrimSpace(log.String()))
	}
	// Concurrent builders each rename a complete binary into place.
	if err := os.Rename(out, bin); err != nil {
		return "", fmt.Errorf("helm: %w", err)
	}
	return bin, nil
}

func sourceHash() string {
	h := sha256.New()
	_ = fs.WalkDir(source, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := source.ReadFile(path)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s %d\n", path, len(data))
		h.Write(data)
		return nil
	})
	return hex.EncodeToString(h.Sum(nil))[:12]
}

func writeSource(dir string) error {
	for _, f := range []string{"go.mod.in", "go.sum"} {
		data, err := source.ReadFile("_module/" + f)
		if err != nil {
			return fmt.Errorf("helm: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dir, strings.TrimSuffix(f, ".in")), data, 0o644); err != nil {
			return fmt.Errorf("helm: %w", err)
		}
	}
	return nil
}
