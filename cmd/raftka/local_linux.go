package main

import "syscall"

// Children get their own process group, so a terminal's Ctrl-C reaches only
// the supervisor, and die with it if it is killed.
func localSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
