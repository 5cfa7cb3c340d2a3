package sandbox

import (
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/modfile"
)

// TestModuleStaysClean holds the third point: the main module does
// not require k8s.io/kubernetes, and the sandbox package links client-go,
// not the API server or etcd's server, which it runs as binaries.
func TestModuleStaysClean(t *testing.T) {
	gomod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	if regexp.MustCompile(`(?m)^\s*(require\s+)?k8s\.io/kubernetes\s`).Match(gomod) {
		t.Error("go.mod requires k8s.io/kubernetes: library users would need its replace directives")
	}
	if regexp.MustCompile(`(?m)^replace\b`).Match(gomod) {
		t.Error("go.mod has replace directives: they do not apply to library users")
	}
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, f := range []string{"k8s.io/kubernetes/", "k8s.io/apiserver/", "go.etcd.io/etcd/server/", "k8s.io/apiextensions-apiserver/pkg/apiserver/"} {
			if strings.HasPrefix(pkg+"/", f) {
				t.Errorf("package sandbox links %s", pkg)
			}
		}
	}
}

// TestAssetModuleMatchesClients: the kube-apiserver built is the release
// whose client libraries the main module uses, and its staging modules are
// pinned to the same tags.
func TestAssetModuleMatchesClients(t *testing.T) {
	gomod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	client := regexp.MustCompile(`(?m)^\s*k8s\.io/client-go (v\S+)`).FindSubmatch(gomod)
	if client == nil {
		t.Fatal("go.mod does not require k8s.io/client-go")
	}
	staging := "v0" + strings.TrimPrefix(KubernetesVersion, "v1")
	if string(client[1]) != staging {
		t.Errorf("main module uses k8s.io/client-go %s, the sandbox runs kube-apiserver %s (staging %s)", client[1], KubernetesVersion, staging)
	}
	mod, err := fs.ReadFile(assetSource, "_assets/go.mod.in")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^\s*k8s\.io/kubernetes ` + regexp.QuoteMeta(KubernetesVersion) + `$`).Match(mod) {
		t.Errorf("_assets/go.mod.in does not require k8s.io/kubernetes %s", KubernetesVersion)
	}
	replaces := regexp.MustCompile(`(?m)^\s*(k8s\.io/\S+) => (k8s\.io/\S+) (v\S+)$`).FindAllSubmatch(mod, -1)
	if len(replaces) < 20 {
		t.Errorf("_assets/go.mod.in pins %d staging modules, want every one k8s.io/kubernetes requires", len(replaces))
	}
	for _, r := range replaces {
		if string(r[1]) != string(r[2]) || string(r[3]) != staging {
			t.Errorf("_assets/go.mod.in: %s => %s %s, want %s => %s %s", r[1], r[2], r[3], r[1], r[1], staging)
		}
	}
}

// TestBuildsShareOneVersionOfEachModule: CI builds the main module, the
// sandbox's binaries (_assets) and helm (internal/helmbin), each from its
// own go.mod, into one build cache. A package is compiled once for all
// three only if its module, and every module below it, is at the same
// version in each: one differing golang.org/x/net recompiles nearly
// everything above it. Held here: every module two of them require is at
// one version (the newest), replace directives applied.
func TestBuildsShareOneVersionOfEachModule(t *testing.T) {
	files := []string{"../go.mod", "_assets/go.mod.in", "../internal/helmbin/_module/go.mod.in"}
	seen := map[string]map[string]string{} // module -> file -> version
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := modfile.Parse(name, data, nil)
		if err != nil {
			t.Fatal(err)
		}
		replaced := map[string]string{}
		for _, r := range f.Replace {
			replaced[r.Old.Path] = r.New.Version
		}
		for _, r := range f.Require {
			v := r.Mod.Version
			if to, ok := replaced[r.Mod.Path]; ok {
				v = to
			}
			if seen[r.Mod.Path] == nil {
				seen[r.Mod.Path] = map[string]string{}
			}
			seen[r.Mod.Path][name] = v
		}
	}
	shared := 0
	for mod, in := range seen {
		if len(in) < 2 {
			continue
		}
		shared++
		var first string
		for _, v := range in {
			if first == "" {
				first = v
			} else if v != first {
				t.Errorf("%s: %v: raise it to the newest in the others (go get %s@VERSION in each module; see the comment in _assets/go.mod.in)", mod, in, mod)
				break
			}
		}
	}
	if shared < 100 {
		t.Errorf("only %d modules required by two builds or more: were the files read?", shared)
	}
}

// TestAssetsDir: the environment variable wins; otherwise the directory is
// per version and per source.
func TestAssetsDir(t *testing.T) {
	t.Setenv(AssetsEnv, "")
	def, err := AssetsDir()
	if err != nil {
		t.Fatal(err)
	}
	if base := filepath.Base(def); base != KubernetesVersion+"-"+sourceHash() || len(sourceHash()) != 12 {
		t.Errorf("default assets directory %s, want .../%s-HASH", def, KubernetesVersion)
	}
	dir := t.TempDir()
	t.Setenv(AssetsEnv, dir)
	if got, err := AssetsDir(); err != nil || got != dir {
		t.Errorf("AssetsDir with %s=%s: %q, %v", AssetsEnv, dir, got, err)
	}
}

// TestEnsureAssetsWithoutGo: with nothing built and no go command, the
// error says what to do.
func TestEnsureAssetsWithoutGo(t *testing.T) {
	t.Setenv(AssetsEnv, t.TempDir())
	t.Setenv("PATH", t.TempDir())
	_, err := EnsureAssets(context.Background(), nil)
	if err == nil || !strings.Contains(err.Error(), "the go command, which is not on PATH") || !strings.Contains(err.Error(), AssetsEnv) {
		t.Errorf("EnsureAssets without go: %v", err)
	}
}

// TestWriteAssetSource: the module written for go build has a go.mod, not
// go.mod.in, next to go.sum and both main packages.
func TestWriteAssetSource(t *testing.T) {
	dir := t.TempDir()
	if err := writeAssetSource(dir); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"go.mod", "go.sum", "kube-apiserver/main.go", "etcd/main.go", "kube-controller-manager/main.go"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Error(err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod.in")); err == nil {
		t.Error("go.mod.in written as is")
	}
}

// TestLockFile: a second locker waits until the first releases, and gives
// up when its context ends.
func TestLockFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	unlock, err := lockFile(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := lockFile(ctx, path, nil); err == nil {
		t.Fatal("second lock taken while the first is held")
	}
	got := make(chan error, 1)
	go func() {
		unlock2, err := lockFile(context.Background(), path, nil)
		if err == nil {
			unlock2()
		}
		got <- err
	}()
	unlock()
	if err := <-got; err != nil {
		t.Errorf("lock after release: %v", err)
	}
}
