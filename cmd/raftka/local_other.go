//go:build !linux

package main

import "syscall"

func localSysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
