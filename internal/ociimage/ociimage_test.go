package ociimage_test

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/v1/layout"

	"github.com/hubspoke/hubspoke/internal/ociimage"
)

// TestBuild builds cmd/hubspoke-webhook static, as the Dockerfile does
// (but without -trimpath, which changes nothing checked here and would
// compile every package a second time), makes the image without a daemon, reads it back from the
// OCI layout and checks what a cluster relies on: a non-root user, the
// entrypoint, a static binary that runs.
func TestBuild(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the image holds a linux binary; this test runs it") // CI runs linux
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "hubspoke-webhook")
	build := exec.Command("go", "build", "-ldflags=-s -w", "-o", bin, "../../cmd/hubspoke-webhook")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out := filepath.Join(dir, "oci")
	digest, err := ociimage.Build(out, ociimage.Options{Binary: bin, OS: "linux", Arch: runtime.GOARCH,
		Version: "test", Source: "https://github.com/hubspoke/hubspoke"})
	if err != nil {
		t.Fatal(err)
	}

	p, err := layout.FromPath(out)
	if err != nil {
		t.Fatal(err)
	}
	img, err := p.Image(digest)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Config.User != "65532:65532" {
		t.Errorf("user %q, want 65532:65532 (nonroot)", cf.Config.User)
	}
	if diff := cmp.Diff([]string{"/hubspoke-webhook"}, cf.Config.Entrypoint); diff != "" {
		t.Errorf("entrypoint (-want +got):\n%s", diff)
	}
	if cf.OS != "linux" || cf.Architecture != runtime.GOARCH {
		t.Errorf("platform %s/%s", cf.OS, cf.Architecture)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers: %d, %v; want one (no base image)", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	files := map[string][]byte{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		files[h.Name] = b
	}
	if !strings.Contains(string(files["etc/passwd"]), "nonroot:x:65532:65532:") {
		t.Errorf("/etc/passwd: %q", files["etc/passwd"])
	}
	binary := files["hubspoke-webhook"]
	f, err := elf.NewFile(bytes.NewReader(binary))
	if err != nil {
		t.Fatalf("the image's binary: %v", err)
	}
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP || prog.Type == elf.PT_DYNAMIC {
			t.Errorf("the binary is dynamically linked (%v): it would not run on an empty base", prog.Type)
		}
	}
	// The binary from the image runs.
	extracted := filepath.Join(dir, "from-image")
	if err := os.WriteFile(extracted, binary, 0o755); err != nil {
		t.Fatal(err)
	}
	v, err := exec.Command(extracted, "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(v), "hubspoke") {
		t.Errorf("hubspoke-webhook version: %v: %s", err, v)
	}
	size, _ := img.Size()
	t.Logf("image %s: manifest %d bytes, binary %.1f MB", digest, size, float64(len(binary))/1e6)

	// Reproducible: the same binary gives the same digest.
	again, err := ociimage.Build(filepath.Join(dir, "oci2"), ociimage.Options{Binary: bin, OS: "linux", Arch: runtime.GOARCH,
		Version: "test", Source: "https://github.com/hubspoke/hubspoke"})
	if err != nil || again != digest {
		t.Errorf("second build: %v, %v; want the same digest %v", again, err, digest)
	}
}
