//go:build !linux

package sandbox

import "syscall"

// childAttr: without Linux's parent-death signal, a sandbox whose owner is
// killed leaves etcd and kube-apiserver running until they are stopped.
func childAttr() *syscall.SysProcAttr { return nil }
