package sandbox

import "syscall"

// childAttr makes the kernel kill etcd and kube-apiserver when the process
// that started them dies (a test binary killed at its timeout, say), so
// that no sandbox outlives its owner.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
