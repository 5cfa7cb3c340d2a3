// Package examples embeds the example CRDs, rule files and objects, so the
// demo and tests can use them from any working directory.
package examples

import "embed"

// FS holds every example's crd.yaml, conversion.yaml and sample objects.
//
//go:embed widget/*.yaml evolving-widget/*.yaml evolving-widget/objects/*.yaml fleet/*.yaml fleet/objects/*.yaml
var FS embed.FS
