// Package embedmod holds the one rule for running the go command on a
// module hubspoke carries embedded and builds on the user's machine (the
// sandbox's kube-apiserver, etcd and kube-controller-manager; helm for the
// tests): the environment the go command gets.
package embedmod

import (
	"os"
	"slices"
	"strings"
)

// Env is the environment for a go command building an embedded module:
// this process's, with GOWORK=off (the user's workspace is not ours) and
// GOFLAGS set to -mod=readonly (the embedded go.sum verifies every module;
// nothing may change go.mod). Of the caller's GOFLAGS, only -trimpath is
// kept: it changes how every package compiles, so the build shares the
// build cache with the caller's own builds (client-go, apimachinery, the
// API server's libraries) only when it matches theirs. Other flags
// (-mod=vendor, tags) are for the caller's module and may break this one.
func Env() []string {
	flags := "-mod=readonly"
	if slices.Contains(strings.Fields(os.Getenv("GOFLAGS")), "-trimpath") {
		flags += " -trimpath"
	}
	return append(os.Environ(), "GOFLAGS="+flags, "GOWORK=off")
}
