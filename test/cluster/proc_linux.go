package cluster

import "syscall"

// sysProcAttr puts the node in its own process group (so cleanup can kill
// it and anything it spawned by group id) and asks the kernel to SIGKILL it
// when the thread that started it dies. Go never retires the threads of
// goroutines that did not lock them, so in practice that is when the test
// binary dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
