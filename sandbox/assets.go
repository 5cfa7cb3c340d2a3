package sandbox

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// KubernetesVersion is the release of kube-apiserver (and
// kube-controller-manager) a sandbox runs: the one whose client libraries
// (k8s.io/client-go v0.37.x) hubspoke uses.
const KubernetesVersion = "v1.37.2"

// AssetsEnv names the environment variable that chooses the directory
// holding the kube-apiserver, etcd and kube-controller-manager binaries.
// When it is set and the binaries are there (envtest's KUBEBUILDER_ASSETS
// directory will do for kube-apiserver and etcd), they are used as they
// are; those missing are built there.
// When it is unset the directory is a per-version directory under the
// user's cache directory (see [AssetsDir]).
const AssetsEnv = "HUBSPOKE_SANDBOX_ASSETS"

// The binaries in an assets directory, named as envtest names them.
const (
	KubeAPIServerBinary         = "kube-apiserver"
	EtcdBinary                  = "etcd"
	KubeControllerManagerBinary = "kube-controller-manager"
	KubectlBinary               = "kubectl"
)

// binaries are the binaries the asset module builds, in the order they are
// named and moved into place.
var binaries = []string{KubeAPIServerBinary, EtcdBinary, KubeControllerManagerBinary}

// assetSource is the Go module the binaries are built from. Its
// go.mod is stored as go.mod.in: a go.mod would make the directory another
// module, which go:embed refuses, and the directory's name keeps its
// main packages out of ./... of this module.
//
//go:embed _assets
var assetSource embed.FS

// buildLDFlags stamp the version kube-apiserver reports at /version, as the
// release build does, so that kubectl version and client-go discovery parse
// it. They are the only flags besides the caller's -trimpath
// (embedmod.Env): linker flags do not change a compiled package, so the
// packages the binaries share with the user's own builds (client-go,
// apimachinery, the API server's libraries) come from the build cache, as
// go build and go test compile them. (A -trimpath that differs from the
// user's changes every package's build: a cold build compiled them twice.)
var buildLDFlags = strings.Join([]string{
	"-s", "-w",
	"-X k8s.io/component-base/version.gitVersion=" + KubernetesVersion,
	"-X k8s.io/component-base/version.gitMajor=1",
	"-X k8s.io/component-base/version.gitMinor=37",
	"-X k8s.io/component-base/version.gitTreeState=clean",
}, " ")

// AssetsDir returns the directory that holds (or will hold, once
// [EnsureAssets] built them) the sandbox's binaries: the
// value of HUBSPOKE_SANDBOX_ASSETS if set, else
// USER_CACHE_DIR/hubspoke/sandbox/KUBERNETES_VERSION-HASH, where HASH
// covers the module the binaries are built from and how, so that a
// hubspoke release that changes either builds afresh.
func AssetsDir() (string, error) {
	if dir := os.Getenv(AssetsEnv); dir != "" {
		return filepath.Abs(dir)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("sandbox: assets directory: %w (set %s)", err, AssetsEnv)
	}
	return filepath.Join(cache, "hubspoke", "sandbox", KubernetesVersion+"-"+sourceHash()), nil
}

// sourceHash is a short digest of the embedded module and the build flags.
func sourceHash() string {
	h := sha256.New()
	_ = fs.WalkDir(assetSource, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := assetSource.ReadFile(path)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s %d\n", path, len(data))
		h.Write(data)
		return nil
	})
	io.WriteString(h, buildLDFlags)
	return hex.EncodeToString(h.Sum(nil))[:12]
}

// missingAssets returns those of names that dir does not hold as
// executable files.
func missingAssets(dir string, names []string) []string {
	var missing []string
	for _, name := range names {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
			missing = append(missing, name)
		}
	}
	return missing
}

// EnsureAssets returns [AssetsDir] once it holds kube-apiserver, etcd and
// kube-controller-manager, building those missing first: go build of a
// small module the
// sandbox package carries, requiring k8s.io/kubernetes at
// [KubernetesVersion], with the go command on PATH, the Go module proxy and
// the user's build cache. A build from an empty cache takes several
// minutes (8 to 9 on two idle cores, of which kube-controller-manager's own
// packages take about two and a half; 15 to 30 on a loaded machine); later
// calls return at once. If progress is not nil, EnsureAssets reports there what
// it builds and how far it got, with the time elapsed: on a terminal one
// line rewritten every second, else a line at each step and every 30
// seconds.
//
// ctx stops the build when cancelled, and when its deadline passes: give
// it none that is meant for something shorter (New gives the build no
// deadline).
//
// Concurrent calls, from this process or others (go test runs packages in
// parallel), build once: a lock file serialises them, and the binaries
// appear in the directory only when complete. If kubectl is on PATH, the
// directory also gets a kubectl symlink to it, so that it serves as
// envtest's KUBEBUILDER_ASSETS.
func EnsureAssets(ctx context.Context, progress io.Writer) (string, error) {
	return ensureAssets(ctx, progress, false, binaries)
}

// ensureAssets is EnsureAssets for the binaries names; hint says how to
// build ahead of time if a build is needed.
func ensureAssets(ctx context.Context, progress io.Writer, hint bool, names []string) (string, error) {
	dir, err := AssetsDir()
	if err != nil {
		return "", err
	}
	if len(missingAssets(dir, names)) > 0 {
		if err := buildAssets(ctx, dir, progress, hint, names); err != nil {
			return "", err
		}
	}
	linkKubectl(dir)
	return dir, nil
}

// writeAssetSource writes the embedded module to dir, go.mod.in as go.mod.
func writeAssetSource(dir string) error {
	root, err := fs.Sub(assetSource, "_assets")
	if err != nil {
		return err
	}
	err = fs.WalkDir(root, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		target := filepath.Join(dir, filepath.FromSlash(path))
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := fs.ReadFile(root, path)
		if err != nil {
			return err
		}
		if path == "go.mod.in" {
			target = filepath.Join(dir, "go.mod")
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		return fmt.Errorf("sandbox: assets: write module: %w", err)
	}
	return nil
}

// linkKubectl makes dir/kubectl a symlink to the kubectl on PATH, if there
// is one and dir has no kubectl yet. It is a convenience for envtest, which
// looks for kubectl next to kube-apiserver: failing to make it is no error.
func linkKubectl(dir string) {
	link := filepath.Join(dir, KubectlBinary)
	if _, err := os.Lstat(link); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return
	}
	path, err := exec.LookPath(KubectlBinary)
	if err != nil {
		return
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	tmp := link + ".tmp-" + sourceHash()
	os.Remove(tmp)
	if err := os.Symlink(path, tmp); err != nil {
		return
	}
	if err := os.Rename(tmp, link); err != nil {
		os.Remove(tmp)
	}
}
