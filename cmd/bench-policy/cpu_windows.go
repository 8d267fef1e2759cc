//go:build windows

package main

import (
	"syscall"
	"time"
)

// selfCPU is this process's user + system CPU time (-1 when unknown).
func selfCPU() time.Duration {
	h, err := syscall.GetCurrentProcess()
	if err != nil {
		return -1
	}
	var creation, exit, kernel, user syscall.Filetime
	if err := syscall.GetProcessTimes(h, &creation, &exit, &kernel, &user); err != nil {
		return -1
	}
	return filetimeDuration(kernel) + filetimeDuration(user)
}

// filetimeDuration reads a FILETIME holding a duration (100 ns units).
func filetimeDuration(f syscall.Filetime) time.Duration {
	return time.Duration(int64(f.HighDateTime)<<32|int64(f.LowDateTime)) * 100
}
