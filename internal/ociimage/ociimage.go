// Package ociimage builds the webhook's container image without a
// container daemon: the static binary on an empty base (as FROM scratch),
// an /etc/passwd naming the nonroot user 65532, run as that user, written
// as an OCI image layout directory that `crane push`, `skopeo copy
// oci:DIR docker://...` or `docker load` (after `crane` conversion) take.
//
// The Dockerfile at the repository's root builds the same image with a
// daemon; .ko.yaml builds it with ko.
package ociimage

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The user the image runs as: distroless's "nonroot".
const (
	UID        = 65532
	BinaryPath = "/hubspoke-webhook"
)

// Options describe the image.
type Options struct {
	Binary  string // path of the static linux binary (CGO_ENABLED=0)
	OS      string // "linux"
	Arch    string // GOARCH
	Version string // org.opencontainers.image.version label
	Source  string // org.opencontainers.image.source label
}

// Build writes the image as an OCI layout in dir (created if missing) and
// returns its digest.
func Build(dir string, o Options) (v1.Hash, error) {
	bin, err := os.ReadFile(o.Binary)
	if err != nil {
		return v1.Hash{}, fmt.Errorf("ociimage: %w", err)
	}
	layerTar, err := rootfs(bin)
	if err != nil {
		return v1.Hash{}, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(layerTar)), nil },
		tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return v1.Hash{}, fmt.Errorf("ociimage: layer: %w", err)
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{Layer: layer, History: v1.History{
		CreatedBy: "hubspoke-webhook static binary, /etc/passwd (nonroot 65532)",
		Created:   v1.Time{Time: time.Unix(0, 0).UTC()},
	}})
	if err != nil {
		return v1.Hash{}, fmt.Errorf("ociimage: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return v1.Hash{}, fmt.Errorf("ociimage: %w", err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = o.OS, o.Arch
	cf.Created = v1.Time{Time: time.Unix(0, 0).UTC()} // reproducible
	cf.Config.User = fmt.Sprintf("%d:%d", UID, UID)
	cf.Config.Entrypoint = []string{BinaryPath}
	cf.Config.Cmd = []string{"serve"}
	cf.Config.WorkingDir = "/"
	cf.Config.ExposedPorts = map[string]struct{}{"8443/tcp": {}}
	cf.Config.Labels = map[string]string{
		"org.opencontainers.image.title":   "hubspoke-webhook",
		"org.opencontainers.image.version": o.Version,
		"org.opencontainers.image.source":  o.Source,
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return v1.Hash{}, fmt.Errorf("ociimage: %w", err)
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return v1.Hash{}, fmt.Errorf("ociimage: %w", err)
	}
	if err := p.AppendImage(img, layout.WithPlatform(v1.Platform{OS: o.OS, Architecture: o.Arch})); err != nil {
		return v1.Hash{}, fmt.Errorf("ociimage: %w", err)
	}
	return img.Digest()
}

// rootfs is the image's one layer: the binary, and /etc/passwd and
// /etc/group naming the nonroot user, with fixed times.
func rootfs(bin []byte) ([]byte, error) {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	mtime := time.Unix(0, 0).UTC()
	files := []struct {
		name string
		mode int64
		data []byte
	}{
		{"etc/group", 0o644, []byte(fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", UID))},
		{"etc/passwd", 0o644, []byte(fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", UID, UID))},
		{BinaryPath[1:], 0o755, bin},
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: "etc/", Mode: 0o755, ModTime: mtime}); err != nil {
		return nil, err
	}
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.name, Mode: f.mode, Size: int64(len(f.data)), ModTime: mtime}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
