//go:build unix && !linux

package cluster

import "syscall"

// sysProcAttr: without Pdeathsig, a node outlives a test binary killed
// hard; cleanup still kills its process group on every normal exit.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
